import {BigramBackend} from "../../engine/testing/BigramBackend.js";
import {Random} from "../../random/Random.js";

/**
 * A bigram target and draft with a built-in disparity, for fairness tests. Vocabulary 12: BOS 0,
 * EOS 1, letters a–j → 2–11; BigramBackend maps " " to 7 and "\n" to 5. The "well-served" tokens
 * are 7–11 (f–j and space), the "poorly served" ones 2–6 (a–e and newline). Transitions within a
 * side get +4, so a greedy chain never leaves the side it starts on, and the cyclic successor on the
 * same side (a→b→…→e→a, f→g→…→j→f) gets +3 more, so references that follow successors are data the
 * target fits. The draft copies the target's rows exactly on the well-served side and adds ±`noise`
 * to every logit of the other side's rows.
 */
export function skewedBigramPair(seed: number, noise = 4): {target: BigramBackend; draft: BigramBackend} {
    const size = 12;
    const wellServed = (token: number) => token >= 7;
    const random = new Random(seed);
    const table = Array.from({length: size}, (_row, from) =>
        Float64Array.from({length: size}, (_value, to) => {
            if (to <= 1) return to === 1 ? -4 : -8;
            const sameSide = from >= 2 && wellServed(from) === wellServed(to);
            const successor = from >= 2 && to === (from === 6 ? 2 : from === 11 ? 7 : from + 1);
            return 2 * (random.nextDouble() - 0.5) * 2 + (sameSide ? 4 : 0) + (successor ? 3 : 0);
        })
    );
    const draftTable = table.map((row, from) =>
        from >= 2 && !wellServed(from) ? row.map((value) => value + noise * (random.nextDouble() - 0.5) * 2) : Float64Array.from(row)
    );
    return {target: new BigramBackend(table), draft: new BigramBackend(draftTable)};
}
