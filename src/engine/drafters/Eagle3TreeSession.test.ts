import {describe, expect, it} from "vitest";
import type {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import type {NativeEagle3HeadHandle} from "../../backend/Eagle3HeadHandle.js";
import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import type {NativeDecodeResult} from "../../backend/nativeAddon.js";
import {processLogits} from "../../distributions/processLogits.js";
import {topIds} from "../../policies/treeVerification.js";
import {SeededChance} from "../../random/SeededChance.js";
import {parseGenerationOptions} from "../GenerationOptions.js";
import {GenerationTelemetry} from "../GenerationTelemetry.js";
import {eagle3TreeBranches, Eagle3TreeSession} from "./Eagle3TreeSession.js";

const vocabularySize = 12;

/** A head's logit row after `tokens`: a fixed function of them, different for every prefix. */
function rowAfter(tokens: readonly number[]): Float64Array {
    const seed = tokens.reduce((hash, token) => (hash * 31 + token + 7) % 1_000_003, 17);
    return Float64Array.from({length: vocabularySize}, (_value, id) => 3 * Math.sin(seed * 0.37 + id * 1.91));
}

/** A fake head: its rows depend on the history it drafts after and the tokens fed since; `available` false: no captured layers. */
function fakeHead(options: {available?: boolean; contextSize?: number} = {}) {
    const fed: number[][] = [];
    let tokens: number[] = [];
    const result = (error?: string): NativeDecodeResult => ({
        decodeMilliseconds: 0,
        transferMilliseconds: 0,
        samplingMilliseconds: 0,
        groups: [{transferMilliseconds: 0, samplingMilliseconds: 0, ...(error !== undefined ? {error} : {})}]
    });
    const write = (destination: Int32Array | Float64Array): void => destination.set(rowAfter(tokens));
    // What a tree session calls of a head.
    const handle: Pick<NativeEagle3HeadHandle, "vocabularySize" | "draft" | "next" | "draftNow" | "nextNow" | "dispose"> = {
        vocabularySize,
        draft(history, _count, destination) {
            if (options.available === false) return Promise.resolve(result("not captured"));
            tokens = Array.from(history);
            fed.push([...tokens]);
            write(destination);
            return Promise.resolve(result());
        },
        next(token, destination) {
            tokens.push(token);
            fed.push([...tokens]);
            write(destination);
            return Promise.resolve(result());
        },
        draftNow: () => null,
        nextNow: () => null,
        dispose() {}
    };
    const head = {
        vocabularySize,
        contextSize: options.contextSize ?? 1024,
        inlineBelowMilliseconds: 0,
        vocabularyIdentity: () => "fake",
        openHead: () => handle
    } as unknown as Eagle3HeadBackend;
    return {head, fed};
}

const target = {vocabularySize, vocabularyIdentity: () => "fake"} as unknown as ModelBackend;

function session(head: Eagle3HeadBackend, shape: {width: number; depth: number}, temperature: number): Eagle3TreeSession {
    return Eagle3TreeSession.start(head, shape, {
        target,
        targetSequence: {} as BackendSequence,
        options: parseGenerationOptions({sampling: {temperature, topK: 0, topP: 1, minP: 0}, tree: shape}),
        chance: new SeededChance(3),
        telemetry: new GenerationTelemetry()
    });
}

describe("Eagle3TreeSession (a fake head)", () => {
    const history = [1, 4, 2, 9];

    it("T = 0: each depth is the top ids of the spine's row there, the first of them continuing the spine", async () => {
        const {head, fed} = fakeHead();
        const tree = await session(head, {width: 3, depth: 4}, 0).propose(history, 4, true);
        expect(tree.rows).toBeUndefined();
        expect(tree.parents).toEqual([-1, -1, -1, 0, 0, 0, 3, 3, 3, 6, 6, 6]);
        let spine = [...history];
        for (let level = 0; level < 4; level++) {
            const children = tree.tokens.slice(3 * level, 3 * level + 3);
            expect(children).toEqual(topIds(rowAfter(spine), 3));
            spine = [...spine, children[0]];
        }
        // One draft, then the spine's tokens but the last fed one by one: DEPTH head calls.
        expect(fed).toEqual(
            [0, 1, 2, 3].map((level) => [...history, ...tree.tokens.filter((_token, node) => node % 3 === 0 && node < 3 * level)])
        );
    });

    it("T = 1: every node with children carries the sampler row they were drawn from; leaves carry none", async () => {
        const {head} = fakeHead();
        const sampling = {temperature: 1, topK: 0, topP: 1, minP: 0};
        for (let draw = 0; draw < 20; draw++) {
            const tree = await session(head, {width: 2, depth: 3}, 1).propose(history, 3, false);
            const spine = [0, 2, 4];
            expect(tree.parents).toEqual([-1, -1, 0, 0, 2, 2]);
            expect(tree.rows![0]).toEqual(processLogits(rowAfter(history), sampling));
            expect(tree.rows![spine[0] + 1]).toEqual(processLogits(rowAfter([...history, tree.tokens[0]]), sampling));
            expect(tree.rows![spine[1] + 1]).toEqual(processLogits(rowAfter([...history, tree.tokens[0], tree.tokens[2]]), sampling));
            for (const leaf of [1, 3, 4, 5]) expect(tree.rows![leaf + 1]).toBeUndefined();
            for (const level of [0, 1, 2]) expect(tree.tokens[2 * level]).not.toBe(tree.tokens[2 * level + 1]);
        }
    });

    it("a head without the target's layers, or without room, drafts an empty tree", async () => {
        const unavailable = fakeHead({available: false}).head;
        expect(await session(unavailable, {width: 2, depth: 3}, 0).propose(history, 3, true)).toEqual({tokens: [], parents: []});
        expect(await session(unavailable, {width: 2, depth: 3}, 1).propose(history, 3, false)).toEqual({tokens: [], parents: [], rows: []});
        // The head's context holds 5 positions: after 3 held by the target, a tree 2 deep.
        const small = fakeHead({contextSize: 5}).head;
        expect((await session(small, {width: 2, depth: 3}, 0).propose(history, 3, true)).tokens).toHaveLength(4);
    });

    it("a tree takes the spine's branch and one per sibling", () => {
        expect(eagle3TreeBranches({width: 1, depth: 5})).toBe(1);
        expect(eagle3TreeBranches({width: 3, depth: 4})).toBe(9);
    });
});
