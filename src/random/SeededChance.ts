import type {Chance} from "./Chance.js";
import {Random} from "./Random.js";

/** Chance backed by the seeded Random: inverse-CDF categorical sampling, one uniform per decision. */
export class SeededChance implements Chance {
    public readonly random: Random;

    public constructor(randomOrSeed: Random | number) {
        this.random = typeof randomOrSeed === "number" ? new Random(randomOrSeed) : randomOrSeed;
    }

    public accept(probability: number): boolean {
        return this.random.nextDouble() < probability;
    }

    public choose(weights: ArrayLike<number>, total: number, length: number = weights.length): number {
        // Inverse CDF with one uniform. Exact up to float rounding of the running sum; if rounding
        // leaves the target unreached, fall back to the last index with positive weight so that a
        // zero-probability index is never returned.
        const target = this.random.nextDouble() * total;
        let cumulative = 0;
        let lastPositive = -1;
        for (let index = 0; index < length; index++) {
            const weight = weights[index];
            if (weight > 0) {
                cumulative += weight;
                lastPositive = index;
                if (target < cumulative) return index;
            }
        }
        if (lastPositive < 0) throw new RangeError("cannot sample from a distribution with no positive weight");
        return lastPositive;
    }
}
