import {assertSameVocabulary} from "../../backend/assertSameVocabulary.js";
import {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {TokenizerMismatchError} from "../../errors.js";
import {crossTokenizerLabel} from "./CrossTokenizerDrafter.js";
import type {Drafter} from "./Drafter.js";
import {eagle3Label} from "./Eagle3Drafter.js";

/**
 * The ids a target and its draft model share (the engine masks the rest), by llama.cpp's pairing
 * rule (assertSameVocabulary) — unless the drafter drafts across tokenizers (`model:retokenize`,
 * alone or in a chain), which hands the target only ids of the target's own tokenizer, so any
 * vocabulary pairs. A refused pair's error names what differs and the spec that drafts across it.
 * An EAGLE-3 head is also checked against the target's layers and hidden size, and the target then
 * keeps the layers the head reads (Eagle3HeadBackend.pairWith).
 */
export function pairDraftModel(target: ModelBackend, draft: ModelBackend, drafter: Drafter | undefined, field = "draft"): number {
    if (drafter?.members.includes(crossTokenizerLabel) === true) return target.vocabularySize;
    try {
        const shared = assertSameVocabulary(target, draft, field);
        // An EAGLE-3 head also reads the target's layers: they must be the ones it was trained on.
        if (draft instanceof Eagle3HeadBackend && (drafter === undefined || drafter.members.includes(eagle3Label)))
            draft.pairWith(target, field);
        return shared;
    } catch (error) {
        if (!(error instanceof TokenizerMismatchError)) throw error;
        const message = error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message;
        throw new TokenizerMismatchError(
            `${message}; the drafter "${crossTokenizerLabel}" drafts with a model of another vocabulary`,
            field
        );
    }
}
