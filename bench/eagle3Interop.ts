/**
 * specgate's eagle3 drafter beside llama.cpp's `llama-speculative-simple --spec-type draft-eagle3` on
 * the same target, head and prompts (greedy, γ draft tokens per step, EOS ignored): drafted and
 * accepted tokens, tokens/s after the prompt, and how many of llama.cpp's draft steps specgate proposed
 * token for token (read from llama.cpp's debug log, where each step's greedy candidates are listed).
 *
 *   npx tsx bench/eagle3Interop.ts --head H.gguf [--target models/target/model.gguf] [--gamma 4]
 *       [--tokens 64] [--bin native/build/baselines/bin] [--prompts examples/family-prompts.jsonl]
 *
 * llama.cpp's binaries come from scripts/buildLlamaCppBaselines.sh (the release the addon builds).
 */
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {parseArgs} from "node:util";
import {loadModelBackend} from "../src/backend/loadModelBackend.js";
import type {Drafter} from "../src/engine/drafters/Drafter.js";
import {createDrafter} from "../src/engine/drafters/createDrafter.js";
import {generate} from "../src/engine/generate.js";
import {nativeSamplerFlags, runSpeculativeSimpleUntilSummary, shellQuote} from "./llamaCppTools.js";

const {values} = parseArgs({
    options: {
        head: {type: "string"},
        target: {type: "string", default: "models/target/model.gguf"},
        gamma: {type: "string", default: "4"},
        tokens: {type: "string", default: "64"},
        bin: {type: "string", default: "native/build/baselines/bin"},
        prompts: {type: "string", default: "examples/family-prompts.jsonl"}
    }
});
if (values.head === undefined) throw new Error("--head H.gguf is required");
const head = values.head;
const gamma = Number(values.gamma);
const maxTokens = Number(values.tokens);
const prompts = readFileSync(values.prompts, "utf8")
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as {prompt: string}).prompt);

/** A drafter that keeps every proposal it made. */
function recording(inner: Drafter, steps: number[][]): Drafter {
    return {
        label: inner.label,
        members: inner.members,
        vocabularySize: inner.vocabularySize,
        async start(context) {
            const session = await inner.start(context);
            return {
                supportsArgmax: session.supportsArgmax,
                async propose(request) {
                    const proposal = await session.propose(request);
                    steps.push([...proposal.tokens]);
                    return proposal;
                },
                observe: (outcome) => session.observe(outcome),
                finish: (output) => session.finish(output),
                dispose: () => session.dispose()
            };
        }
    };
}

/** llama.cpp's draft steps: the greedy candidate of each position, a step starting at position 0. */
function llamaSteps(output: string): number[][] {
    const steps: number[][] = [];
    for (const match of output.matchAll(/draft candidate +0, pos +(\d+): +(\d+)/g)) {
        if (match[1] === "0") steps.push([]);
        steps[steps.length - 1]?.push(Number(match[2]));
    }
    return steps;
}

const number = (output: string, pattern: RegExp): number => Number(pattern.exec(output)?.[1] ?? NaN);

const directory = mkdtempSync(join(tmpdir(), "specgate-eagle3-interop-"));
const target = await loadModelBackend(values.target, {backend: "native", threads: 1});
const draft = await loadModelBackend(head, {backend: "native", threads: 1});
// One generation first: the first decodes of a process pay for page faults and lazy set-up.
await generate(target, draft, prompts[0], {gamma, sampling: {temperature: 0}, maxTokens: 8, drafter: "eagle3"});
const totals = {
    specgate: {drafted: 0, accepted: 0, tokens: 0, ms: 0},
    llama: {drafted: 0, accepted: 0, tokens: 0, seconds: 0},
    same: 0,
    compared: 0
};
try {
    console.log(
        "| prompt | specgate drafted / accepted | llama.cpp drafted / accepted | specgate tok/s | llama.cpp tok/s | identical draft steps |"
    );
    console.log("|---|---|---|---|---|---|");
    for (const [index, prompt] of prompts.entries()) {
        const steps: number[][] = [];
        const drafter = recording(createDrafter("eagle3", draft), steps);
        const result = await generate(
            target,
            draft,
            prompt,
            {policy: {kind: "greedy"}, gamma, sampling: {temperature: 0}, maxTokens, ignoreEos: true},
            {drafter}
        );
        // Decoding after the prompt, as llama.cpp's "decoded N tokens in S seconds" counts it.
        const milliseconds = result.telemetry.time.total - result.telemetry.time.prompt;
        const promptFile = join(directory, `prompt-${index}.txt`);
        writeFileSync(promptFile, prompt);
        const args = [
            ...["-m", values.target, "-md", head, "--spec-type", "draft-eagle3"],
            ...["--spec-draft-n-max", String(gamma), "--spec-draft-n-min", "0", "--spec-draft-p-min", "0"],
            ...["-f", promptFile, "-n", String(maxTokens), "-t", "1", "-c", "256", "-lv", "5"],
            ...nativeSamplerFlags(0, 0)
        ];
        if (index === 0) console.error(`llama.cpp: ${["llama-speculative-simple", ...args].map(shellQuote).join(" ")}`);
        process.env.LD_LIBRARY_PATH = values.bin;
        const run = await runSpeculativeSimpleUntilSummary(values.bin, args, 3, 120_000);
        if (run.code !== 0) throw new Error(`llama-speculative-simple failed:\n${run.output.slice(-2000)}`);
        const llama = {
            drafted: number(run.output, /n_drafted\s*=\s*(\d+)/),
            accepted: number(run.output, /n_accept\s*=\s*(\d+)/),
            tokens: number(run.output, /decoded\s+(\d+) tokens/),
            seconds: number(run.output, /decoded\s+\d+ tokens in\s+([\d.]+) seconds/)
        };
        const theirs = llamaSteps(run.output);
        const compared = Math.min(theirs.length, steps.length);
        let same = 0;
        // Their drafts always hold γ tokens; ours are cut to the tokens still wanted at the end.
        for (let step = 0; step < compared; step++) if (steps[step].every((token, position) => token === theirs[step][position])) same++;
        const telemetry = result.telemetry;
        totals.specgate.drafted += telemetry.draftTokens;
        totals.specgate.accepted += telemetry.acceptedTokens;
        totals.specgate.tokens += result.tokens.length;
        totals.specgate.ms += milliseconds;
        totals.llama.drafted += llama.drafted;
        totals.llama.accepted += llama.accepted;
        totals.llama.tokens += llama.tokens;
        totals.llama.seconds += llama.seconds;
        totals.same += same;
        totals.compared += compared;
        console.log(
            `| ${index} | ${telemetry.draftTokens} / ${telemetry.acceptedTokens} | ${llama.drafted} / ${llama.accepted} | ` +
                `${((result.tokens.length / milliseconds) * 1000).toFixed(0)} | ${(llama.tokens / llama.seconds).toFixed(0)} | ${same} of ${compared} |`
        );
    }
    const rate = (accepted: number, drafted: number) => `${((100 * accepted) / Math.max(1, drafted)).toFixed(1)}%`;
    console.log(
        `| all | ${totals.specgate.drafted} / ${totals.specgate.accepted} (${rate(totals.specgate.accepted, totals.specgate.drafted)}) | ` +
            `${totals.llama.drafted} / ${totals.llama.accepted} (${rate(totals.llama.accepted, totals.llama.drafted)}) | ` +
            `${((totals.specgate.tokens / totals.specgate.ms) * 1000).toFixed(0)} | ${(totals.llama.tokens / totals.llama.seconds).toFixed(0)} | ` +
            `${totals.same} of ${totals.compared} |`
    );
} finally {
    await draft.dispose();
    await target.dispose();
    rmSync(directory, {recursive: true, force: true});
}
