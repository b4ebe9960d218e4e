import type {Chance} from "../random/Chance.js";
import type {CorrectionCounts} from "./CorrectionMemory.js";
import {ScratchRow} from "./rowOperations.js";
import {logitGapToTop} from "./semanticConsistencyGate.js";
import {verifySpeculativeSampling} from "./speculativeSampling.js";
import type {VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

export interface CalibratedPolicyOptions {
    /** Minimum (draft, target) pair count for a rescue candidate (secondary sources: 6). */
    readonly frequencyThreshold: number;
    /** Gate: accept iff p(x)/p(t*) ≥ τ (secondary sources: 0.01). */
    readonly tau: number;
    /** Phase 2 of the memory: count every verified divergence as it happens. */
    readonly onlineUpdate: boolean;
    readonly memory: CorrectionCounts;
}

/**
 * Calibrated Speculative Decoding (the Calibrated SD paper). Standard verification first; a rejected draft token
 * x, with t the token the target verified instead, is rescued only if BOTH
 *  - Online Correction Memory: count(x, t) ≥ frequencyThreshold (checked before this step's update), and
 *  - Semantic Consistency Gating: z(x) − z(t*) ≥ ln τ in raw target logits.
 * With onlineUpdate, every divergence (x, t) is then counted, rescued or not (Algorithm 1, line 18).
 * Not lossless. The memory is mutated in place: pass one instance per scope you want it shared in.
 */
export function createCalibratedPolicy(options: CalibratedPolicyOptions): VerificationPolicy {
    const residual = new ScratchRow();
    const logTau = Math.log(options.tau);
    return {
        kind: "calibrated",
        lossless: false,
        verify(step: VerificationStep, chance: Chance) {
            return verifySpeculativeSampling(step, chance, residual, (currentStep, position, draftToken, recoveredToken) => {
                const count = options.memory.count(draftToken, recoveredToken);
                const logits = currentStep.targetLogits?.[position];
                const {gap} = logitGapToTop(logits ?? currentStep.targetProbs[position], draftToken, logits != null);
                const frequent = count >= options.frequencyThreshold;
                const gated = gap >= logTau;
                if (options.onlineUpdate && draftToken !== recoveredToken) options.memory.record(draftToken, recoveredToken);
                return {
                    rescued: frequent && gated,
                    reason: frequent && gated ? "rescued-by-memory-and-gate" : !frequent ? "rejected-infrequent-pair" : "rejected-by-gate",
                    values: {pairCount: count, logitGap: gap, logTau}
                };
            });
        }
    };
}
