/** What the random-allocation baseline needs from each endpoint: battery totals of one run. */
export interface AllocationEndpoint {
    readonly accuracy: number;
    /** Output tokens over the whole battery. */
    readonly emittedTokens: number;
    /** Decode seconds over the whole battery (prompt evaluation excluded). */
    readonly decodeSeconds: number;
}

export interface AllocationPoint {
    /** Share of queries sent to the target; the rest go to the draft alone. */
    readonly share: number;
    readonly accuracy: number;
    readonly emittedTokens: number;
    readonly decodeSeconds: number;
    readonly tokensPerSecond: number;
}

export interface RandomAllocationLine {
    at(share: number): AllocationPoint;
    /** The baseline's accuracy at this speed, or null when the speed is outside [draft-only, target-only]. */
    accuracyAtSpeed(tokensPerSecond: number): number | null;
    /** `count` + 1 evenly spaced shares from 0 (draft only) to 1 (target only), for plotting. */
    sample(count: number): AllocationPoint[];
}

/**
 * The Fuzzy SD paper §5's random-allocation baseline: each query goes to the target with probability s and to
 * the draft otherwise. Expected accuracy, tokens and time are then exactly linear in s, so they are
 * interpolated, not simulated; tokens/s is their ratio, which is why the line is a curve when
 * plotted against tokens/s. A tunable method is only worth it above this line at equal speed.
 */
export function randomAllocationLine(draftOnly: AllocationEndpoint, targetOnly: AllocationEndpoint): RandomAllocationLine {
    const at = (share: number): AllocationPoint => {
        if (!(share >= 0 && share <= 1)) throw new RangeError(`share must lie in [0, 1], got ${share}`);
        const mix = (draftValue: number, targetValue: number) => draftValue + share * (targetValue - draftValue);
        const emittedTokens = mix(draftOnly.emittedTokens, targetOnly.emittedTokens);
        const decodeSeconds = mix(draftOnly.decodeSeconds, targetOnly.decodeSeconds);
        return {
            share,
            accuracy: mix(draftOnly.accuracy, targetOnly.accuracy),
            emittedTokens,
            decodeSeconds,
            tokensPerSecond: decodeSeconds > 0 ? emittedTokens / decodeSeconds : 0
        };
    };
    return {
        at,
        accuracyAtSpeed(tokensPerSecond) {
            // Solve (e_D + s·Δe) / (t_D + s·Δt) = v for s.
            const denominator =
                tokensPerSecond * (targetOnly.decodeSeconds - draftOnly.decodeSeconds) -
                (targetOnly.emittedTokens - draftOnly.emittedTokens);
            const numerator = draftOnly.emittedTokens - tokensPerSecond * draftOnly.decodeSeconds;
            if (denominator === 0) return numerator === 0 ? at(1).accuracy : null;
            const share = numerator / denominator;
            const tolerance = 1e-9;
            if (!(share >= -tolerance && share <= 1 + tolerance)) return null;
            return at(Math.min(1, Math.max(0, share))).accuracy;
        },
        sample(count) {
            return Array.from({length: count + 1}, (_value, index) => at(index / count));
        }
    };
}
