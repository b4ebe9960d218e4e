import {TokenizerMismatchError} from "../errors.js";
import type {ModelBackend} from "./ModelBackend.js";

/**
 * Refuses a draft/target pair whose tokenizers differ: speculative decoding compares token ids
 * across the two models, which is meaningless unless both map text to ids identically.
 */
export function assertSameVocabulary(target: ModelBackend, draft: ModelBackend, field = "draft"): void {
    if (target.vocabularySize !== draft.vocabularySize)
        throw new TokenizerMismatchError(
            `target has ${target.vocabularySize} tokens, draft has ${draft.vocabularySize}`, field
        );
    const targetIdentity = target.vocabularyIdentity();
    const draftIdentity = draft.vocabularyIdentity();
    if (targetIdentity !== draftIdentity)
        throw new TokenizerMismatchError(
            `target and draft tokenizers differ (vocabulary identity ${targetIdentity.slice(0, 12)}… vs ${draftIdentity.slice(0, 12)}…)`,
            field
        );
}
