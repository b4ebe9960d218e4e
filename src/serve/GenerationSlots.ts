import {InvalidInputError, ServerOverloadedError, ServerShuttingDownError} from "../errors.js";

interface Waiter {
    readonly grant: (release: () => void) => void;
    readonly refuse: (error: Error) => void;
}

/**
 * At most `maxConcurrency` generations at once; up to `maxQueue` more wait in arrival order (FIFO,
 * so no request overtakes an earlier one); beyond that a request is refused at once with
 * ServerOverloadedError (HTTP 429) rather than piling up latency. `close()` refuses new requests and
 * the queued ones (ServerShuttingDownError, HTTP 503: they have not started, so a client can retry
 * them elsewhere at once) and lets the running ones finish; `idle()` settles when none is left
 * (graceful drain).
 */
export class GenerationSlots {
    private active = 0;
    private readonly queue: Waiter[] = [];
    private closed = false;
    private idleWaiters: Array<() => void> = [];

    public constructor(
        public readonly maxConcurrency: number,
        public readonly maxQueue: number
    ) {
        if (!Number.isSafeInteger(maxConcurrency) || maxConcurrency < 1)
            throw new InvalidInputError(`must be a positive integer, got ${maxConcurrency}`, "maxConcurrency");
        if (!Number.isSafeInteger(maxQueue) || maxQueue < 0)
            throw new InvalidInputError(`must be a non-negative integer, got ${maxQueue}`, "maxQueue");
    }

    public get running(): number {
        return this.active;
    }

    public get waiting(): number {
        return this.queue.length;
    }

    public get accepting(): boolean {
        return !this.closed;
    }

    /**
     * Resolves with a release function once a slot is free. Call the release exactly when the
     * generation is over (extra calls are ignored). Aborting `signal` while queued leaves the queue.
     */
    public acquire(signal?: AbortSignal): Promise<() => void> {
        if (this.closed) return Promise.reject(new ServerShuttingDownError("the server is shutting down"));
        if (signal?.aborted === true) return Promise.reject(signal.reason);
        if (this.active < this.maxConcurrency) {
            this.active++;
            return Promise.resolve(this.releaser());
        }
        if (this.queue.length >= this.maxQueue)
            return Promise.reject(
                new ServerOverloadedError(
                    `all ${this.maxConcurrency} generation slots are busy and ${this.queue.length} requests are already waiting; retry later`
                )
            );
        return new Promise((resolve, reject) => {
            const onAbort = (): void => {
                const index = this.queue.indexOf(waiter);
                if (index >= 0) this.queue.splice(index, 1);
                reject(signal!.reason);
                this.notifyIfIdle();
            };
            const waiter: Waiter = {
                grant: (release) => {
                    signal?.removeEventListener("abort", onAbort);
                    resolve(release);
                },
                refuse: (error) => {
                    signal?.removeEventListener("abort", onAbort);
                    reject(error);
                }
            };
            signal?.addEventListener("abort", onAbort, {once: true});
            this.queue.push(waiter);
        });
    }

    /** Stop taking new requests and refuse the queued ones; running ones still complete. */
    public close(): void {
        this.closed = true;
        const refused = this.queue.splice(0);
        for (const waiter of refused)
            waiter.refuse(new ServerShuttingDownError("the server is shutting down; this request had not started"));
        this.notifyIfIdle();
    }

    /** Settles when no generation runs or waits. */
    public idle(): Promise<void> {
        if (this.active === 0 && this.queue.length === 0) return Promise.resolve();
        return new Promise((resolve) => this.idleWaiters.push(resolve));
    }

    private releaser(): () => void {
        let released = false;
        return () => {
            if (released) return;
            released = true;
            const next = this.queue.shift();
            // The slot passes straight to the next waiter, so a newcomer cannot take it first.
            if (next !== undefined) next.grant(this.releaser());
            else this.active--;
            this.notifyIfIdle();
        };
    }

    private notifyIfIdle(): void {
        if (this.active !== 0 || this.queue.length !== 0) return;
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const resolve of waiters) resolve();
    }
}
