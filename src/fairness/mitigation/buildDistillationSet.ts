import type {ModelBackend} from "../../backend/ModelBackend.js";
import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {renderMessagesAsText} from "../../chat/renderMessagesAsText.js";
import {processLogits} from "../../distributions/processLogits.js";
import {generate} from "../../engine/generate.js";
import {InsufficientDataError, InvalidInputError} from "../../errors.js";
import {fitsContext} from "../../engine/fitsContext.js";
import type {TrainingSequence} from "../../foundry/model/llamaLossAndGradients.js";
import {type FairnessGrouping, groupBatteryItems} from "../groupBatteryItems.js";
import {referenceText} from "../measureFairnessItem.js";
import {evaluateOnce} from "../../backend/evaluateOnce.js";

/** One battery item as a distillation example: context + continuation, the target's rows on the continuation. */
export interface DistillationSequence extends TrainingSequence {
    readonly id: string;
    readonly continuation: "reference" | "target-output";
    /** Positions with a target row (the continuation's length): what D̂_T averages over. */
    readonly positions: number;
    readonly lossWeights: readonly number[];
    readonly targetDistributions: readonly (Float64Array | undefined)[];
}

/** One group T of the Disparate Impacts paper with every distillation example of it. */
export interface DistillationGroup {
    readonly name: string;
    readonly sequences: readonly DistillationSequence[];
}

export type DistillationContinuations = "reference-or-greedy" | "target-sampled";

export interface DistillationSetOptions {
    readonly by: FairnessGrouping;
    /** Continuation tokens per item: reference tokens kept, or target tokens generated. */
    readonly maxTokens: number;
    /**
     * Longest sequence the drafter may see (its context length): an item whose prompt (BOS included)
     * and maxTokens do not fit it (fitsContext) is skipped, never cut, and passed to onSkipped.
     */
    readonly contextSize: number;
    readonly onSkipped?: (id: string) => void;
    /** Stop strings of the target's greedy runs, as analyze uses them. */
    readonly stop?: readonly string[];
    /**
     * What the drafter imitates. "reference-or-greedy" (default): the item's reference, else the
     * target's greedy output, the continuations analyze scores. "target-sampled": always a continuation
     * sampled from the target at temperature 1, references ignored — the Disparate Impacts paper D.1, where the teacher
     * "generates up to MAX_GEN_TOKENS tokens (sampling)" (its sampling temperature is not published;
     * 1 samples the target's own distribution).
     */
    readonly continuations?: DistillationContinuations;
    /** Seed of the target's runs (item i uses seed + i, as analyze does). */
    readonly seed: number;
    readonly onProgress?: (done: number, total: number) => void;
}

/**
 * The training data of s-CDF, built once: per item, context = BOS + prompt tokens and continuation
 * = the item's reference (tokenized as analyze scores it) or the target's own greedy output, and the
 * target's full-support rows at temperature 1 at every continuation position — exactly the p of
 * D_T = E[−Σ p log q] that analyze measures. The target is only evaluated, never written. Prompt
 * positions get loss weight 0: the drafter only ever drafts continuation tokens.
 */
export async function buildDistillationSet(
    target: ModelBackend,
    items: readonly BatteryItem[],
    options: DistillationSetOptions
): Promise<DistillationGroup[]> {
    if (!Number.isInteger(options.maxTokens) || options.maxTokens < 1)
        throw new InvalidInputError(`must be an integer >= 1, got ${options.maxTokens}`, "maxTokens");
    const groups = groupBatteryItems(items, options.by);
    const contextSize = Math.min(target.contextSize, options.contextSize);
    const bos = target.bosToken == null ? [] : [target.bosToken];
    const greedy = {temperature: 0, topK: 0, topP: 1, minP: 0};
    const fullSupport = {temperature: 1, topK: 0, topP: 1, minP: 0};
    const itemIndex = new Map(items.map((item, index) => [item, index]));
    let done = 0;
    const result: DistillationGroup[] = [];
    for (const group of groups) {
        const sequences: DistillationSequence[] = [];
        let skippedInGroup = 0;
        for (const item of group.items) {
            const index = itemIndex.get(item)!;
            const text = item.prompt ?? renderMessagesAsText(item.messages ?? []);
            const promptTokens = target.tokenize(text);
            if (!fitsContext(bos.length + promptTokens.length, options.maxTokens, contextSize)) {
                options.onSkipped?.(item.id);
                skippedInGroup++;
                options.onProgress?.(++done, items.length);
                continue;
            }
            const isReference = options.continuations !== "target-sampled" && item.reference !== undefined && item.reference !== "";
            let continuation: number[];
            if (isReference) {
                continuation = target.tokenize(referenceText(text, item.reference!)).slice(0, options.maxTokens);
            } else {
                const sampling = options.continuations === "target-sampled" ? fullSupport : greedy;
                const run = await generate(target, undefined, promptTokens, {
                    policy: {kind: "strict"},
                    sampling,
                    maxTokens: options.maxTokens,
                    stop: options.stop ?? [],
                    seed: options.seed + index,
                    gamma: 0
                });
                continuation = [...run.tokens];
            }
            done++;
            options.onProgress?.(done, items.length);
            // Nothing to imitate (the target stopped at once, or an empty reference): the item adds no position.
            if (continuation.length === 0) continue;
            const context = [...bos, ...promptTokens];
            if (context.length === 0) continue;
            const tokens = [...context, ...continuation];
            // Row at index i predicts tokens[i + 1]: the last context token predicts the first continuation token.
            const firstPosition = context.length - 1;
            const positions = continuation.map((_token, offset) => firstPosition + offset);
            const rows = await evaluateOnce(target, tokens, {positions});
            const targetDistributions: (Float64Array | undefined)[] = new Array<Float64Array | undefined>(tokens.length - 1).fill(
                undefined
            );
            rows.forEach((row, offset) => {
                targetDistributions[firstPosition + offset] = processLogits(row, fullSupport, new Float64Array(target.vocabularySize));
            });
            const lossWeights = targetDistributions.map((row) => (row === undefined ? 0 : 1));
            sequences.push({
                id: item.id,
                continuation: isReference ? "reference" : "target-output",
                positions: continuation.length,
                tokens,
                lossWeights,
                targetDistributions
            });
        }
        if (sequences.length === 0 && skippedInGroup === group.items.length)
            throw new InsufficientDataError(
                `no item of group "${group.name}" fits the ${contextSize}-token context with ${options.maxTokens} generated tokens`,
                "items"
            );
        if (sequences.length === 0)
            throw new InvalidInputError(`group "${group.name}" has no item with a non-empty continuation to distil`, "items");
        result.push({name: group.name, sequences});
    }
    return result;
}
