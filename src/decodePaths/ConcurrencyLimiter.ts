import {InvalidInputError} from "../errors.js";

/** Runs at most `limit` async tasks at once; the rest wait in submission order. */
export class ConcurrencyLimiter {
    private active = 0;
    private readonly waiting: (() => void)[] = [];

    public constructor(public readonly limit: number) {
        if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError(`must be a positive integer, got ${limit}`, "concurrency");
    }

    public async run<T>(task: () => Promise<T>): Promise<T> {
        // A finishing task hands its slot straight to the next waiter, so a newcomer cannot slip in between.
        if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
        else this.active++;
        try {
            return await task();
        } finally {
            const next = this.waiting.shift();
            if (next !== undefined) next();
            else this.active--;
        }
    }
}
