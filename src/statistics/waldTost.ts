import {InvalidInputError} from "../errors.js";
import {type TostResult, tostFromStandardError} from "./tostFromStandardError.js";

export interface ArmCounts {
    readonly successes: number;
    readonly total: number;
}

/**
 * Unpaired two-proportion TOST with the Wald (unpooled) standard error
 * √(p_t(1−p_t)/n_t + p_s(1−p_s)/n_s), testing the difference p_spec − p_target against ±margin
 * (margin in proportion units: 3 percentage points is 0.03).
 */
export function waldTost(target: ArmCounts, speculative: ArmCounts, margin: number, alpha = 0.05): TostResult {
    checkArm(target, "target");
    checkArm(speculative, "speculative");
    const targetProportion = target.successes / target.total;
    const speculativeProportion = speculative.successes / speculative.total;
    const variance =
        (targetProportion * (1 - targetProportion)) / target.total +
        (speculativeProportion * (1 - speculativeProportion)) / speculative.total;
    return tostFromStandardError(speculativeProportion - targetProportion, Math.sqrt(variance), margin, alpha);
}

function checkArm(arm: ArmCounts, field: string): void {
    if (!Number.isInteger(arm.total) || arm.total < 1) {
        throw new InvalidInputError(`must be a positive integer, got ${arm.total}`, `${field}.total`);
    }
    if (!Number.isInteger(arm.successes) || arm.successes < 0 || arm.successes > arm.total) {
        throw new InvalidInputError(`must be an integer in [0, ${arm.total}], got ${arm.successes}`, `${field}.successes`);
    }
}
