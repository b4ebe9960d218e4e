import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it, vi} from "vitest";
import {ExitCode} from "../exitCodes.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

// The shipped family target, trained on a 256-token context (llama.context_length).
const target = new URL("../../../models/target/model.gguf", import.meta.url).pathname;
const draft = new URL("../../../models/draft/model.gguf", import.meta.url).pathname;

describe("the context rule on the shipped family", () => {
    it("reports finish: context, in its telemetry line and --json, when the context ends it before --max-tokens", async () => {
        const run = await runCliCaptured(
            "generate",
            "Once upon a time",
            "--target",
            target,
            "--context-size",
            "24",
            "--max-tokens",
            "100",
            "--temperature",
            "0",
            "--json",
            "-"
        );
        expect(run.code, run.stderr).toBe(ExitCode.success);
        const result = JSON.parse(run.stdout) as {finishReason: string; tokens: number[]; promptTokens: number};
        expect(result.finishReason).toBe("context");
        expect(result.tokens.length).toBeLessThan(100);
        expect(result.promptTokens + result.tokens.length).toBeLessThanOrEqual(25);
        expect(run.stderr).toMatch(/ tokens, [\d.]+ tok\/s, finish: context\n/);
        expect(run.stderr).toMatch(
            /stopped at the 24-token context after \d+ of --max-tokens 100 .*raise --context-size or lower --max-tokens/
        );
        expect(run.stderr).not.toMatch(/warning/);
    });

    it("reports finish: length when --max-tokens ends it, and warns when --context-size exceeds the training context", async () => {
        const run = await runCliCaptured("generate", "Once upon a time", "--target", target, "--context-size", "512", "--max-tokens", "3");
        expect(run.code, run.stderr).toBe(ExitCode.success);
        expect(run.stderr).toMatch(/finish: length/);
        expect(run.stderr).toContain(
            `specgate generate: warning: --context-size 512 exceeds the 256-token context ${target} was trained on; ` +
                "positions past it were never seen in training and usually give degraded output\n"
        );
    });

    it("refuses a prompt that leaves no room for a generated token (exit 2)", async () => {
        const run = await runCliCaptured("generate", "Once upon a time ".repeat(8), "--target", target, "--context-size", "16");
        expect(run.code).toBe(ExitCode.badInput);
        expect(run.stderr).toMatch(/^specgate generate: .*has \d+ tokens; the context holds 16/);
    });

    it("bench skips and counts prompts that do not fit with --max-tokens, and exits 3 when it skips most of them", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-bench-context-"));
        try {
            const prompts = join(directory, "prompts.txt");
            const long = "Once upon a time there was a tiny model. ".repeat(6);
            await writeFile(prompts, ["Once upon a time", long, long].join("\n") + "\n");
            const args = ["bench", "--target", target, "--draft", draft, "--prompts", prompts, "--policies", "strict", "--gamma", "2"];
            const run = await runCliCaptured(
                ...args,
                "--repeats",
                "1",
                "--no-predictor",
                "--max-tokens",
                "8",
                "--context-size",
                "32",
                "--json",
                "-"
            );
            expect(run.code, run.stderr).toBe(ExitCode.insufficientData);
            expect(run.stderr).toMatch(
                /skipped 2 of 3 prompt\(s\) that do not fit the 32-token context with --max-tokens 8: #2 \(\d+ tokens\), #3/
            );
            expect(run.stderr).toMatch(/INSUFFICIENT DATA: 2 of 3 prompt\(s\) were skipped \(more than half\)/);
            expect((JSON.parse(run.stdout) as {prompts: number; skippedPrompts: unknown[]}).skippedPrompts).toHaveLength(2);
            // None fits: nothing is measured.
            const none = await runCliCaptured(...args, "--max-tokens", "30", "--context-size", "32");
            expect(none.code).toBe(ExitCode.insufficientData);
            expect(none.stderr).toMatch(
                /^specgate bench: INSUFFICIENT DATA: .*no prompt fits the 32-token context with 30 generated tokens/m
            );
        } finally {
            await rm(directory, {recursive: true, force: true});
        }
    });
});
