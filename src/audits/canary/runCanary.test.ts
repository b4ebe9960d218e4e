import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import type {BatteryItem} from "../../batteries/BatteryItem.js";
import type {Completion, DecodePath} from "../../decodePaths/DecodePath.js";
import {EmbeddedDecodePath} from "../../decodePaths/EmbeddedDecodePath.js";
import {OpenAiDecodePath} from "../../decodePaths/OpenAiDecodePath.js";
import {StubOpenAiServer} from "../../decodePaths/testing/StubOpenAiServer.js";
import {BigramBackend} from "../../engine/testing/BigramBackend.js";
import {renderCanaryReport} from "./renderCanaryReport.js";
import {runCanary} from "./runCanary.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const target = BigramBackend.random(3, 12, {eosBias: -8});
const draft = target.noisyCopy(4, 3);
const items: BatteryItem[] = ["abc", "bead", "cafe", "dab", "face", "ace", "bad", "fad"].map((prompt, index) => ({
    id: `p${index}`,
    task: "letters",
    prompt,
    scorer: "none"
}));
const settings = {items, maxMismatch: 0.015, maxTokens: 30, seed: 0, concurrency: 3};

/** A path that answers from a table, for tool-call and fingerprint cases. */
function scripted(name: string, answers: Record<string, string>, systemFingerprint?: string): DecodePath {
    return {
        name,
        describe: () => ({kind: "openai", parameters: {name}, files: {}}),
        complete: async (request): Promise<Completion> => ({
            text: answers[request.prompt ?? ""],
            finishReason: "stop",
            ...(systemFingerprint ? {systemFingerprint} : {})
        }),
        dispose: async () => {}
    };
}

describe("runCanary", () => {
    it("passes two embedded paths that do not differ: target-only vs strict greedy", async () => {
        const result = await runCanary({
            ...settings,
            a: new EmbeddedDecodePath("target-only", target, undefined),
            b: new EmbeddedDecodePath("strict", target, draft, {gamma: 4})
        });
        expect(result.compared).toBe(8);
        expect(result.exactMatchRate).toBe(1);
        expect(result.mismatches).toEqual([]);
        // 8 of 8 cannot show a rate below 1.5%: the 95% Wilson upper bound is 32.4%.
        expect(result.mismatchRate95.upper).toBeCloseTo(0.3245, 3);
        expect(result.passed).toBe(false);
        expect(result.verdict).toBe("insufficient-data");
        expect(result.promptsNeeded).toBe(253);
        expect(result.failures).toEqual([
            "8 prompt(s) compared are too few: 0 mismatch(es), and the mismatch rate's 95% upper bound (Wilson) is 32.44%, not below the bound 1.50%; about 253 prompts would be needed at the rate seen (no mismatch)"
        ]);
        // The compounding risk is what the bound allows, not the point estimate of 0.
        expect(result.compoundingRisk[4].risk).toBeCloseTo(1 - (1 - result.mismatchRate95.upper) ** 5, 12);
        expect(result.paths.a.fingerprint).not.toBe(result.paths.b.fingerprint);
        expect(renderCanaryReport(result)).toMatch(/^# Decode-path drift canary\n\n\*\*INSUFFICIENT DATA\*\*: 8 prompt/);
        // Against a threshold 8 prompts can rule out, the same run passes.
        const loose = await runCanary({
            ...settings,
            maxMismatch: 0.4,
            a: new EmbeddedDecodePath("target-only", target, undefined),
            b: new EmbeddedDecodePath("strict", target, draft, {gamma: 4})
        });
        expect(loose.verdict).toBe("pass");
        expect(loose.passed).toBe(true);
    });

    it("skips and counts prompts that do not fit the context with --max-tokens; more than half skipped is insufficient data", async () => {
        // A 40-token context: "abc" and BOS (4) + 30 tokens fit, a 12-letter prompt (13) does not.
        const small = BigramBackend.random(3, 12, {eosBias: -8, contextSize: 40});
        const paths = () => ({
            a: new EmbeddedDecodePath("target-only", small, undefined),
            b: new EmbeddedDecodePath("strict", small, small.noisyCopy(4, 3), {gamma: 4})
        });
        const battery = (long: number): BatteryItem[] =>
            items.map((item, index) => (index < long ? {...item, prompt: "abcdefabcdef"} : item));
        const most = await runCanary({...settings, maxMismatch: 0.5, items: battery(5), ...paths()});
        expect(most.compared).toBe(3);
        expect(most.skipped.map((entry) => entry.id)).toEqual(["p0", "p0", "p1", "p1", "p2", "p2", "p3", "p3", "p4", "p4"]);
        expect(most.skipped[0].message).toMatch(/has 13 tokens; with 30 generated tokens that is more than the 40-token context/);
        expect(most.verdict).toBe("insufficient-data");
        expect(most.failures[0]).toMatch(/^5 of 8 prompt\(s\) were skipped \(more than half\)/);
        expect(renderCanaryReport(most)).toMatch(/skipped \(prompt exceeds the context\): 5/);
        // Every prompt skipped: insufficient data too, not a failed comparison.
        expect((await runCanary({...settings, items: battery(8), ...paths()})).verdict).toBe("insufficient-data");
        // Three of eight skipped: the five compared decide, and at a loose bound they pass.
        const few = await runCanary({...settings, maxMismatch: 0.5, items: battery(3), ...paths()});
        expect(few.compared).toBe(5);
        expect(few.verdict).toBe("pass");
    });

    it("fails two that do: a lossy fuzzy policy, with token indexes and near-tie diagnosis", async () => {
        const a = new EmbeddedDecodePath("target-only", target, undefined);
        const b = new EmbeddedDecodePath("fuzzy", target, draft, {policy: {kind: "fuzzy", threshold: 100}, gamma: 4});
        const result = await runCanary({...settings, a, b});
        expect(result.mismatches.length).toBeGreaterThan(0);
        expect(result.passed).toBe(false);
        expect(result.verdict).toBe("drift");
        expect(result.failures[0]).toMatch(/exceeds the bound 1\.50%/);
        expect(result.compoundingRisk[1].risk).toBeCloseTo(1 - (1 - result.mismatchRate95.upper) ** 2, 12);
        for (const mismatch of result.mismatches) {
            expect(mismatch.firstDivergentTokenIndex).not.toBeNull();
            // Path A is greedy target-only, so at the divergence it emitted the target's argmax.
            expect(mismatch.logitGap!.top.token).toBe(mismatch.logitGap!.tokenA);
            expect(mismatch.logitGap!.tokenB).not.toBe(mismatch.logitGap!.tokenA);
        }
        const report = renderCanaryReport(result);
        expect(report).toMatch(/^# Decode-path drift canary\n\n\*\*FAIL\*\*/);
        expect(report).toContain("| id | task | char | token | top-2 gap | A | B |");
    });

    it("diffs tool-call arguments and checks expected fingerprints", async () => {
        const answers = {abc: '{"name": "search_orders", "arguments": {"customer": "ACME", "limit": 50}}'};
        const drifted = {abc: '{"name": "search_orders", "arguments": {"customer": "ACME", "limit": 500}}'};
        const result = await runCanary({
            ...settings,
            items: items.slice(0, 1),
            a: scripted("a", answers),
            b: scripted("b", drifted, "fp_1"),
            expectFingerprint: "fp_1"
        });
        expect(result.toolCallOutputs).toBe(1);
        expect(result.toolCallArgumentMismatches).toBe(1);
        expect(result.mismatches[0].toolCallDifferences).toEqual([
            {call: 0, name: "search_orders", differences: [{path: "$.limit", a: 50, b: 500}]}
        ]);
        expect(result.mismatches[0].logitGap).toBeNull();
        expect(result.paths.b.fingerprintMatches).toBe(true);
        expect(renderCanaryReport(result)).toContain("| `p0` | search_orders | `$.limit` | `50` | `500` |");

        const same = await runCanary({
            ...settings,
            items: items.slice(0, 1),
            a: scripted("a", answers),
            b: scripted("b", answers, "fp_2"),
            expectFingerprint: "fp_1"
        });
        expect(same.mismatches).toEqual([]);
        expect(same.passed).toBe(false);
        expect(same.failures).toEqual([expect.stringMatching(/path B fingerprint differs: expected fp_1/)]);
    });
});

describe("runCanary against an OpenAI-compatible stub", () => {
    let server: StubOpenAiServer;
    beforeAll(async () => {
        server = await StubOpenAiServer.start();
    });
    afterAll(async () => {
        await server.close();
    });

    it("asserts the server's system_fingerprint and counts failed requests as a failure", async () => {
        const reply = JSON.stringify({choices: [{text: "ok", finish_reason: "stop"}], system_fingerprint: "fp_prod"});
        server.script({body: reply});
        const remote = new OpenAiDecodePath("prod", {baseUrl: server.baseUrl, model: "m", backoff: {baseDelayMs: 1, maxDelayMs: 2}});
        const result = await runCanary({
            ...settings,
            items: items.slice(0, 3),
            // 3 prompts can only rule out a high rate (upper bound 56%).
            maxMismatch: 0.9,
            a: scripted("a", {abc: "ok", bead: "ok", cafe: "ok"}),
            b: remote,
            expectFingerprint: "fp_prod"
        });
        expect(result.passed).toBe(true);
        expect(result.paths.b.systemFingerprints).toEqual(["fp_prod"]);

        server.script({status: 400, body: "no"});
        const failing = await runCanary({...settings, items: items.slice(0, 2), a: scripted("a", {abc: "ok", bead: "ok"}), b: remote});
        expect(failing.errors).toHaveLength(2);
        expect(failing.passed).toBe(false);
        // Nothing was compared: that is not drift, and the verdict says so.
        expect(failing.verdict).toBe("could-not-compare");
        expect(failing.failures).toEqual([expect.stringMatching(/^2 request\(s\) failed, so 2 of 2 prompt\(s\) were not compared/)]);
    });
});
