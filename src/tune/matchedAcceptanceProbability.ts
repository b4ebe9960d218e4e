import {InvalidInputError} from "../errors.js";

/**
 * The per-token acceptance probability p of the `random` policy whose acceptance rate matches
 * `acceptanceRate`, given how often each draft position was proposed (`draftedPerPosition[k]`:
 * steps that drafted at least k + 1 tokens; γ ones for fixed-length drafts). Verification stops at
 * the first rejection, so position k is accepted with probability p^(k+1) and the rate is
 * Σ n_k p^(k+1) / Σ n_k — not p. Matching on p directly would give the random baseline fewer draft
 * tokens than the policy it is compared with (Fuzzy SD paper App. E compares at equal draft-token shares).
 */
export function matchedAcceptanceProbability(acceptanceRate: number, draftedPerPosition: readonly number[]): number {
    if (!(acceptanceRate >= 0 && acceptanceRate <= 1))
        throw new InvalidInputError(`must lie in [0, 1], got ${acceptanceRate}`, "acceptanceRate");
    const drafted = draftedPerPosition.reduce((sum, count) => sum + count, 0);
    if (drafted <= 0 || draftedPerPosition.some((count) => !(count >= 0)))
        throw new InvalidInputError("needs at least one drafted position and no negative counts", "draftedPerPosition");
    if (acceptanceRate === 0 || acceptanceRate === 1) return acceptanceRate;
    const rate = (p: number) => {
        let sum = 0;
        let power = 1;
        for (const count of draftedPerPosition) sum += count * (power *= p);
        return sum / drafted;
    };
    // The rate increases with p on [0, 1]: bisection to well below any reported precision.
    let low = 0;
    let high = 1;
    for (let iteration = 0; iteration < 60; iteration++) {
        const middle = (low + high) / 2;
        if (rate(middle) < acceptanceRate) low = middle;
        else high = middle;
    }
    return (low + high) / 2;
}
