import {restrictVocabulary} from "../backend/restrictVocabulary.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {processLogits} from "../distributions/processLogits.js";
import {addPosition, type DivergenceSums, emptyDivergenceSums} from "./DivergenceSums.js";
import {evaluateOnce} from "../backend/evaluateOnce.js";

export interface TeacherForcingInput {
    /** Context tokens, BOS included where the model has one. */
    readonly context: readonly number[];
    /** The continuation scored position by position (never empty for a useful result). */
    readonly continuation: readonly number[];
    /** Whether the continuation is data (a reference) rather than a model's own output. */
    readonly isReference: boolean;
    /** Softmax temperature of both models' rows; > 0 so cross-entropy stays finite. */
    readonly temperature: number;
    /** Speculative width γ of the run, for the per-position f_γ(α(s)) of the Disparate Impacts paper's S_T. */
    readonly gamma: number;
}

/**
 * Evaluates context + continuation once with each model and scores every position that predicts a
 * continuation token: the prefixes s are those of the continuation, as in E_{s~T} of the Disparate Impacts paper.
 * Full-support rows (no top-k/top-p) so D_T and KL measure the models, not a sampler's truncation.
 */
export async function teacherForcedSums(
    fullTarget: ModelBackend,
    fullDraft: ModelBackend,
    input: TeacherForcingInput
): Promise<DivergenceSums> {
    // Over the ids both models have, as the engine runs a pair whose vocabularies differ in length.
    const shared = Math.min(fullTarget.vocabularySize, fullDraft.vocabularySize);
    const target = restrictVocabulary(fullTarget, shared);
    const draft = restrictVocabulary(fullDraft, shared);
    const sums = emptyDivergenceSums();
    if (input.continuation.length === 0 || input.context.length === 0) return sums;
    const tokens = [...input.context, ...input.continuation];
    // Logits at index i predict tokens[i + 1]: the last context token predicts the first continuation token.
    const positions = input.continuation.map((_token, index) => input.context.length - 1 + index);
    const [targetRows, draftRows] = await Promise.all([
        evaluateOnce(target, tokens, {positions}),
        evaluateOnce(draft, tokens, {positions})
    ]);
    const sampling = {temperature: input.temperature, topK: 0, topP: 1, minP: 0};
    const p = new Float64Array(target.vocabularySize);
    const q = new Float64Array(draft.vocabularySize);
    targetRows.forEach((row, index) => {
        processLogits(row, sampling, p);
        processLogits(draftRows[index], sampling, q);
        addPosition(sums, p, q, input.gamma, input.isReference ? input.continuation[index] : undefined);
    });
    return sums;
}
