import type {Chance} from "../random/Chance.js";
import {ScratchRow} from "./rowOperations.js";
import {verifySpeculativeSampling} from "./speculativeSampling.js";
import type {VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

/** Lossless rejection sampling with residual recovery and a bonus token; see speculativeSampling.ts. */
export function createStrictPolicy(): VerificationPolicy {
    const residual = new ScratchRow();
    return {
        kind: "strict",
        lossless: true,
        // No rescue rule: verifySpeculativeSampling reads targetLogits only for one.
        readsTargetLogits: false,
        releasesRows: true,
        verify(step: VerificationStep, chance: Chance) {
            return verifySpeculativeSampling(step, chance, residual);
        }
    };
}
