import {ServerOverloadedError} from "../errors.js";

/** When a wait for a place ends unanswered: a deadline (performance.now() time) and an optional signal. */
export interface PlaceLimits {
    readonly deadline: number;
    readonly signal?: AbortSignal;
}

interface Waiter {
    readonly maxJobs: number;
    readonly grant: () => void;
}

/** Grammar jobs this process's JS has started whose thread has not ended (abandoned ones included). */
let running = 0;
const waiters: Waiter[] = [];

/**
 * A place for one grammar job (a schema conversion, a grammar build) among `maxJobs` running at once,
 * process-wide, waited for in arrival order: a burst of structured requests queues here instead of
 * being refused, while the threads stay bounded. Resolves with the release, which the caller runs when
 * the job's thread ends (its promise settles), not when it stops waiting for it, so an abandoned job
 * keeps its place until it is really over. A wait still unanswered at `limits.deadline` is a
 * ServerOverloadedError (HTTP 429); an aborted signal rejects with its reason.
 */
export function grammarJobPlace(maxJobs: number, limits: PlaceLimits): Promise<() => void> {
    const {signal} = limits;
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    if (running < maxJobs && waiters.length === 0) return Promise.resolve(take());
    return new Promise((resolve, reject) => {
        const leave = (error: unknown): void => {
            const index = waiters.indexOf(waiter);
            if (index >= 0) waiters.splice(index, 1);
            clearTimeout(timer);
            signal?.removeEventListener("abort", onAbort);
            reject(error);
        };
        const onAbort = (): void => leave(signal!.reason);
        const timer = setTimeout(
            () =>
                leave(
                    new ServerOverloadedError(
                        `${running} grammar jobs ran for all of this request's grammar budget (at most ${maxJobs} at once); retry later`
                    )
                ),
            Math.max(0, limits.deadline - performance.now())
        );
        const waiter: Waiter = {
            maxJobs,
            grant: () => {
                clearTimeout(timer);
                signal?.removeEventListener("abort", onAbort);
                resolve(take());
            }
        };
        signal?.addEventListener("abort", onAbort, {once: true});
        waiters.push(waiter);
    });
}

/** Grammar jobs running now that took their place here. */
export function grammarJobsHoldingPlaces(): number {
    return running;
}

function take(): () => void {
    running++;
    let released = false;
    return () => {
        if (released) return;
        released = true;
        running--;
        grantWaiting();
    };
}

function grantWaiting(): void {
    while (waiters.length > 0 && running < waiters[0]!.maxJobs) waiters.shift()!.grant();
}
