import type {ArgmaxCapableSequence, BackendSequence, TreeCapableSequence} from "./ModelBackend.js";

/** Whether `sequence` has the tree methods (evaluateTree and keepTreePath); its branch count is checked apart. */
export function supportsTrees(sequence: BackendSequence): sequence is TreeCapableSequence {
    return typeof sequence.evaluateTree === "function" && typeof sequence.keepTreePath === "function";
}

/** Whether `sequence` returns argmax ids without logit rows (evaluateArgmax). */
export function supportsArgmax(sequence: BackendSequence): sequence is ArgmaxCapableSequence {
    return typeof sequence.evaluateArgmax === "function";
}
