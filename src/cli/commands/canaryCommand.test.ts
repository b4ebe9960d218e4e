import {mkdir, mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {letterPieces} from "../../gguf/letterPieces.js";
import {writeRandomLlamaPair, type RandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {runCanaryCommand} from "./canaryCommand.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let pair: RandomLlamaPair;
let prompts: string;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-canary-"));
    pair = await writeRandomLlamaPair({directory, seed: 21});
    prompts = join(directory, "prompts.jsonl");
    const texts = ["Call search_orders for ACME", "The quick brown fox", '{"limit": ', "Hello", "Summarise the ticket"];
    await writeFile(prompts, texts.map((prompt, index) => JSON.stringify({id: `q${index}`, task: "tool", prompt})).join("\n"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("specgate canary on GGUF decode paths", () => {
    it("sizes an embedded path's context with context=N: prompts that do not fit are skipped, most skipped is exit 3", async () => {
        const spec = (context: number) => `embedded:target=${pair.targetPath},context=${context}`;
        const tooSmall = await runCanaryCommand({a: spec(16), b: spec(16), prompts, maxTokens: "20", maxMismatch: "0.5"});
        expect(tooSmall.exitCode).toBe(3);
        expect(tooSmall.stdout).toMatch(/^# Decode-path drift canary\n\n\*\*INSUFFICIENT DATA\*\*/);
        expect(tooSmall.stdout).toContain("prompts: 5, compared: 0, skipped (prompt exceeds the context): 5");
        expect(tooSmall.stderr).toMatch(/insufficient data: 5 of 5 prompt\(s\) were skipped \(more than half\)/);
        // Past the model's 256-token training context: it runs, with a warning naming the key.
        const large = await runCanaryCommand({a: spec(512), b: spec(512), prompts, maxTokens: "4", maxMismatch: "0.5"});
        expect(large.exitCode, large.stderr).toBe(0);
        expect(large.stderr).toContain(
            `specgate canary: warning: context= 512 exceeds the 256-token context ${pair.targetPath} was trained on`
        );
    });

    it("passes target-only against strict speculative greedy, writing the report and JSON", async () => {
        const report = join(directory, "report.md");
        const json = join(directory, "result.json");
        const outcome = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `embedded:target=${pair.targetPath},draft=${pair.draftPath},policy=strict,gamma=3`,
            prompts,
            maxTokens: "20",
            // 5 prompts can rule out a rate of 50% (95% upper bound 43.4%), not 1.5%.
            maxMismatch: "0.5",
            report,
            json
        });
        expect(outcome.stderr).toBe("");
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toMatch(/^PASS: 5\/5 exact matches, mismatch 0\.00% \(95% upper bound 43\.45%, threshold 50\.00%\)/);
        expect(await readFile(report, "utf8")).toMatch(/\*\*PASS\*\*/);
        const result = JSON.parse(await readFile(json, "utf8")) as {paths: {b: {fingerprint: string}}};
        // Asserting the fingerprint just printed passes; any other fails.
        const pinned = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `embedded:target=${pair.targetPath},draft=${pair.draftPath},policy=strict,gamma=3`,
            prompts,
            maxTokens: "8",
            maxMismatch: "0.5",
            expectFingerprint: result.paths.b.fingerprint
        });
        expect(pinned.exitCode).toBe(0);
        const moved = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `embedded:target=${pair.targetPath},draft=${pair.draftPath},policy=strict,gamma=4`,
            prompts,
            maxTokens: "8",
            expectFingerprint: result.paths.b.fingerprint
        });
        expect(moved.exitCode).toBe(1);
        expect(moved.stderr).toMatch(/path B fingerprint differs/);
    });

    it("fails a lossy fuzzy policy and prints the Markdown report", async () => {
        const outcome = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `embedded:target=${pair.targetPath},draft=${pair.draftPath},policy=fuzzy,policy.threshold=1000,gamma=4`,
            prompts,
            maxTokens: "20"
        });
        expect(outcome.exitCode).toBe(1);
        expect(outcome.stdout).toMatch(/^# Decode-path drift canary\n\n\*\*FAIL\*\* \(drift\): mismatch rate/);
        expect(outcome.stdout).toContain("## Mismatches");
    });

    it("exits 3 when no drift is seen but too few prompts were compared to pass, saying how many would do", async () => {
        const outcome = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `embedded:target=${pair.targetPath},draft=${pair.draftPath},policy=strict,gamma=3`,
            prompts,
            maxTokens: "8"
        });
        expect(outcome.exitCode).toBe(3);
        expect(outcome.stdout).toMatch(/^\*\*INSUFFICIENT DATA\*\*: 5 prompt\(s\) compared are too few/m);
        expect(outcome.stdout).toMatch(/^- mismatch rate: 0\.00% \(95% Wilson CI 0\.00%–43\.45%\), bound 1\.50%$/m);
        expect(outcome.stderr).toMatch(
            /^specgate canary: insufficient data: 5 prompt\(s\) compared are too few: .* about 253 prompts would be needed at the rate seen \(no mismatch\)\n$/
        );
    });

    it("exits 2 on bad input", async () => {
        expect((await runCanaryCommand({b: "embedded:target=x", prompts})).exitCode).toBe(2);
        const badSpec = await runCanaryCommand({a: "embedded:target=x,gama=1", b: "embedded:target=x", prompts});
        expect(badSpec).toMatchObject({exitCode: 2, stderr: expect.stringMatching(/unknown key gama/)});
        const missingModel = await runCanaryCommand({a: join(directory, "none"), b: "embedded:target=x", prompts});
        expect(missingModel.exitCode).toBe(2);
        const malformed = join(directory, "bad.jsonl");
        await writeFile(malformed, '{"id": "a", "task": "t", "prompt": "p"}\n{oops\n');
        const badPrompts = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `embedded:target=${pair.targetPath}`,
            prompts: malformed
        });
        expect(badPrompts).toMatchObject({exitCode: 2, stderr: expect.stringMatching(/bad\.jsonl:2: not valid JSON/)});
    });

    it("a configuration fault is bad input, not drift: a draft with another tokenizer, --max-tokens 0", async () => {
        await mkdir(join(directory, "other"));
        const other = await writeRandomLlamaPair({directory: join(directory, "other"), seed: 22, pieces: letterPieces(129)});
        const mismatched = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `embedded:target=${pair.targetPath},draft=${other.draftPath}`,
            prompts
        });
        expect(mismatched).toMatchObject({
            exitCode: 2,
            stderr: expect.stringMatching(/^specgate canary: .*draft: target has 260 tokens, draft has 389: 129 apart/)
        });
        const noTokens = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `embedded:target=${pair.targetPath}`,
            prompts,
            maxTokens: "0"
        });
        expect(noTokens).toMatchObject({exitCode: 2, stderr: expect.stringMatching(/--max-tokens: must be at least 1/)});
    });

    it("requests that fail are 'could not compare' (exit 4), not drift", async () => {
        const outcome = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: "openai:base=http://127.0.0.1:9/v1,model=m,retries=0,timeout-ms=2000",
            prompts,
            maxTokens: "4"
        });
        expect(outcome.exitCode).toBe(4);
        expect(outcome.stderr).toMatch(
            /^specgate canary: could not compare: 5 request\(s\) failed, so 5 of 5 prompt\(s\) were not compared/
        );
    });
});
