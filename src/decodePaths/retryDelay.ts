/** Backoff settings of an HTTP decode path. */
export interface BackoffOptions {
    /** Delay before the first retry, before jitter. */
    readonly baseDelayMs: number;
    /** Largest delay from exponential growth; a Retry-After header may ask for more, up to maxRetryAfterMs. */
    readonly maxDelayMs: number;
    readonly maxRetryAfterMs: number;
}

/**
 * Milliseconds to wait before retry number `attempt` (0 = first retry). A Retry-After header (delta
 * seconds or an HTTP date) is honoured as given, capped at maxRetryAfterMs, because the server knows
 * its own load. Otherwise exponential backoff with "equal jitter": half the capped exponential delay
 * plus a uniform random share of the other half, so synchronised clients spread out but never
 * retry immediately.
 */
export function retryDelay(
    attempt: number,
    retryAfter: string | null,
    options: BackoffOptions,
    random: () => number = Math.random,
    now: number = Date.now()
): number {
    if (retryAfter != null && retryAfter.trim() !== "") {
        const seconds = Number(retryAfter.trim());
        const milliseconds = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(retryAfter) - now;
        if (Number.isFinite(milliseconds)) return Math.min(Math.max(0, milliseconds), options.maxRetryAfterMs);
    }
    const capped = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** attempt);
    return capped / 2 + random() * (capped / 2);
}
