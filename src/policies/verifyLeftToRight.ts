import type {FinalTokenSource, PositionDiagnostic, VerificationResult, VerificationStep} from "./VerificationPolicy.js";

/** A policy's verdict on one draft position; `replacement` is the token emitted when it rejects. */
export interface PositionDecision {
    accepted: boolean;
    reason: string;
    values: Record<string, number>;
    replacement?: number;
}

/**
 * The loop every policy shares: examine draft positions left to right, stop at the first rejection
 * and emit its replacement, or emit a bonus token after accepting all γ. Policies differ only in
 * `decide` (and how the bonus is drawn), so the invariants — 1..γ+1 tokens, the accepted prefix
 * equals the draft prefix, one diagnostic per examined position — hold by construction.
 */
export function verifyLeftToRight(
    step: VerificationStep,
    decide: (position: number, draftToken: number) => PositionDecision,
    replacementSource: FinalTokenSource,
    bonus: () => number
): VerificationResult {
    const gamma = step.draftTokens.length;
    const positions: PositionDiagnostic[] = [];
    const emitted: number[] = [];
    for (let position = 0; position < gamma; position++) {
        const draftToken = step.draftTokens[position];
        const decision = decide(position, draftToken);
        positions.push({position, draftToken, accepted: decision.accepted, reason: decision.reason, values: decision.values});
        if (!decision.accepted) {
            emitted.push(decision.replacement!);
            return {acceptedCount: position, emitted, finalTokenSource: replacementSource, positions};
        }
        emitted.push(draftToken);
    }
    emitted.push(bonus());
    return {acceptedCount: gamma, emitted, finalTokenSource: "bonus", positions};
}
