/**
 * Runs async tasks one at a time in submission order. The embedded engine drives one llama.cpp
 * context per model, so concurrent generations would only contend for it.
 */
export class SerialQueue {
    private tail: Promise<unknown> = Promise.resolve();

    public run<T>(task: () => Promise<T>): Promise<T> {
        const result = this.tail.then(task, task);
        // A failed task must not poison the tasks queued after it.
        this.tail = result.catch(() => undefined);
        return result;
    }
}
