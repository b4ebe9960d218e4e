/**
 * The longest gap between heartbeats of a 10 ms interval while `work` runs: how long the event loop
 * was blocked at once. Rejections of `work` propagate; wrap it in `settled` to measure a call that
 * is meant to fail.
 */
export async function longestEventLoopGap<T>(work: () => Promise<T>): Promise<{result: T; gap: number; elapsed: number}> {
    const start = performance.now();
    let last = start;
    let gap = 0;
    const heartbeat = setInterval(() => {
        const now = performance.now();
        gap = Math.max(gap, now - last);
        last = now;
    }, 10);
    try {
        const result = await work();
        return {result, gap: Math.max(gap, performance.now() - last), elapsed: performance.now() - start};
    } finally {
        clearInterval(heartbeat);
    }
}

/** What `promise` rejected with, or undefined when it resolved. */
export function settled(promise: Promise<unknown>): Promise<unknown> {
    return promise.then(
        () => undefined,
        (error: unknown) => error
    );
}
