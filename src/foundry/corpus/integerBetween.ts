import type {Random} from "../../random/Random.js";

/** A uniform integer in [minimum, maximum], both inclusive. */
export function integerBetween(random: Random, minimum: number, maximum: number): number {
    return minimum + Math.floor(random.nextDouble() * (maximum - minimum + 1));
}
