import {describe, expect, it} from "vitest";
import {ServerOverloadedError, ServerShuttingDownError} from "../errors.js";
import {GenerationSlots} from "./GenerationSlots.js";

describe("GenerationSlots", () => {
    it("grants up to maxConcurrency at once and hands freed slots to waiters in arrival order", async () => {
        const slots = new GenerationSlots(2, 3);
        const first = await slots.acquire();
        await slots.acquire();
        const order: number[] = [];
        const waiting = [1, 2, 3].map((index) =>
            slots.acquire().then((release) => {
                order.push(index);
                return release;
            })
        );
        expect(slots.running).toBe(2);
        expect(slots.waiting).toBe(3);
        first();
        first(); // a second call must not free a second slot
        const next = await waiting[0];
        expect(order).toEqual([1]);
        expect(slots.running).toBe(2);
        next();
        await waiting[1];
        expect(order).toEqual([1, 2]);
    });

    it("refuses with ServerOverloadedError when the queue is full", async () => {
        const slots = new GenerationSlots(1, 1);
        await slots.acquire();
        void slots.acquire();
        await expect(slots.acquire()).rejects.toBeInstanceOf(ServerOverloadedError);
        expect(slots.waiting).toBe(1);
    });

    it("removes an aborted waiter from the queue", async () => {
        const slots = new GenerationSlots(1, 1);
        const release = await slots.acquire();
        const controller = new AbortController();
        const waiter = slots.acquire(controller.signal);
        controller.abort(new Error("gone"));
        await expect(waiter).rejects.toThrow("gone");
        expect(slots.waiting).toBe(0);
        release();
        expect(slots.running).toBe(0);
    });

    it("after close refuses new and queued requests, lets running ones finish, and reports idle at the end", async () => {
        const slots = new GenerationSlots(1, 2);
        const release = await slots.acquire();
        const queued = slots.acquire();
        slots.close();
        await expect(queued).rejects.toBeInstanceOf(ServerShuttingDownError);
        expect(slots.waiting).toBe(0);
        await expect(slots.acquire()).rejects.toBeInstanceOf(ServerShuttingDownError);
        let idle = false;
        const drained = slots.idle().then(() => (idle = true));
        await Promise.resolve();
        expect(idle).toBe(false);
        release();
        await drained;
        expect(idle).toBe(true);
        expect(slots.running).toBe(0);
    });
});
