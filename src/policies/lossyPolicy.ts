import type {Chance} from "../random/Chance.js";
import {ScratchRow} from "./rowOperations.js";
import {logitGapToTop} from "./semanticConsistencyGate.js";
import {verifySpeculativeSampling} from "./speculativeSampling.js";
import type {VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

/**
 * The Calibrated SD paper's "Static Lossy SD" baseline: standard verification, and a rejected draft token is
 * rescued whenever the confidence gate alone passes, z(x) − z(t*) ≥ ln τ with one global τ. No
 * memory. The seed gives no default τ (it tunes it per task), so τ is required.
 */
export function createLossyPolicy(options: {readonly tau: number}): VerificationPolicy {
    const residual = new ScratchRow();
    const logTau = Math.log(options.tau);
    return {
        kind: "lossy",
        lossless: false,
        verify(step: VerificationStep, chance: Chance) {
            return verifySpeculativeSampling(step, chance, residual, (currentStep, position, draftToken) => {
                const logits = currentStep.targetLogits?.[position];
                const {gap} = logitGapToTop(logits ?? currentStep.targetProbs[position], draftToken, logits != null);
                const rescued = gap >= logTau;
                return {rescued, reason: rescued ? "rescued-by-gate" : "rejected-by-gate", values: {logitGap: gap, logTau}};
            });
        }
    };
}
