import {existsSync, mkdtempSync, readFileSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import type {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {ModelBackend, TreeCapableSequence} from "../../backend/ModelBackend.js";
import {nativeBackendAvailable} from "../../backend/nativeAddon.js";
import {writeEagle3TestHead} from "../../backend/testing/eagle3TestHeads.js";
import type {DraftTree} from "../../policies/treeVerification.js";
import type {Chance} from "../../random/Chance.js";
import {SeededChance} from "../../random/SeededChance.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {jointLawTest} from "../../testing/jointLawTest.js";
import type {DraftLengthTelemetry} from "../DraftLengthTelemetry.js";
import {generate} from "../generate.js";
import {parseGenerationOptions} from "../GenerationOptions.js";
import {GenerationTelemetry} from "../GenerationTelemetry.js";
import {eagle3TreeBranches, Eagle3TreeSession} from "./Eagle3TreeSession.js";

vi.setConfig(modelTestTimeouts);

/**
 * Token trees drafted by an EAGLE-3 head (a spine with leaf siblings, Eagle3TreeSession) on the family
 * target: the target's layer tap follows the kept branch, so after any path the head drafts what a
 * fresh head drafts on the same history; at T = 0 the output is target-only greedy decoding's; at
 * T = 1 the first tokens follow the target's own joint law.
 */
const root = new URL("../../../", import.meta.url).pathname;
const targetPath = join(root, "models", "target", "model.gguf");
const shippedHeadPath = join(root, "models", "eagle3", "model.gguf");
const prompts = readFileSync(join(root, "examples", "family-prompts.jsonl"), "utf8")
    .trim()
    .split("\n")
    .slice(0, 3)
    .map((line) => (JSON.parse(line) as {prompt: string}).prompt);
const directory = mkdtempSync(join(tmpdir(), "specgate-eagle3-tree-"));
afterAll(() => rmSync(directory, {recursive: true, force: true}));

const greedy = {temperature: 0, topK: 0, topP: 1, minP: 0};

/** Tree levels the steps asked for (the sum of their depths). */
function levels(draftLengths: DraftLengthTelemetry): number {
    return draftLengths.counts.reduce((sum, count, depth) => sum + count * depth, 0);
}

describe.runIf(existsSync(targetPath) && nativeBackendAvailable("cpu"))("token trees from an EAGLE-3 head (family target)", () => {
    let target: ModelBackend;
    let sharp: Eagle3HeadBackend;
    let own: Eagle3HeadBackend;

    beforeAll(async () => {
        // Weights large enough that what the head's KV cache holds changes its drafts.
        await writeEagle3TestHead(join(directory, "sharp.gguf"), targetPath, {seed: 5, standardDeviation: 0.5});
        await writeEagle3TestHead(join(directory, "own.gguf"), targetPath, {seed: 1});
        target = await loadModelBackend(targetPath, {backend: "native", threads: 1});
        sharp = (await loadModelBackend(join(directory, "sharp.gguf"), {backend: "native", threads: 1})) as Eagle3HeadBackend;
        own = (await loadModelBackend(join(directory, "own.gguf"), {backend: "native", threads: 1})) as Eagle3HeadBackend;
        sharp.pairWith(target);
        own.pairWith(target);
    });
    afterAll(async () => {
        await own?.dispose();
        await sharp?.dispose();
        await target?.dispose();
    });

    /**
     * A tree session of `shape` at `sampling` on a fresh target sequence with the branches it needs,
     * holding `history` but its last token; `reseed` restarts its draws.
     */
    const open = async (shape: {width: number; depth: number}, history: readonly number[], sampling = greedy) => {
        const sequence = (await target.createSequence({branches: eagle3TreeBranches(shape)})) as TreeCapableSequence;
        await sequence.evaluate(history.slice(0, -1), {positions: []});
        let draws = new SeededChance(1);
        const chance: Chance = {accept: (probability) => draws.accept(probability), choose: (...args) => draws.choose(...args)};
        const session = Eagle3TreeSession.start(sharp, shape, {
            target,
            targetSequence: sequence,
            options: parseGenerationOptions({sampling, tree: shape}),
            chance,
            telemetry: new GenerationTelemetry()
        });
        const reseed = (seed: number) => {
            draws = new SeededChance(seed);
        };
        return {sequence, session, reseed};
    };

    it("the tree is a spine of the head's drafts with `width` children at each depth, the spine's first", async () => {
        const history = [target.bosToken!, ...target.tokenize(prompts[0])];
        const {sequence, session} = await open({width: 3, depth: 4}, history);
        const tree = await session.propose(history, 4, true);
        expect(tree.rows).toBeUndefined();
        expect(tree.tokens).toHaveLength(12);
        expect(tree.parents).toEqual([-1, -1, -1, 0, 0, 0, 3, 3, 3, 6, 6, 6]);
        for (let level = 0; level < 4; level++) expect(new Set(tree.tokens.slice(3 * level, 3 * level + 3)).size).toBe(3);
        await session.dispose();
        await sequence.dispose();
    });

    // Paths kept: a side branch at the first depth, one opened at the second depth, the spine, none.
    // At T = 1 the tree carries the head's sampler rows, drawn with the same uniforms. The rows agree
    // within rounding, which this head's large weights amplify (the target computed the kept path's
    // layers in a tree batch, the fresh sequence in a plain one): under 0.02 here, where another
    // token's layers at the kept position move them by 0.13 to 0.98.
    it.each([
        {name: "a first-depth sibling", path: () => [1]},
        {name: "a second-depth sibling", path: (tree: DraftTree) => [0, tree.parents.indexOf(0) + 1]},
        {name: "the spine", path: (tree: DraftTree) => [0, tree.parents.indexOf(0)]},
        {name: "no node", path: () => []}
    ])("after the target keeps $name of a tree, the head's next tree is a fresh head's on the same history", async ({path}) => {
        const history = [target.bosToken!, ...target.tokenize(prompts[1])];
        const shape = {width: 3, depth: 3};
        const sampling = {temperature: 1, topK: 0, topP: 1, minP: 0};
        const {sequence, session, reseed} = await open(shape, history, sampling);
        const tree = await session.propose(history, 3, false);
        // The target decodes the tree (the pending token as its root) and keeps the path.
        await sequence.evaluateTree([history.at(-1)!, ...tree.tokens], [-1, ...tree.parents.map((parent) => parent + 1)], {
            kind: "argmax"
        });
        const kept = path(tree);
        await sequence.keepTreePath([0, ...kept.map((node) => node + 1)]);
        // Any next pending token: the head must read the kept path's layers.
        const next = [...history, ...kept.map((node) => tree.tokens[node]), tree.tokens[2]];
        expect(sequence.tokens).toEqual(next.slice(0, -1));
        reseed(7);
        const followed = await session.propose(next, 3, false);
        const fresh = await open(shape, next, sampling);
        fresh.reseed(7);
        const expected = await fresh.session.propose(next, 3, false);
        expect(followed.tokens).toHaveLength(9);
        expect(followed.tokens).toEqual(expected.tokens);
        expect(followed.parents).toEqual(expected.parents);
        expect(followed.rows!.map((row) => row !== undefined)).toEqual(expected.rows!.map((row) => row !== undefined));
        followed.rows!.forEach((row, index) => {
            if (row === undefined) return;
            const largest = Math.max(...row.map((value, id) => Math.abs(value - expected.rows![index]![id])));
            expect(largest, `row ${index}`).toBeLessThan(0.05);
        });
        for (const opened of [session, fresh.session]) await opened.dispose();
        for (const made of [sequence, fresh.sequence]) await made.dispose();
    });

    it.each([
        {tree: {width: 2, depth: 3}, policy: "greedy"},
        {tree: {width: 3, depth: 2}, policy: "strict"},
        {tree: {width: 4, depth: 1}, policy: "greedy"}
    ] as const)("T = 0, tree $tree.width x $tree.depth, $policy: target-only's tokens, every step a full tree", async ({tree, policy}) => {
        for (const head of [sharp, own])
            for (const argmaxFastPath of [true, false])
                for (const prompt of prompts) {
                    const options = {sampling: greedy, maxTokens: 24, ignoreEos: true};
                    const reference = await generate(target, undefined, prompt, {...options, gamma: 0});
                    const result = await generate(target, head, prompt, {...options, tree, policy: {kind: policy}, argmaxFastPath});
                    expect(result.tokens, prompt).toEqual(reference.tokens);
                    const {draftTokens, draftLengths} = result.telemetry;
                    // The head never lost the target's layers: each step drafted a whole tree of its depth.
                    expect(draftTokens).toBe(tree.width * levels(draftLengths));
                    expect(draftLengths.counts[tree.depth]).toBeGreaterThan(0);
                    expect(result.telemetry.drafters.byDrafter.get("eagle3")?.proposals).toBeGreaterThan(0);
                }
    });

    it("a chain with a head, or a head drafting greedily at T > 0, is refused, naming the option", async () => {
        const refused = (options: object) =>
            generate(target, sharp, prompts[0], {maxTokens: 4, tree: {width: 2, depth: 2}, ...options}).catch((error: unknown) => error);
        expect(await refused({drafter: "ngram+eagle3"})).toMatchObject({field: "tree"});
        expect(await refused({draftSampling: "greedy"})).toMatchObject({field: "tree"});
    });
});

describe.runIf(existsSync(targetPath) && existsSync(shippedHeadPath) && nativeBackendAvailable("cpu"))(
    "token trees from the shipped EAGLE-3 head (models/eagle3)",
    () => {
        let target: ModelBackend;
        let head: ModelBackend;
        beforeAll(async () => {
            target = await loadModelBackend(targetPath, {backend: "native", threads: 1});
            head = await loadModelBackend(shippedHeadPath, {backend: "native", threads: 1});
        });
        afterAll(async () => {
            await head?.dispose();
            await target?.dispose();
        });

        it("T = 0, tree 3x3: target-only's tokens, and the siblings add accepted tokens a chain of the same depth misses", async () => {
            let treeAccepted = 0;
            let chainAccepted = 0;
            for (const prompt of prompts) {
                const options = {sampling: greedy, maxTokens: 48, ignoreEos: true};
                const reference = await generate(target, undefined, prompt, {...options, gamma: 0});
                const tree = await generate(target, head, prompt, {...options, tree: {width: 3, depth: 3}});
                const chain = await generate(target, head, prompt, {...options, gamma: 3});
                expect(tree.tokens, prompt).toEqual(reference.tokens);
                // After paths through siblings too, the head read the kept path's layers: every step drafted its whole tree.
                const {draftTokens, draftLengths} = tree.telemetry;
                expect(draftTokens).toBe(3 * levels(draftLengths));
                treeAccepted += tree.telemetry.acceptedTokens / tree.telemetry.drafts;
                chainAccepted += chain.telemetry.acceptedTokens / chain.telemetry.drafts;
            }
            expect(treeAccepted).toBeGreaterThan(chainAccepted);
        });

        const runs = 1500;
        it(`T = 1, tree 3x2: the first three tokens follow the target's joint law (χ², ${runs} seeds)`, async () => {
            const prompt = "The";
            const {test, accepted} = await jointLawTest(target, {prompt, length: 3, prefixFloor: 1e-4, runs}, (seed) =>
                generate(target, head, prompt, {tree: {width: 3, depth: 2}, maxTokens: 3, seed})
            );
            expect(test.pValue).toBeGreaterThan(0.001);
            expect(test.degreesOfFreedom).toBeGreaterThan(20);
            // The head is accepted often here (about 0.4 draft tokens a run), and resampled from as often.
            expect(accepted).toBeGreaterThan(runs / 4);
        });
    }
);
