import {TokenizerMismatchError} from "../errors.js";
import type {ModelBackend} from "./ModelBackend.js";
import type {VocabularyDescription} from "./VocabularyDescription.js";

/** Most tokens a draft and a target vocabulary may differ by (llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE). */
export const maxVocabularySizeDifference = 128;
/** First id whose text is compared (llama.cpp's SPEC_VOCAB_CHECK_START_TOKEN_ID): ids below are special tokens families renumber freely. */
export const firstComparedTokenId = 5;

/**
 * Refuses a draft/target pair whose token ids do not mean the same thing, by llama.cpp's rule
 * (common/speculative.cpp, common_speculative_are_compatible): the tokenizer model is equal, BOS and
 * EOS are added alike (and are the same id where added), the sizes differ by at most 128 tokens,
 * and every token text from id 5 up to the shorter vocabulary is equal. Returns the shared size,
 * min(target, draft): ids at or beyond it exist in one model only and are masked by the engine
 * (restrictVocabulary).
 *
 * Backends that cannot describe their vocabulary (test doubles) are held to the stricter rule of
 * equal sizes and equal vocabulary identities: without token texts there is nothing else to compare.
 */
export function assertSameVocabulary(target: ModelBackend, draft: ModelBackend, field = "draft"): number {
    const targetVocabulary = target.vocabularyDescription?.();
    const draftVocabulary = draft.vocabularyDescription?.();
    if (targetVocabulary === undefined || draftVocabulary === undefined) {
        if (target.vocabularySize !== draft.vocabularySize)
            throw new TokenizerMismatchError(`target has ${target.vocabularySize} tokens, draft has ${draft.vocabularySize}`, field);
        const targetIdentity = target.vocabularyIdentity();
        const draftIdentity = draft.vocabularyIdentity();
        if (targetIdentity !== draftIdentity)
            throw new TokenizerMismatchError(
                `target and draft tokenizers differ (vocabulary identity ${targetIdentity.slice(0, 12)}… vs ${draftIdentity.slice(0, 12)}…)`,
                field
            );
        return target.vocabularySize;
    }
    checkCompatible(targetVocabulary, draftVocabulary, field);
    return Math.min(target.vocabularySize, draft.vocabularySize);
}

/** Whether llama.cpp's rule pairs the two (assertSameVocabulary without the error). */
export function sharesVocabulary(target: ModelBackend, draft: ModelBackend): boolean {
    try {
        assertSameVocabulary(target, draft);
        return true;
    } catch (error) {
        if (error instanceof TokenizerMismatchError) return false;
        throw error;
    }
}

/** Pairs already found compatible (a 152k-token comparison costs milliseconds; serve pairs on every request). */
const compatible = new WeakMap<VocabularyDescription, WeakSet<VocabularyDescription>>();

function checkCompatible(target: VocabularyDescription, draft: VocabularyDescription, field: string): void {
    if (compatible.get(target)?.has(draft) === true) return;
    if (target.model !== draft.model)
        throw new TokenizerMismatchError(
            `the target's tokenizer model is ${String(target.model)}, the draft's ${String(draft.model)}`,
            field
        );
    if (target.addBos !== draft.addBos || (target.addBos === true && target.bosToken !== draft.bosToken))
        throw new TokenizerMismatchError(
            `BOS differs: the target ${describeSpecial(target.addBos, target.bosToken)}, the draft ${describeSpecial(draft.addBos, draft.bosToken)}`,
            field
        );
    if (target.addEos !== draft.addEos || (target.addEos === true && target.eosToken !== draft.eosToken))
        throw new TokenizerMismatchError(
            `EOS differs: the target ${describeSpecial(target.addEos, target.eosToken)}, the draft ${describeSpecial(draft.addEos, draft.eosToken)}`,
            field
        );
    const difference = Math.abs(target.tokens.length - draft.tokens.length);
    if (difference > maxVocabularySizeDifference)
        throw new TokenizerMismatchError(
            `target has ${target.tokens.length} tokens, draft has ${draft.tokens.length}: ${difference} apart, at most ${maxVocabularySizeDifference} allowed`,
            field
        );
    const shared = Math.min(target.tokens.length, draft.tokens.length);
    for (let id = firstComparedTokenId; id < shared; id++)
        if (target.tokens[id] !== draft.tokens[id])
            throw new TokenizerMismatchError(
                `token ${id} differs: the target's is ${JSON.stringify(target.tokens[id])}, the draft's ${JSON.stringify(draft.tokens[id])}`,
                field
            );
    let pairs = compatible.get(target);
    if (pairs === undefined) compatible.set(target, (pairs = new WeakSet()));
    pairs.add(draft);
}

function describeSpecial(added: boolean | undefined, id: number | undefined): string {
    return `${added === undefined ? "leaves adding it to the default" : added ? "adds it" : "does not add it"} (id ${id ?? "none"})`;
}
