import {existsSync, mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import type {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {nativeBackendAvailable} from "../../backend/nativeAddon.js";
import {writeEagle3TestHead} from "../../backend/testing/eagle3TestHeads.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {generate} from "../generate.js";

vi.setConfig(modelTestTimeouts);

/**
 * A target sequence given a saved state (BackendSequence.restoreState): with the layer rows saved
 * with it the EAGLE-3 head drafts at once; from a state saved without them (a target that captured no
 * layers) the head cannot draft, and the generation's telemetry says so and why.
 */
const targetPath = new URL("../../../models/target/model.gguf", import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), "specgate-eagle3-restored-"));
const headPath = join(directory, "head.gguf");
afterAll(() => rmSync(directory, {recursive: true, force: true}));
const prompt = "Request: Set a timer for 56 minutes.\nCall:";
const options = {policy: {kind: "strict"}, gamma: 4, sampling: {temperature: 0}, maxTokens: 24, drafter: "eagle3"} as const;

describe.runIf(existsSync(targetPath) && nativeBackendAvailable("cpu"))("the eagle3 drafter on a restored target sequence", () => {
    let target: ModelBackend;
    let plain: ModelBackend;
    let head: Eagle3HeadBackend;
    let baseline: number[];
    let promptTokens: number[];

    beforeAll(async () => {
        await writeEagle3TestHead(headPath, targetPath, {seed: 3});
        target = await loadModelBackend(targetPath, {backend: "native", threads: 1});
        plain = await loadModelBackend(targetPath, {backend: "native", threads: 1});
        head = (await loadModelBackend(headPath, {backend: "native", threads: 1})) as Eagle3HeadBackend;
        head.pairWith(target);
        baseline = (await generate(plain, undefined, prompt, {sampling: {temperature: 0}, maxTokens: 24})).tokens;
        promptTokens = [target.bosToken!, ...target.tokenize(prompt)];
    });
    afterAll(async () => {
        await head?.dispose();
        await plain?.dispose();
        await target?.dispose();
    });

    /** A state of the prompt, decoded on `backend`. */
    const savedPrompt = async (backend: ModelBackend) => {
        const sequence = await backend.createSequence();
        await sequence.evaluate(promptTokens, {positions: []});
        const state = await sequence.saveState!();
        await sequence.dispose();
        return state;
    };

    it("a state saved with the target's layer rows: the head drafts from the first step", async () => {
        const sequence = await target.createSequence();
        await sequence.restoreState!(await savedPrompt(target));
        const result = await generate(target, head, prompt, options, {sequence});
        expect(result.tokens).toEqual(baseline);
        expect(result.telemetry.cachedPromptTokens).toBe(promptTokens.length - 1);
        expect(result.telemetry.draftTokens).toBeGreaterThan(0);
        expect(result.telemetry.drafters.toJSON().eagle3?.unavailable).toBeUndefined();
        await sequence.dispose();
    });

    it("a state saved without them: target-only steps, and the telemetry names the head as unavailable and why", async () => {
        const sequence = await target.createSequence();
        await sequence.restoreState!(await savedPrompt(plain));
        const result = await generate(target, head, prompt, options, {sequence});
        expect(result.tokens).toEqual(baseline);
        expect(result.telemetry.draftTokens).toBe(0);
        const eagle3 = result.telemetry.drafters.toJSON().eagle3;
        expect(eagle3?.unavailable?.reason).toMatch(/hidden states for positions below \d+ were not captured/);
        expect(eagle3?.unavailable?.steps).toBe(eagle3?.lookups);
        await sequence.dispose();
    });
});
