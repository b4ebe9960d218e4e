#!/usr/bin/env node
// `npm start`: the shipped family pair's bench, then the same target's widened twin beside it.
//
// 1. `specgate bench` on models/ (target-only, greedy, strict, fuzzy, calibrated at γ = 1 and 4, and
//    node-llama-cpp's predictor): the speed of a 1.1M-parameter target, which costs little more per
//    token than its draft, so speculation has little to win.
// 2. The family target's twin at d768×8 (0.06B parameters, F16; `specgate fixtures --widen-from`),
//    written once into .specgate/twin-0.1b/ (114 MB, a few seconds), benched target-only against
//    strict γ = 4 with the same family draft at 2 threads: the same text and acceptance at the cost of a model
//    50× larger — the regime speculation is for. A twin is a cost model, not a better model.
//
// Extra arguments go to both bench commands (e.g. `npm start -- --threads 2`).
import {spawnSync} from "node:child_process";
import {existsSync} from "node:fs";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist/cli/main.js");
const extra = process.argv.slice(2);
const twinDirectory = join(root, ".specgate/twin-0.1b");
const twin = join(twinDirectory, "target.gguf");

function specgate(args) {
    const result = spawnSync(process.execPath, [cli, ...args], {stdio: "inherit", cwd: root});
    if (result.status !== 0) process.exit(result.status ?? 1);
}

const benchArgs = ["--prompts", "examples/family-prompts.jsonl", "--temperature", "0", "--max-tokens", "48", "--repeats", "3"];
specgate([
    "bench",
    "--target",
    "models/target/model.gguf",
    "--draft",
    "models/draft/model.gguf",
    "--policies",
    "greedy,strict,fuzzy:js:0.4,calibrated",
    "--gamma",
    "1,4",
    ...benchArgs,
    ...extra
]);
if (!existsSync(twin)) {
    process.stdout.write("\nWriting the family target's widened twin (d768×8, 0.06B parameters, F16) into .specgate/twin-0.1b/ …\n");
    specgate([
        "fixtures",
        "--widen-from",
        "models/target/model.gguf",
        "--target-shape",
        "768,8,24,2048",
        "--type",
        "F16",
        "--out",
        twinDirectory
    ]);
}
process.stdout.write("\nThe same pair at a realistic cost: the target's widened twin (same function, 0.06B parameters), the same draft.\n");
specgate([
    "bench",
    "--target",
    twin,
    "--draft",
    "models/draft/model.gguf",
    "--policies",
    "strict",
    "--gamma",
    "4",
    "--no-predictor",
    "--threads",
    "2",
    ...benchArgs,
    ...extra
]);
