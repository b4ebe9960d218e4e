import normalQuantile from "@stdlib/stats-base-dists-normal-quantile";

import {InvalidInputError} from "../errors.js";

export interface ProportionInterval {
    readonly lower: number;
    readonly upper: number;
}

/**
 * Wilson score interval for a binomial proportion (Wilson 1927). Unlike the Wald interval it stays
 * inside [0, 1] and keeps a non-zero width at 0 and at n successes, which is why TAIS reports it.
 */
export function wilsonInterval(successes: number, total: number, confidence = 0.95): ProportionInterval {
    if (!Number.isInteger(total) || total < 1) {
        throw new InvalidInputError(`must be a positive integer, got ${total}`, "total");
    }
    if (!Number.isInteger(successes) || successes < 0 || successes > total) {
        throw new InvalidInputError(`must be an integer in [0, ${total}], got ${successes}`, "successes");
    }
    return wilsonIntervalOfProportion(successes / total, total, confidence);
}

/**
 * The Wilson interval of an observed proportion over `total` independent units, whose successes
 * need not be whole: the mean over prompts of each prompt's share of passing seeds, for instance.
 */
export function wilsonIntervalOfProportion(proportion: number, total: number, confidence = 0.95): ProportionInterval {
    if (!Number.isInteger(total) || total < 1) {
        throw new InvalidInputError(`must be a positive integer, got ${total}`, "total");
    }
    if (!(proportion >= 0 && proportion <= 1)) {
        throw new InvalidInputError(`must lie in [0, 1], got ${proportion}`, "proportion");
    }
    if (!(confidence > 0 && confidence < 1)) {
        throw new InvalidInputError(`must lie strictly between 0 and 1, got ${confidence}`, "confidence");
    }
    const z = normalQuantile(1 - (1 - confidence) / 2, 0, 1);
    const zSquared = z * z;
    const denominator = 1 + zSquared / total;
    const centre = (proportion + zSquared / (2 * total)) / denominator;
    const halfWidth = (z / denominator) * Math.sqrt((proportion * (1 - proportion)) / total + zSquared / (4 * total * total));
    // At 0 and n successes the exact bound is 0 or 1; clamp so rounding cannot leave [0, 1].
    return {
        lower: proportion === 0 ? 0 : Math.max(0, centre - halfWidth),
        upper: proportion === 1 ? 1 : Math.min(1, centre + halfWidth)
    };
}
