import {InvalidInputError} from "../errors.js";
import {expectedTokensPerStep} from "./speedupModel.js";

/**
 * The per-position acceptance α̂ under the i.i.d. model whose f_γ(α̂) − 1 equals a measured mean
 * number of accepted draft tokens per step (bisection; f_γ is increasing in α). Lets benchmarks
 * compare a measured speed-up with the analytic limit at the acceptance actually observed.
 */
export function inferAcceptance(meanAcceptedPerStep: number, gamma: number): number {
    if (!(meanAcceptedPerStep >= 0 && meanAcceptedPerStep <= gamma))
        throw new InvalidInputError(`must be in [0, γ = ${gamma}], got ${meanAcceptedPerStep}`, "meanAcceptedPerStep");
    let low = 0;
    let high = 1;
    for (let iteration = 0; iteration < 60; iteration++) {
        const middle = (low + high) / 2;
        if (expectedTokensPerStep(middle, gamma) - 1 < meanAcceptedPerStep) low = middle;
        else high = middle;
    }
    return (low + high) / 2;
}
