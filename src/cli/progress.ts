import {reportOnInterrupt} from "./interrupts.js";

/** Where and how a long command reports how far it is. */
export interface ProgressOptions {
    /** "specgate canary", leading every line. */
    readonly command: string;
    /** What is counted: "prompts", "samples", "runs". */
    readonly unit: string;
    /** --quiet: nothing is written (what was done is still said on an interrupt). */
    readonly quiet?: boolean;
    /** Default process.stderr. */
    readonly stream?: Pick<NodeJS.WriteStream, "write" | "isTTY" | "columns">;
    /** Seconds between two lines when the stream is not a terminal; default 10. */
    readonly intervalSeconds?: number;
    /** Milliseconds; default performance.now. */
    readonly now?: () => number;
}

export interface Progress {
    /** `done` of `total` finished; `label` names the last one. */
    update(done: number, total: number, label?: string): void;
    /** Clears the bar (a terminal) and stops reporting. */
    finish(): void;
}

/** "2 min 05 s", "45 s", "1 h 03 min". */
export function formatDuration(seconds: number): string {
    const whole = Math.max(0, Math.round(seconds));
    if (whole < 60) return `${whole} s`;
    if (whole < 3600) return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, "0")} s`;
    return `${Math.floor(whole / 3600)} h ${String(Math.floor((whole % 3600) / 60)).padStart(2, "0")} min`;
}

/**
 * Progress on stderr for commands that run longer than a few seconds: on a terminal a bar with the
 * count and the estimated time left, redrawn at most 10 times a second; otherwise (piped, CI logs)
 * one line every `intervalSeconds` (none for a run shorter than that), plus the last. The estimate is the mean time per unit so far ×
 * the units left. On Ctrl-C the interruption line says how many were done (src/cli/interrupts.ts).
 */
export function createProgress(options: ProgressOptions): Progress {
    const stream = options.stream ?? process.stderr;
    const now = options.now ?? (() => performance.now());
    const tty = stream.isTTY === true;
    const interval = 1000 * (options.intervalSeconds ?? 10);
    const started = now();
    let lastWritten = -Infinity;
    let state = {done: 0, total: 0, label: ""};
    let finished = false;
    const unregister = reportOnInterrupt(() => (state.total > 0 ? `${state.done} of ${state.total} ${options.unit} done` : undefined));

    const remaining = (): string => {
        if (state.done === 0) return "";
        const elapsed = (now() - started) / 1000;
        return state.done >= state.total
            ? `, ${formatDuration(elapsed)}`
            : `, about ${formatDuration((elapsed / state.done) * (state.total - state.done))} left`;
    };
    const line = (): string =>
        `${state.done}/${state.total} ${options.unit} (${Math.floor((100 * state.done) / Math.max(1, state.total))}%)${remaining()}`;

    return {
        update(done, total, label = "") {
            if (finished) return;
            state = {done, total, label};
            if (options.quiet) return;
            const time = now();
            const last = done >= total;
            if (tty) {
                if (time - lastWritten < 100 && !last) return;
                lastWritten = time;
                const width = 20;
                const bar = "#".repeat(Math.round((width * done) / Math.max(1, total))).padEnd(width, ".");
                const text = `[${bar}] ${line()}${label === "" ? "" : ` · ${label}`}`;
                stream.write(`\r\x1b[K${text.slice(0, Math.max(20, (stream.columns ?? 120) - 1))}`);
            } else {
                // A run shorter than one interval writes nothing; a longer one ends with its last count.
                const due = time - (lastWritten === -Infinity ? started : lastWritten) >= interval;
                if (!due && !(last && lastWritten > -Infinity)) return;
                lastWritten = time;
                stream.write(`${options.command}: ${line()}\n`);
            }
        },
        finish() {
            if (finished) return;
            finished = true;
            unregister();
            if (tty && !options.quiet && lastWritten > -Infinity) stream.write("\r\x1b[K");
        }
    };
}
