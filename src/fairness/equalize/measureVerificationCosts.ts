import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidInputError} from "../../errors.js";
import type {VerificationCosts} from "./predictGammaSpeedups.js";

export interface VerificationCostOptions {
    /** Measures t_T(k) for k = 1..largestBatch. */
    readonly largestBatch: number;
    /** Tokens both models read first (a realistic KV cache length); batches are drawn from them too. */
    readonly context: readonly number[];
    /** Temperature 0: the engine's argmax fast path, which returns ids instead of logit rows. */
    readonly argmaxOnly: boolean;
    /** Timed passes over every batch size; default 20. */
    readonly repetitions?: number;
}

/**
 * The target's verification cost curve t_T(1..K) and the draft's t_D, measured directly: the
 * analysis runs only ever verify γ+1 tokens, and t_T(k) at another k is not a proportion of it on a
 * compute-bound CPU. Each pass evaluates a k-token batch with every position requested — what the
 * engine asks for — and rolls it back, so every batch sees the same cache length. Batch sizes
 * alternate within a pass so load drift spreads over all of them; an untimed first pass takes
 * llama.cpp's first-use allocation for each size; medians keep a loaded machine's spikes out.
 */
export async function measureVerificationCosts(target: ModelBackend, draft: ModelBackend, options: VerificationCostOptions): Promise<VerificationCosts> {
    const repetitions = options.repetitions ?? 20;
    if (!Number.isInteger(options.largestBatch) || options.largestBatch < 1)
        throw new InvalidInputError(`must be a positive integer, got ${options.largestBatch}`, "largestBatch");
    if (!Number.isInteger(repetitions) || repetitions < 1) throw new InvalidInputError(`must be a positive integer, got ${repetitions}`, "repetitions");
    if (options.context.length === 0) throw new InvalidInputError("is empty; the batches are drawn from it", "context");
    const room = Math.min(target.contextSize, draft.contextSize) - options.context.length;
    if (room < options.largestBatch)
        throw new InvalidInputError(`leaves room for ${room} more tokens; a ${options.largestBatch}-token batch does not fit`, "context");

    const batch = (size: number) => Array.from({length: size}, (_token, index) => options.context[index % options.context.length]);
    const targetSequence = await target.createSequence();
    let draftSequence: BackendSequence | undefined;
    try {
        draftSequence = await draft.createSequence();
        await targetSequence.evaluate(options.context, {positions: []});
        await draftSequence.evaluate(options.context, {positions: []});
        const argmaxOnly = options.argmaxOnly && targetSequence.evaluateArgmax != null && draftSequence.evaluateArgmax != null;
        const targetSamples = Array.from({length: options.largestBatch}, (): number[] => []);
        const draftSamples: number[] = [];
        for (let pass = 0; pass <= repetitions; pass++) {
            for (let size = 1; size <= options.largestBatch; size++) {
                const tokens = batch(size);
                const milliseconds = await timed(() => evaluate(targetSequence, tokens, tokens.map((_token, index) => index), argmaxOnly));
                await targetSequence.rollback(size);
                if (pass > 0) targetSamples[size - 1].push(milliseconds);
            }
            const sequence = draftSequence;
            const milliseconds = await timed(() => evaluate(sequence, batch(1), [0], argmaxOnly));
            await draftSequence.rollback(1);
            if (pass > 0) draftSamples.push(milliseconds);
        }
        return {targetMilliseconds: targetSamples.map(median), draftMilliseconds: median(draftSamples)};
    } finally {
        await targetSequence.dispose();
        await draftSequence?.dispose();
    }
}

async function evaluate(sequence: BackendSequence, tokens: readonly number[], positions: readonly number[], argmaxOnly: boolean): Promise<void> {
    if (argmaxOnly) await sequence.evaluateArgmax!(tokens, {positions});
    else await sequence.evaluate(tokens, {positions});
}

async function timed(run: () => Promise<void>): Promise<number> {
    const started = performance.now();
    await run();
    return performance.now() - started;
}

function median(values: readonly number[]): number {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
