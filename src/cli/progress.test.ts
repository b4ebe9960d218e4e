import {describe, expect, it} from "vitest";
import {formatDuration, createProgress} from "./progress.js";
import {reportInterruption, reportOnInterrupt, resetInterrupts} from "./interrupts.js";

function fakeStream(isTTY: boolean) {
    const written: string[] = [];
    return {written, stream: {isTTY, columns: 200, write: (text: string) => written.push(text) > 0}};
}

describe("progress on stderr", () => {
    it("formats durations for people", () => {
        expect([formatDuration(4.4), formatDuration(125), formatDuration(3 * 3600 + 185)]).toEqual(["4 s", "2 min 05 s", "3 h 03 min"]);
    });

    it("piped: nothing for a run shorter than the interval, then a line every interval with the time left, and the last", () => {
        let clock = 0;
        const {written, stream} = fakeStream(false);
        const progress = createProgress({command: "specgate canary", unit: "prompts", stream, now: () => clock});
        for (let done = 1; done <= 40; done++) {
            clock += 1000;
            progress.update(done, 40, `p${done}`);
        }
        progress.finish();
        expect(written).toEqual([
            "specgate canary: 10/40 prompts (25%), about 30 s left\n",
            "specgate canary: 20/40 prompts (50%), about 20 s left\n",
            "specgate canary: 30/40 prompts (75%), about 10 s left\n",
            "specgate canary: 40/40 prompts (100%), 40 s\n"
        ]);
        const short = fakeStream(false);
        const quick = createProgress({command: "x", unit: "runs", stream: short.stream, now: () => 0});
        quick.update(1, 2);
        quick.update(2, 2);
        quick.finish();
        expect(short.written).toEqual([]);
    });

    it("on a terminal: a bar with the count and the time left, cleared at the end; --quiet writes nothing", () => {
        let clock = 0;
        const {written, stream} = fakeStream(true);
        const progress = createProgress({command: "specgate bench", unit: "runs", stream, now: () => clock});
        clock = 2000;
        progress.update(1, 4, "strict γ=4");
        expect(written.at(-1)).toBe("\r\x1b[K[#####...............] 1/4 runs (25%), about 6 s left · strict γ=4");
        progress.finish();
        expect(written.at(-1)).toBe("\r\x1b[K");
        const silent = fakeStream(true);
        const quiet = createProgress({command: "x", unit: "runs", stream: silent.stream, quiet: true, now: () => clock});
        quiet.update(1, 4);
        quiet.finish();
        expect(silent.written).toEqual([]);
    });

    it("says how far it got when the command is interrupted", () => {
        resetInterrupts();
        const {stream} = fakeStream(false);
        const progress = createProgress({command: "specgate tais run", unit: "samples", stream, quiet: true});
        progress.update(12, 80);
        const unregister = reportOnInterrupt(() => "ledger kept");
        let stderr = "";
        const original = process.stderr.write.bind(process.stderr);
        process.stderr.write = ((text: string) => ((stderr += text), true)) as typeof process.stderr.write;
        try {
            expect(reportInterruption()).toBe(130);
        } finally {
            process.stderr.write = original;
            unregister();
            resetInterrupts();
        }
        expect(stderr).toBe("\nspecgate: 12 of 80 samples done; ledger kept; interrupted (SIGINT)\n");
    });
});
