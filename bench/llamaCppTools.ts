/**
 * What the benchmarks share about running llama.cpp's own tools (llama-bench, llama-server,
 * llama-speculative-simple) beside specgate: their sampler flags, the draft flags, and a runner.
 */
import {spawn} from "node:child_process";
import {join} from "node:path";

/** Sampler flags of llama.cpp's tools: temperature T, top-k 0, top-p 1, min-p 0 and every other sampler off, EOS ignored. */
export function nativeSamplerFlags(temperature: number, seed: number): string[] {
    return [
        ...["--temp", String(temperature), "--top-k", "0", "--top-p", "1", "--min-p", "0", "--typical", "1"],
        ...["--repeat-penalty", "1", "--presence-penalty", "0", "--frequency-penalty", "0", "--dry-multiplier", "0"],
        ...["--xtc-probability", "0", "--top-nsigma", "-1", "--mirostat", "0", "--samplers", "top_k;top_p;min_p;temperature"],
        ...["--ignore-eos", "--seed", String(seed)]
    ];
}

/** The same sampler in llama-server's request fields: temperature T, top-k 0, top-p 1, min-p 0, every other sampler off. */
export function llamaServerSampling(temperature: number) {
    return {
        temperature,
        top_k: 0,
        top_p: 1,
        min_p: 0,
        typical_p: 1,
        repeat_penalty: 1,
        repeat_last_n: 0,
        presence_penalty: 0,
        frequency_penalty: 0,
        dry_multiplier: 0,
        xtc_probability: 0,
        top_n_sigma: -1,
        mirostat: 0,
        samplers: ["top_k", "top_p", "min_p", "temperature"]
    };
}

/** A draft model proposing exactly γ tokens per step (no minimum, no confidence cut), as specgate's strict γ does. */
export function draftModelFlags(draft: string, gamma: number): string[] {
    return [
        "-md",
        draft,
        "--spec-type",
        "draft-simple",
        "--spec-draft-n-max",
        String(gamma),
        "--spec-draft-n-min",
        "0",
        "--spec-draft-p-min",
        "0"
    ];
}

/**
 * llama.cpp's n-gram lookup drafting up to γ tokens from the last 3 (its defaults, 12 and 48, would
 * rarely match in a short generation); `specType` names another n-gram variant with the same sizes.
 */
export function ngramDraftFlags(gamma: number, specType = "ngram-simple"): string[] {
    return ["--spec-type", specType, "--spec-ngram-simple-size-n", "3", "--spec-ngram-simple-size-m", String(gamma)];
}

/** One argument as a POSIX shell word, for printing reproducible command lines. */
export function shellQuote(part: string): string {
    return /^[\w@%+=:,./-]+$/.test(part) ? part : `'${part.replace(/'/g, `'\\''`)}'`;
}

/** Runs `binDirectory/binary` with `args`, collecting stdout and stderr together; killed after the timeout. */
export function runTool(
    binDirectory: string,
    binary: string,
    args: readonly string[],
    timeoutMilliseconds: number
): Promise<{code: number | null; output: string}> {
    return new Promise((resolveRun, reject) => {
        const child = spawn(join(binDirectory, binary), args, {stdio: ["ignore", "pipe", "pipe"]});
        let output = "";
        child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
        const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMilliseconds);
        child.once("error", reject);
        child.once("close", (code) => {
            clearTimeout(timer);
            resolveRun({code, output});
        });
    });
}

/**
 * Runs llama-speculative-simple until its summary lines are in the output (at most `attempts`
 * times): they come from llama.cpp's log thread, which is not joined at exit (common_log_main()
 * leaks it), so on a loaded machine they are sometimes lost. `retries` counts the extra runs.
 */
export async function runSpeculativeSimpleUntilSummary(
    binDirectory: string,
    args: readonly string[],
    attempts: number,
    timeoutMilliseconds: number
): Promise<{code: number | null; output: string; retries: number}> {
    let result = {code: null as number | null, output: ""};
    for (let attempt = 0; attempt < attempts; attempt++) {
        result = await runTool(binDirectory, "llama-speculative-simple", args, timeoutMilliseconds);
        if (result.code !== 0 || (/decoded\s+\d+ tokens/.test(result.output) && /n_accept\s*=\s*\d+/.test(result.output)))
            return {...result, retries: attempt};
    }
    return {...result, retries: attempts - 1};
}
