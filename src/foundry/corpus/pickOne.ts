import type {Random} from "../../random/Random.js";

/** A uniformly chosen element of a non-empty list. */
export function pickOne<T>(random: Random, items: readonly T[]): T {
    return items[Math.floor(random.nextDouble() * items.length)];
}
