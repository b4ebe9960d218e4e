import {assertSameVocabulary} from "../../backend/assertSameVocabulary.js";
import type {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import {argmax} from "../../distributions/argmax.js";
import {processLogits} from "../../distributions/processLogits.js";
import {InvalidDrafterError} from "../../errors.js";
import type {Random} from "../../random/Random.js";
import {SeededChance} from "../../random/SeededChance.js";
import {sumOf} from "../../policies/rowOperations.js";
import {
    type Drafter,
    type DrafterSession,
    type DrafterStart,
    type DraftProposal,
    type DraftRequest,
    type DrawnDraft,
    noProposal
} from "./Drafter.js";
import {Eagle3HeadCalls, eagle3Label} from "./Eagle3HeadCalls.js";

export {eagle3Label};

/**
 * An EAGLE-3 head drafting from the target's own hidden states (the EAGLE-3 paper; llama.cpp's
 * draft-eagle3): the target keeps the inputs of three of its layers for every token it decodes, and
 * the head, a one-layer decoder with its own KV cache, reads them with each token to draft the next.
 *  - argmax-only steps, and greedy drafts (draftSampling "greedy", minConfidence 0) at any
 *    temperature, draft γ greedy ids in one native call;
 *  - otherwise each token comes from the head's row: sampled from its sampler row (passed as q, which
 *    keeps `strict` exact at any temperature; γ draws in one native call, with uniforms of the
 *    generation's generator) or, with draftSampling "greedy", its argmax verified as a q-less
 *    proposal; drafting stops early when the top probability is below minConfidence;
 *  - device-draw steps (DraftRequest.deviceDraws, sampled drafts, minConfidence 0) draw the same way
 *    but keep the rows in the head: only the ids and q(x) per token cross, and at a rejection q at the
 *    target's draws is read from the kept row (its logits were copied out of the head's graph when it
 *    drew, so no decode is needed).
 * A head with a reduced draft vocabulary (llama.cpp's d2t map) has its rows mapped back to the
 * target's ids inside the graph: ids outside the map get −∞. The head catches up with whatever the
 * target decoded since it last drafted (another chain member's proposal included), and drops what it
 * drafted past the target at its next draft.
 */
export class Eagle3Drafter implements Drafter {
    public readonly label = eagle3Label;
    public readonly members = [eagle3Label];

    public constructor(public readonly head: Eagle3HeadBackend) {}

    public get vocabularySize(): number {
        return this.head.vocabularySize;
    }

    public async start(context: DrafterStart): Promise<DrafterSession> {
        const {options, chance, telemetry, targetSequence} = context;
        if (targetSequence === undefined)
            throw new InvalidDrafterError("the eagle3 drafter needs the target's sequence (DrafterStart.targetSequence)", "drafter");
        // The engine has already cut the target to the shared ids; the head's rows are cut to match.
        const size = Math.min(assertSameVocabulary(context.target, this.head), context.target.vocabularySize);
        const head = new Eagle3HeadCalls(this.head.openHead(targetSequence), this.head.inlineBelowMilliseconds, telemetry);
        // Positions the head's KV cache holds: the target's context size.
        const positions = this.head.contextSize;
        const vocabularySize = head.vocabularySize;
        const greedyIds = size >= vocabularySize;
        const row = new Float64Array(vocabularySize);
        // Greedy drafts need no row unless minConfidence reads its top probability or the policy its logits (fuzzy).
        const greedyWithoutRows = options.draftSampling === "greedy" && options.minConfidence === 0 && options.policy.kind !== "fuzzy";

        const draftArgmax = async (history: Int32Array, count: number): Promise<number[] | undefined> => {
            const ids = new Int32Array(count);
            return (await head.draft(history, count, ids)) ? Array.from(ids) : undefined;
        };

        // Sampled drafts with the generation's seeded generator: γ draws in one native call, one uniform each as chance.choose takes.
        const random = chance instanceof SeededChance && options.draftSampling === "sample" ? chance.random : undefined;
        const drawRows = async (request: DraftRequest, history: Int32Array, generator: Random): Promise<DraftProposal> => {
            const count = request.maxTokens;
            const uniforms = Float64Array.from({length: count}, () => generator.nextDouble());
            const ids = new Int32Array(count);
            const [probabilities, logits] = [new Float64Array(count * size), new Float64Array(count * size)];
            const settings = {sampling: options.sampling, size, minConfidence: options.minConfidence};
            if (!(await head.drawDrafts(history, uniforms, settings, {ids, probabilities, logits}))) return noProposal(eagle3Label);
            const tokens = drawnTokens(ids);
            const rows = (values: Float64Array) => tokens.map((_token, index) => values.slice(index * size, (index + 1) * size));
            return {tokens, probs: rows(probabilities), logits: rows(logits), source: eagle3Label, consulted: [eagle3Label]};
        };

        // The target verifies on the device (DraftRequest.deviceDraws): the draws' rows stay in the head, q(x) alone crosses.
        const drawsOnDevice = random !== undefined && options.minConfidence === 0 && head.keepsRows;
        const drawKept = async (request: DraftRequest, history: Int32Array, uniform: () => number): Promise<DraftProposal> => {
            const count = request.maxTokens;
            const uniforms = Float64Array.from({length: count}, uniform);
            const ids = new Int32Array(count);
            const probabilities = new Float64Array(count);
            const settings = {sampling: options.sampling, size, minConfidence: 0, keepRows: true};
            if (!(await head.drawDrafts(history, uniforms, settings, {ids, probabilities, logits: new Float64Array(0)})))
                return noProposal(eagle3Label);
            const tokens = drawnTokens(ids);
            const draw = head.lastDraw;
            const drawn: DrawnDraft = {
                probabilities: Array.from(probabilities.subarray(0, tokens.length)),
                probabilitiesAt: (index, at) => Promise.resolve(Array.from(head.drawnAt(draw, index, at, size))),
                rowAt: (index) => Promise.resolve(head.drawnAt(draw, index, undefined, size))
            };
            return {tokens, drawn, source: eagle3Label, consulted: [eagle3Label]};
        };

        const draftRows = async (request: DraftRequest, history: Int32Array): Promise<DraftProposal> => {
            const deviceDraws = request.deviceDraws;
            if (deviceDraws !== undefined && drawsOnDevice) return drawKept(request, history, deviceDraws.uniform);
            if (random !== undefined) return drawRows(request, history, random);
            const tokens: number[] = [];
            const probs: Float64Array[] = [];
            const logitRows: Float64Array[] = [];
            if (!(await head.draft(history, 1, row))) return noProposal(eagle3Label);
            for (let position = 0; position < request.maxTokens; position++) {
                const logits = row.slice(0, size);
                const probabilities = processLogits(logits, options.sampling);
                if (options.minConfidence > 0 && probabilities[argmax(probabilities)] < options.minConfidence) break;
                const token = options.draftSampling === "greedy" ? argmax(logits) : chance.choose(probabilities, sumOf(probabilities));
                tokens.push(token);
                logitRows.push(logits);
                probs.push(probabilities);
                if (position < request.maxTokens - 1) await head.next(token, row);
            }
            // Greedy drafts were not drawn from their rows: they are verified as q-less proposals (q = δ_x).
            return {
                tokens,
                probs: options.draftSampling === "sample" ? probs : undefined,
                logits: logitRows,
                source: eagle3Label,
                consulted: [eagle3Label]
            };
        };

        return {
            supportsArgmax: greedyIds,
            drawsOnDevice,
            async propose(request: DraftRequest): Promise<DraftProposal> {
                const {history, maxTokens, argmaxOnly} = request;
                // The target holds every token of the history but the last, which the head reads with the last captured row.
                const length = history.length - 1;
                if (maxTokens < 1 || length < 1 || length + maxTokens > positions) return noProposal(eagle3Label);
                const tokens = Int32Array.from(history);
                const idsOnly = argmaxOnly || greedyWithoutRows;
                if (!idsOnly || !greedyIds) return draftRows(request, tokens);
                const ids = await draftArgmax(tokens, maxTokens);
                return ids === undefined ? noProposal(eagle3Label) : {tokens: ids, source: eagle3Label, consulted: [eagle3Label]};
            },
            observe() {},
            finish() {},
            dispose() {
                head.dispose();
                return Promise.resolve();
            }
        };
    }
}

/** A native draw's tokens: its ids up to the first −1 (a draft that stopped early), or all of them. */
function drawnTokens(ids: Int32Array): number[] {
    const end = ids.indexOf(-1);
    return Array.from(end < 0 ? ids : ids.subarray(0, end));
}
