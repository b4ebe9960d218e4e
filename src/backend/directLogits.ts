import type {LlamaContext, LlamaContextSequence, Token} from "node-llama-cpp";
import {InvalidDistributionError} from "../errors.js";

/**
 * The fast logits path: node-llama-cpp 3.22 has no public call that returns raw logits as a typed
 * array, and its native addon has none either (the only typed-array result is getEmbedding). The
 * cheapest exact route to a full row is the native `sampleToken(batchLogitIndex, sampler, false,
 * false, true)`, which returns a flat [token, logit, token, logit, …] array. `controlledEvaluate`
 * calls the same function but then also resolves a sampler config per position and builds a Map
 * per row; reading the flat array straight into a Float64Array skips that (~30% of the cost at
 * V = 32,000). What remains is native: a full sort of the candidates (forced whenever full logits
 * are requested) and one JS number per entry.
 *
 * This uses PRIVATE members of node-llama-cpp (`LlamaContextSequence._decodeTokens`, `_tokenMeter`,
 * `_contextShift`, `LlamaContext._ctx`, `_llama._bindings.AddonSampler`, `LlamaModel._model`),
 * checked by shape in `createDirectLogitsReader`; when any is missing the caller falls back to
 * `controlledEvaluate`. A test compares both paths on a fixture, so a node-llama-cpp upgrade that
 * changes their meaning fails loudly.
 */

/** Native sampler of the addon; applyConfig({temperature: 0}) leaves only llama.cpp's greedy sampler. */
interface AddonSampler {
    applyConfig(config: {temperature: number}): void;
    dispose(): void;
}

interface InternalSequence {
    _decodeTokens(
        tokens: Token[],
        logits: boolean[],
        evaluationPriority: number,
        tokenMeter: unknown,
        contextShiftOptions: unknown,
        logitDataMapper: (batchLogitIndex: number, tokenIndex: number) => unknown
    ): Promise<unknown[]>;
    _tokenMeter: unknown;
    _contextShift: unknown;
}

interface InternalContext {
    _ctx: {
        sampleToken(
            batchLogitIndex: number,
            sampler: AddonSampler,
            probabilities: boolean,
            confidence: boolean,
            logits: boolean
        ): Promise<unknown>;
    };
    _llama: {_bindings: {AddonSampler: new (model: unknown) => AddonSampler}};
}

/** node-llama-cpp's default evaluation priority (it only orders batches shared by several sequences). */
const defaultEvaluationPriority = 5;

export interface DirectLogitsReader {
    /**
     * Appends `tokens` to the sequence in one decode and returns the raw logits at each of
     * `positions` (indexes into `tokens`, in the given order). Callers must not run two operations
     * on the sequence at once: unlike controlledEvaluate this takes no lock of node-llama-cpp's.
     */
    evaluate(tokens: readonly Token[], positions: readonly number[]): Promise<Float64Array[]>;
    /** Same decode, but only llama.cpp's greedy choice (first maximum = lowest id) at each position. */
    evaluateArgmax(tokens: readonly Token[], positions: readonly number[]): Promise<number[]>;
    dispose(): void;
}

/** A reader for `sequence` of `context`, or undefined when this node-llama-cpp lacks the internals it needs. */
export function createDirectLogitsReader(
    context: LlamaContext,
    sequence: LlamaContextSequence,
    vocabularySize: number
): DirectLogitsReader | undefined {
    const internalSequence = sequence as unknown as Partial<InternalSequence>;
    const internalContext = context as unknown as Partial<InternalContext>;
    const nativeModel = (context.model as unknown as {_model?: unknown})._model;
    const AddonSamplerClass = internalContext._llama?._bindings?.AddonSampler;
    if (
        typeof internalSequence._decodeTokens !== "function" ||
        internalSequence._tokenMeter == null ||
        internalSequence._contextShift == null ||
        typeof internalContext._ctx?.sampleToken !== "function" ||
        typeof AddonSamplerClass !== "function" ||
        nativeModel == null
    )
        return undefined;

    const checkedSequence = internalSequence as InternalSequence;
    const nativeContext = (internalContext as InternalContext)._ctx;
    let sampler: AddonSampler;
    try {
        sampler = new AddonSamplerClass(nativeModel);
        sampler.applyConfig({temperature: 0});
    } catch {
        return undefined;
    }

    const decode = (tokens: readonly Token[], positions: readonly number[], read: (batchLogitIndex: number) => Promise<unknown>) => {
        const wanted: boolean[] = [];
        for (const position of positions) wanted[position] = true;
        // The mapper runs once per wanted position right after the decode, while the batch's logits
        // are still in the context; node-llama-cpp chains the returned promises one after another.
        return checkedSequence._decodeTokens(
            tokens.slice(),
            wanted,
            defaultEvaluationPriority,
            checkedSequence._tokenMeter,
            checkedSequence._contextShift,
            read
        );
    };

    return {
        async evaluate(tokens, positions) {
            const results = await decode(tokens, positions, (batchLogitIndex) =>
                nativeContext.sampleToken(batchLogitIndex, sampler, false, false, true)
            );
            return positions.map((position) => rowFromFlatPairs(results[position], vocabularySize, position));
        },
        async evaluateArgmax(tokens, positions) {
            // Without the logits flag sampleToken only runs the greedy sampler: no sort, no transfer.
            const results = await decode(tokens, positions, (batchLogitIndex) =>
                nativeContext.sampleToken(batchLogitIndex, sampler, false, false, false)
            );
            return positions.map((position) => tokenFromResult(results[position], vocabularySize, position));
        },
        dispose() {
            sampler.dispose();
        }
    };
}

/** sampleToken returns the token alone or [token, …] depending on the flags; accept both. */
function tokenFromResult(result: unknown, vocabularySize: number, position: number): number {
    const token = Array.isArray(result) ? (result[0] as unknown) : result;
    if (typeof token !== "number" || !(token >= 0 && token < vocabularySize))
        throw new InvalidDistributionError(`expected a token id in [0, ${vocabularySize}) at position ${position}, got ${String(token)}`);
    return token;
}

/** Copies sampleToken's [token, logit, …] pairs (entry 3 of its result) into a row indexed by token. */
function rowFromFlatPairs(result: unknown, vocabularySize: number, position: number): Float64Array {
    const pairs = Array.isArray(result) ? (result[3] as unknown) : undefined;
    if (!Array.isArray(pairs) || pairs.length !== 2 * vocabularySize)
        throw new InvalidDistributionError(
            `expected ${vocabularySize} (token, logit) pairs at position ${position}, got ${Array.isArray(pairs) ? pairs.length / 2 : "none"}`
        );
    const row = new Float64Array(vocabularySize);
    for (let index = 0; index < pairs.length; index += 2) {
        const token = pairs[index] as number;
        if (!(token >= 0 && token < vocabularySize))
            throw new InvalidDistributionError(`token ${token} at position ${position} is outside [0, ${vocabularySize})`);
        row[token] = pairs[index + 1] as number;
    }
    return row;
}
