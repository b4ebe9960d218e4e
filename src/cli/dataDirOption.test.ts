import {mkdir, mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {runCliCaptured} from "./testing/runCliCaptured.js";

vi.setConfig(modelTestTimeouts);

const target = "models/target/model.gguf";
const draft = "models/draft/model.gguf";

let directory: string;
let data: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-data-dir-"));
    data = join(directory, "data");
    await mkdir(join(data, "mgsm"), {recursive: true});
    await writeFile(join(data, "mgsm", "mgsm_xx.tsv"), "Tom has 2 apples and buys 3. How many?\t5\n");
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

/** Each command that loads batteries by name, asked for an MGSM language only `data` holds. */
const commands: Record<string, (battery: string) => string[]> = {
    "battery check": (battery) => ["battery", "check", battery],
    canary: (battery) => ["canary", "--a", `embedded:target=${target}`, "--b", `embedded:target=${target}`, "--prompts", battery],
    "fairness analyze": (battery) => ["fairness", "analyze", "--target", target, "--draft", draft, "--battery", battery],
    "fairness mitigate": (battery) => [
        "fairness",
        "mitigate",
        "--target",
        target,
        "--draft",
        draft,
        "--battery",
        battery,
        "--out",
        join(directory, "mitigated.gguf")
    ],
    sweep: (battery) => ["sweep", "--target", target, "--draft", draft, "--battery", battery, "--policies", "strict"],
    calibrate: (battery) => ["calibrate", "--target", target, "--draft", draft, "--battery", battery, "--max-accuracy-drop", "1"],
    "tais run": (battery) => ["tais", "run", "--a", `embedded:target=${target}`, "--b", `embedded:target=${target}`, "--battery", battery]
};

describe("--data-dir", () => {
    it.each(Object.keys(commands))("%s reads named batteries from it", async (name) => {
        const args = commands[name]("mgsm:yy");
        const outcome = await runCliCaptured(...args, "--data-dir", data);
        expect(outcome.code).toBe(2);
        // The folder the command looked in is the one given, and it found the language only that folder holds.
        expect(outcome.stderr).toContain(`MGSM has no language "yy" in ${join(data, "mgsm")} (no mgsm_yy.tsv); present: xx`);
    });
});
