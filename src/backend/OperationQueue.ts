import {InvalidInputError} from "../errors.js";

/**
 * Runs async operations one at a time in call order, whether earlier ones succeeded or not (a failed
 * one does not poison those queued after it): a sequence's evaluations, an embedded decode path's
 * generations. Operations queued before `close()` still run; those asked for after it are refused.
 */
export class OperationQueue {
    private idle: Promise<unknown> = Promise.resolve();
    private closed = false;

    public get isClosed(): boolean {
        return this.closed;
    }

    public run<T>(operation: () => Promise<T>): Promise<T> {
        if (this.closed) return Promise.reject(new InvalidInputError("the sequence is disposed", "sequence"));
        const result = this.idle.then(operation, operation);
        this.idle = result.catch(() => undefined);
        return result;
    }

    /** Queues `last` behind everything already queued and refuses later operations. */
    public close(last: () => Promise<void>): Promise<void> {
        if (this.closed) return Promise.resolve();
        const result = this.run(last);
        this.closed = true;
        return result;
    }
}
