import {describe, expect, it} from "vitest";
import {retryDelay} from "./retryDelay.js";

const options = {baseDelayMs: 100, maxDelayMs: 1000, maxRetryAfterMs: 5000};

describe("retryDelay", () => {
    it("grows exponentially with equal jitter and a cap", () => {
        expect(retryDelay(0, null, options, () => 0)).toBe(50);
        expect(retryDelay(0, null, options, () => 1)).toBe(100);
        expect(retryDelay(3, null, options, () => 0.5)).toBe(600);
        expect(retryDelay(10, null, options, () => 1)).toBe(1000);
    });

    it("honours Retry-After in seconds or as an HTTP date, capped", () => {
        expect(retryDelay(0, "2", options, () => 0)).toBe(2000);
        expect(retryDelay(0, "0", options, () => 0)).toBe(0);
        expect(retryDelay(0, "60", options, () => 0)).toBe(5000);
        const now = Date.parse("2026-01-01T00:00:00Z");
        expect(retryDelay(0, "Thu, 01 Jan 2026 00:00:03 GMT", options, () => 0, now)).toBe(3000);
        // An unreadable header falls back to backoff.
        expect(retryDelay(1, "soon", options, () => 0)).toBe(100);
    });
});
