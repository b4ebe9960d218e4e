/**
 * CPU time per generated token of specgate's eagle3 drafter and of llama.cpp's
 * `llama-speculative-simple --spec-type draft-eagle3`, on the same target, head and prompts (strict,
 * γ = 4, EOS ignored, 1 thread). CPU time, unlike wall time, hardly moves when other processes share
 * the cores: on a busy machine it still ranks the two tools. Each side's cost of a generation is its
 * CPU time for --tokens tokens minus that for 1 token with the same prompt and seed (loading, prompt
 * evaluation and the first token cancel); specgate's covers its whole process (JS and every thread).
 * At T > 0 specgate runs twice: drafts sampled from the head's rows (the default) and the head's top
 * token (draftSampling greedy, llama.cpp's draft-eagle3 algorithm).
 *
 *   npx tsx bench/eagle3CpuCost.ts [--head models/eagle3/model.gguf] [--target models/target/model.gguf]
 *       [--temperatures 0,1] [--reps 3] [--tokens 128] [--bin native/build/baselines/bin]
 *
 * llama.cpp's binaries come from scripts/buildLlamaCppBaselines.sh (the release the addon builds).
 */
import {spawnSync} from "node:child_process";
import {cpus, loadavg} from "node:os";
import {parseArgs} from "node:util";
import {Eagle3HeadBackend} from "../src/backend/Eagle3HeadBackend.js";
import {NativeBackend} from "../src/backend/NativeBackend.js";
import {loadPrompts} from "../src/cli/loadPrompts.js";
import {generate} from "../src/engine/generate.js";

const {values} = parseArgs({
    options: {
        head: {type: "string", default: "models/eagle3/model.gguf"},
        target: {type: "string", default: "models/target/model.gguf"},
        temperatures: {type: "string", default: "0,1"},
        reps: {type: "string", default: "3"},
        tokens: {type: "string", default: "128"},
        bin: {type: "string", default: "native/build/baselines/bin"},
        prompts: {type: "string", default: "examples/family-prompts.jsonl"}
    }
});
const maxTokens = Number(values.tokens);
const reps = Number(values.reps);
const prompts = await loadPrompts(values.prompts);
type Mode = "sample" | "greedy";

/** llama-speculative-simple's user + system milliseconds for `tokens` tokens (GNU time). */
function llamaCppMilliseconds(prompt: string, temperature: number, tokens: number, seed: number): number {
    const tool = `${values.bin}/llama-speculative-simple`;
    const flags = ["-m", values.target, "-md", values.head, "--spec-type", "draft-eagle3", "--spec-draft-n-max", "4"];
    flags.push("--spec-draft-n-min", "0", "--spec-draft-p-min", "0", "-t", "1", "-tb", "1", "-td", "1", "-c", "256");
    flags.push("-n", String(tokens), "--temp", String(temperature), "--top-k", "0", "--top-p", "1", "--min-p", "0");
    flags.push("--ignore-eos", "--seed", String(seed), "-p", prompt);
    const run = spawnSync("/usr/bin/time", ["-f", "%U %S", tool, ...flags], {
        encoding: "utf8",
        env: {...process.env, LD_LIBRARY_PATH: values.bin}
    });
    const [user, system] = run.stderr.trim().split("\n").at(-1)!.split(" ").map(Number);
    if (run.status !== 0 || !Number.isFinite(user + system)) throw new Error(`llama-speculative-simple failed: ${run.stderr.slice(-400)}`);
    return (user + system) * 1000;
}

const options = {threads: 1, gpu: "off" as const};
const target = await NativeBackend.load(values.target, options);
const head = await Eagle3HeadBackend.load(values.head, options);

/** specgate's process CPU milliseconds for one generation, and its drafted and accepted tokens. */
async function specgateRun(prompt: string, temperature: number, tokens: number, seed: number, draftSampling: Mode) {
    const before = process.cpuUsage();
    const {telemetry} = await generate(target, head, prompt, {
        policy: {kind: "strict"},
        gamma: 4,
        sampling: {temperature, topK: 0, topP: 1, minP: 0},
        maxTokens: tokens,
        seed,
        ignoreEos: true,
        drafter: "eagle3",
        draftSampling
    });
    const used = process.cpuUsage(before);
    return {milliseconds: (used.user + used.system) / 1000, drafted: telemetry.draftTokens, accepted: telemetry.acceptedTokens};
}

await specgateRun(prompts[0], 0, 8, 1, "sample"); // warm-up: contexts, graphs, page cache
console.log(
    `${cpus().length}-core ${cpus()[0]?.model ?? "?"}, load average ${loadavg()[0].toFixed(2)} at start; ${reps} × ${prompts.length} prompts, ${maxTokens} tokens`
);
console.log("| T | llama.cpp µs/token | specgate drafts | specgate µs/token | specgate acceptance | llama.cpp ÷ specgate CPU |");
console.log("|---|---|---|---|---|---|");
for (const temperature of values.temperatures.split(",").map(Number)) {
    const modes: Mode[] = temperature === 0 ? ["sample"] : ["sample", "greedy"];
    let native = 0;
    const costs = new Map(modes.map((mode) => [mode, {milliseconds: 0, drafted: 0, accepted: 0}]));
    for (let rep = 0; rep < reps; rep++)
        for (const [index, prompt] of prompts.entries()) {
            const seed = 31 + rep * 100 + index;
            native += llamaCppMilliseconds(prompt, temperature, maxTokens, seed) - llamaCppMilliseconds(prompt, temperature, 1, seed);
            for (const mode of modes) {
                const [full, first] = [
                    await specgateRun(prompt, temperature, maxTokens, seed, mode),
                    await specgateRun(prompt, temperature, 1, seed, mode)
                ];
                const cost = costs.get(mode)!;
                cost.milliseconds += full.milliseconds - first.milliseconds;
                cost.drafted += full.drafted;
                cost.accepted += full.accepted;
            }
        }
    const tokens = reps * prompts.length * (maxTokens - 1);
    for (const [mode, cost] of costs)
        console.log(
            `| ${temperature} | ${((native / tokens) * 1000).toFixed(0)} | ${temperature === 0 ? "greedy (T = 0)" : mode} | ` +
                `${((cost.milliseconds / tokens) * 1000).toFixed(0)} | ${(cost.accepted / cost.drafted).toFixed(3)} | ${(native / cost.milliseconds).toFixed(3)}× |`
        );
}
await head.dispose();
await target.dispose();
