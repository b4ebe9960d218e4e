import {existsSync, mkdtempSync, readFileSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {nativeBackendAvailable} from "../../backend/nativeAddon.js";
import {writeEagle3TestHead} from "../../backend/testing/eagle3TestHeads.js";
import {processLogits} from "../../distributions/processLogits.js";
import {DraftHeadMismatchError, InvalidDrafterError} from "../../errors.js";
import {chiSquareGoodnessOfFit} from "../../statistics/chiSquareGoodnessOfFit.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {generate} from "../generate.js";
import {ChainDrafter} from "./ChainDrafter.js";
import {createDrafter} from "./createDrafter.js";
import type {Drafter, DraftRequest} from "./Drafter.js";
import {Eagle3Drafter} from "./Eagle3Drafter.js";

vi.setConfig(modelTestTimeouts);

const root = new URL("../../../", import.meta.url).pathname;
const targetPath = join(root, "models", "target", "model.gguf");
const prompts = readFileSync(join(root, "examples", "family-prompts.jsonl"), "utf8")
    .trim()
    .split("\n")
    .slice(0, 4)
    .map((line) => (JSON.parse(line) as {prompt: string}).prompt);
const directory = mkdtempSync(join(tmpdir(), "specgate-eagle3-"));
afterAll(() => rmSync(directory, {recursive: true, force: true}));

/** A drafter that records each proposal with the history it was made for. */
function recording(inner: Drafter, log: Array<{history: number[]; tokens: number[]}>): Drafter {
    return {
        label: inner.label,
        members: inner.members,
        vocabularySize: inner.vocabularySize,
        async start(context) {
            const session = await inner.start(context);
            return {
                supportsArgmax: session.supportsArgmax,
                async propose(request: DraftRequest) {
                    const proposal = await session.propose(request);
                    log.push({history: [...request.history], tokens: [...proposal.tokens]});
                    return proposal;
                },
                observe: (outcome) => session.observe(outcome),
                finish: (output) => session.finish(output),
                dispose: () => session.dispose()
            };
        }
    };
}

describe.runIf(existsSync(targetPath) && nativeBackendAvailable("cpu"))("the eagle3 drafter on the family target", () => {
    let target: ModelBackend;
    const heads: Record<"own" | "sharp" | "borrowed" | "wide" | "deep", string> = {
        own: join(directory, "own.gguf"),
        sharp: join(directory, "sharp.gguf"),
        borrowed: join(directory, "borrowed.gguf"),
        wide: join(directory, "wide.gguf"),
        deep: join(directory, "deep.gguf")
    };
    const loaded: ModelBackend[] = [];
    const head = async (kind: keyof typeof heads): Promise<ModelBackend> => {
        const backend = await loadModelBackend(heads[kind], {backend: "native", threads: 1});
        loaded.push(backend);
        return backend;
    };
    const baselines: number[][] = [];

    beforeAll(async () => {
        await writeEagle3TestHead(heads.own, targetPath, {seed: 1});
        // Weights large enough that what the head's KV cache holds changes its drafts.
        await writeEagle3TestHead(heads.sharp, targetPath, {seed: 5, standardDeviation: 0.5});
        await writeEagle3TestHead(heads.borrowed, targetPath, {seed: 2, borrowEmbeddings: true});
        await writeEagle3TestHead(heads.wide, targetPath, {seed: 3, targetShape: {embeddingLength: 64, headCount: 2, headCountKv: 2}});
        await writeEagle3TestHead(heads.deep, targetPath, {seed: 4, targetShape: {blockCount: 8}});
        target = await loadModelBackend(targetPath, {backend: "native", threads: 1});
        for (const prompt of prompts)
            baselines.push((await generate(target, undefined, prompt, {sampling: {temperature: 0}, maxTokens: 32})).tokens);
    });
    afterAll(async () => {
        for (const backend of loaded) await backend.dispose();
        await target?.dispose();
    });

    it("an eagle3 GGUF given as the draft is recognised by its architecture; `model` and `eagle3` draft with it", async () => {
        const own = await head("own");
        expect(own).toBeInstanceOf(Eagle3HeadBackend);
        expect((own as Eagle3HeadBackend).targetLayers).toEqual([1, 2, 3]);
        expect(createDrafter("model", own)).toBeInstanceOf(Eagle3Drafter);
        expect(createDrafter("eagle3", own).label).toBe("eagle3");
        expect(createDrafter("ngram+eagle3", own).members).toEqual(["ngram:3:16", "eagle3"]);
        expect(() => createDrafter("eagle3", target)).toThrow(InvalidDrafterError);
        expect(() => createDrafter("eagle3", undefined)).toThrow(InvalidDrafterError);
        await expect(own.createSequence()).rejects.toMatchObject({field: "draft"});
        // Token trees from a head (Eagle3Tree.gguf.test.ts) take 1 + (width − 1) × depth branches: too many is refused, naming the option.
        await expect(
            generate(target, own, prompts[0], {tree: {width: 16, depth: 16}, sampling: {temperature: 0}, maxTokens: 4})
        ).rejects.toMatchObject({field: "tree", message: expect.stringContaining("241 branches")});
    });

    it.each(["own", "borrowed"] as const)(
        "at temperature 0, greedy, strict and block give target-only's tokens with a head of %s embeddings",
        async (kind) => {
            const draft = await head(kind);
            let drafted = 0;
            for (const policy of ["greedy", "strict", "block"] as const)
                for (const argmaxFastPath of [true, false])
                    for (const [index, prompt] of prompts.entries()) {
                        const result = await generate(target, draft, prompt, {
                            policy: {kind: policy},
                            gamma: 4,
                            sampling: {temperature: 0},
                            maxTokens: 32,
                            argmaxFastPath,
                            drafter: "eagle3"
                        });
                        expect(result.tokens, `${policy} ${prompt}`).toEqual(baselines[index]);
                        drafted += result.telemetry.draftTokens;
                    }
            expect(drafted).toBeGreaterThan(0);
        }
    );

    it("each proposal equals a fresh head's on the same history: rollbacks and catch-up leave no trace", async () => {
        const draft = (await head("sharp")) as Eagle3HeadBackend;
        const log: Array<{history: number[]; tokens: number[]}> = [];
        // In a chain behind n-gram lookup, the head also catches up over the steps it did not draft.
        const drafter = new ChainDrafter([createDrafter("ngram:1:2", undefined), recording(new Eagle3Drafter(draft), log)]);
        const result = await generate(target, draft, prompts[0], {gamma: 4, sampling: {temperature: 0}, maxTokens: 32}, {drafter});
        expect(result.tokens).toEqual(baselines[0]);
        expect(result.telemetry.drafters.byDrafter.get("ngram:1:2")?.proposals).toBeGreaterThan(0);
        expect(log.length).toBeGreaterThan(3);
        const proposals = log.filter((entry) => entry.tokens.length > 0);
        expect(proposals.length).toBeGreaterThan(2);
        for (const {history, tokens} of proposals) {
            const fresh = await target.createSequence();
            await fresh.evaluate(history.slice(0, -1), {positions: []});
            const handle = draft.openHead(fresh);
            const ids = new Int32Array(tokens.length);
            await handle.draft(Int32Array.from(history), tokens.length, ids);
            handle.dispose();
            await fresh.dispose();
            expect(Array.from(ids)).toEqual(tokens);
        }
    });

    it("a lent target sequence (prompt caching) keeps the layers of its cached prefix: the next request drafts from them", async () => {
        const draft = (await head("own")) as Eagle3HeadBackend;
        // A sequence made before the head is paired keeps no layers: refused, naming the draft.
        const early = await loadModelBackend(targetPath, {backend: "native", threads: 1});
        loaded.push(early);
        const unpaired = await early.createSequence();
        await expect(generate(early, draft, prompts[0], {maxTokens: 4, drafter: "eagle3"}, {sequence: unpaired})).rejects.toMatchObject({
            field: "draft",
            message: expect.stringContaining("made before the head was paired")
        });
        // Paired before the sequence is made, as a server pairs its draft at start-up.
        draft.pairWith(target);
        const sequence = await target.createSequence();
        const options = {policy: {kind: "strict"}, gamma: 4, sampling: {temperature: 0}, maxTokens: 32, drafter: "eagle3"} as const;
        for (const index of [0, 1, 1]) {
            const result = await generate(target, draft, prompts[index], options, {sequence});
            expect(result.tokens).toEqual(baselines[index]);
            expect(result.telemetry.draftTokens).toBeGreaterThan(0);
        }
        await sequence.dispose();
    });

    it("the head's drafting time and the captured layers' bytes are counted in telemetry", async () => {
        const draft = await head("own");
        const result = await generate(target, draft, prompts[1], {gamma: 3, sampling: {temperature: 0}, maxTokens: 16, drafter: "eagle3"});
        expect(result.telemetry.draftTokens).toBeGreaterThan(0);
        expect(result.telemetry.draftModelMilliseconds).toBeGreaterThan(0);
        expect(result.telemetry.deviceToHost.draft).toBeGreaterThan(0);
        // Three layers of 128 floats per target token, beside the target's own rows.
        expect(result.telemetry.deviceToHost.target).toBeGreaterThanOrEqual(3 * 128 * 4 * 16);
    });

    it("at temperature 1, strict's first token follows the target's own distribution while the head proposes (χ², 600 runs)", async () => {
        const draft = await head("own");
        const prompt = prompts[2];
        const promptTokens = [target.bosToken!, ...target.tokenize(prompt)];
        const sequence = await target.createSequence();
        const [logits] = await sequence.evaluate(promptTokens);
        await sequence.dispose();
        const expected = processLogits(logits, {temperature: 1, topK: 0, topP: 1, minP: 0});
        const drafter = createDrafter("eagle3", draft);
        const observed = new Float64Array(target.vocabularySize);
        let drafted = 0;
        let accepted = 0;
        for (let seed = 0; seed < 600; seed++) {
            const result = await generate(
                target,
                draft,
                prompt,
                {
                    policy: {kind: "strict"},
                    gamma: 3,
                    maxTokens: 2,
                    seed,
                    sampling: {temperature: 1, topK: 0, topP: 1, minP: 0},
                    ignoreEos: true
                },
                {drafter}
            );
            observed[result.tokens[0]]++;
            const counters = result.telemetry.drafters.byDrafter.get("eagle3");
            drafted += counters?.draftedPerPosition[0] ?? 0;
            accepted += counters?.acceptedPerPosition[0] ?? 0;
        }
        // Every first token was verified against a proposal, some accepted and some resampled.
        expect(drafted).toBe(600);
        expect(accepted).toBeGreaterThan(0);
        expect(accepted).toBeLessThan(600);
        const test = chiSquareGoodnessOfFit(observed, expected);
        expect(test.pValue).toBeGreaterThan(0.001);
    });

    it("a head made for another target is refused with a DraftHeadMismatchError naming the draft", async () => {
        const wide = await head("wide");
        const deep = await head("deep");
        const options = {gamma: 4, sampling: {temperature: 0}, maxTokens: 4, drafter: "eagle3"} as const;
        await expect(generate(target, wide, prompts[0], options)).rejects.toThrow(DraftHeadMismatchError);
        await expect(generate(target, wide, prompts[0], options)).rejects.toMatchObject({
            field: "draft",
            message: expect.stringContaining("width 64")
        });
        await expect(generate(target, deep, prompts[0], options)).rejects.toMatchObject({
            field: "draft",
            message: expect.stringContaining("target layer 4")
        });
    });
});

const shippedHeadPath = join(root, "models", "eagle3", "model.gguf");

describe.runIf(existsSync(targetPath) && existsSync(shippedHeadPath) && nativeBackendAvailable("cpu"))(
    "the shipped EAGLE-3 head (models/eagle3)",
    () => {
        let target: ModelBackend;
        let draft: ModelBackend;
        beforeAll(async () => {
            target = await loadModelBackend(targetPath, {backend: "native", threads: 1});
            draft = await loadModelBackend(shippedHeadPath, {backend: "native", threads: 1});
        });
        afterAll(async () => {
            await draft?.dispose();
            await target?.dispose();
        });

        it("at temperature 0 gives target-only's tokens, with over a quarter of its drafts accepted", async () => {
            let drafted = 0;
            let accepted = 0;
            for (const prompt of prompts) {
                const baseline = await generate(target, undefined, prompt, {sampling: {temperature: 0}, maxTokens: 48});
                const result = await generate(target, draft, prompt, {gamma: 4, sampling: {temperature: 0}, maxTokens: 48});
                expect(result.tokens, prompt).toEqual(baseline.tokens);
                expect(result.telemetry.drafters.byDrafter.has("eagle3")).toBe(true);
                drafted += result.telemetry.draftTokens;
                accepted += result.telemetry.acceptedTokens;
            }
            // A trained head: a deterministic count at T = 0, far above an untrained head's ≈ 0.
            expect(accepted / drafted).toBeGreaterThan(0.25);
        });

        // The trained target is nearly certain of these prompts' first token at temperature 1, so the
        // trained head would only ever be accepted there; at 3 both acceptances and residual draws occur.
        it("at temperature 3, strict's first token follows the target's own distribution (χ², 600 runs)", async () => {
            const prompt = prompts[0];
            const sampling = {temperature: 3, topK: 0, topP: 1, minP: 0};
            const sequence = await target.createSequence();
            const [logits] = await sequence.evaluate([target.bosToken!, ...target.tokenize(prompt)]);
            await sequence.dispose();
            const expected = processLogits(logits, sampling);
            const drafter = createDrafter("eagle3", draft);
            const observed = new Float64Array(target.vocabularySize);
            let accepted = 0;
            for (let seed = 0; seed < 600; seed++) {
                const result = await generate(
                    target,
                    draft,
                    prompt,
                    {policy: {kind: "strict"}, gamma: 3, maxTokens: 2, seed, sampling, ignoreEos: true},
                    {drafter}
                );
                observed[result.tokens[0]]++;
                accepted += result.telemetry.drafters.byDrafter.get("eagle3")?.acceptedPerPosition[0] ?? 0;
            }
            expect(accepted).toBeGreaterThan(0);
            expect(accepted).toBeLessThan(600);
            expect(chiSquareGoodnessOfFit(observed, expected).pValue).toBeGreaterThan(0.001);
        });
    }
);
