import {InvalidInputError} from "../errors.js";

/**
 * Cohen's h effect size between two proportions, signed as speculative minus target:
 * h = 2·asin√p_spec − 2·asin√p_target. This is the sign convention of the TAIS paper's Table 3
 * (0.790 → 0.780 gives −0.024); its §B.6 formula writes the opposite order, but only |h| enters
 * the TAIS classification, so the sign is a reporting convention.
 */
export function cohensH(speculativeProportion: number, targetProportion: number): number {
    checkProportion(speculativeProportion, "speculativeProportion");
    checkProportion(targetProportion, "targetProportion");
    return 2 * Math.asin(Math.sqrt(speculativeProportion)) - 2 * Math.asin(Math.sqrt(targetProportion));
}

function checkProportion(value: number, field: string): void {
    if (!(value >= 0 && value <= 1)) {
        throw new InvalidInputError(`must be a proportion in [0, 1], got ${value}`, field);
    }
}
