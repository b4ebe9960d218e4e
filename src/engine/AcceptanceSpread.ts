/**
 * How much acceptance differs from one generation to the next on a load, and so how much a new
 * generation's prior (the load's or its tenant's running estimate) is worth: an empirical-Bayes
 * weight. From the last `capacity` finished generations' own acceptance (accepted positions over
 * accepted positions plus steps that ended at a rejection, each with its count of such observations),
 * the spread between generations is their estimates' variance less what their counts alone explain
 * (the method of moments of a beta-binomial), and the prior is worth ᾱ(1 − ᾱ) / spread − 1 observations
 * (the beta distribution with that mean and variance), within [minWeight, maxWeight]. Where the
 * generations are alike the prior outweighs a new generation's first rejections (which otherwise swing
 * its draft length); where they differ a generation soon follows its own acceptance.
 */
export class AcceptanceSpread {
    private readonly generations: Array<{readonly accepted: number; readonly observations: number}> = [];
    private next = 0;

    public constructor(private readonly capacity = 64) {}

    /** A finished generation's own counts: accepted positions and steps that ended at a rejection. */
    public record(accepted: number, rejected: number): void {
        const observations = accepted + rejected;
        if (!(observations >= minObservations)) return;
        const entry = {accepted, observations};
        if (this.generations.length < this.capacity) this.generations.push(entry);
        else this.generations[this.next] = entry;
        this.next = (this.next + 1) % this.capacity;
    }

    /** Observations a new generation's prior is worth; minWeight until minGenerations have finished. */
    public get priorWeight(): number {
        const count = this.generations.length;
        if (count < minGenerations) return minWeight;
        const estimates = this.generations.map((generation) => generation.accepted / generation.observations);
        const mean = estimates.reduce((sum, value) => sum + value, 0) / count;
        const variance = estimates.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (count - 1);
        const sampling = this.generations.reduce((sum, generation) => sum + 1 / generation.observations, 0) / count;
        const spread = variance - mean * (1 - mean) * sampling;
        if (!(spread > 0)) return maxWeight;
        return Math.min(maxWeight, Math.max(minWeight, (mean * (1 - mean)) / spread - 1));
    }
}

/** The prior's weight before enough generations have finished, and its least. */
export const minWeight = 8;
/** The most the prior is worth: a generation whose acceptance does differ still moves off it within a few hundred positions. */
export const maxWeight = 64;
/** Generations with fewer observations say too little about the spread. */
const minObservations = 8;
/** Finished generations needed before the spread is estimated. */
const minGenerations = 4;
