import {InterruptedError} from "../errors.js";
import {removeTemporaryFiles} from "../io/temporaryFiles.js";
import {ExitCode} from "./exitCodes.js";

/**
 * How every command stops on SIGINT (Ctrl-C) or SIGTERM: the command's signal (interruptSignal) is
 * aborted, so loops that watch it stop at their next step; within `graceMilliseconds` the process
 * prints what the command completed (the reporters commands register) and "interrupted" on stderr,
 * removes the temporary files of writes in flight (outputs are only ever replaced by a complete
 * file's rename, so none is left half-written) and exits 130 (SIGINT) or 143 (SIGTERM), whether or
 * not the command noticed. A second signal exits at once. Commands that stop on signals their own
 * way (serve drains its requests) take them over with handleSignalsItself.
 */
const graceMilliseconds = 400;

let controller = new AbortController();
let received: NodeJS.Signals | undefined;
let reported = false;
let commandName = "specgate";
let handledByCommand = false;
const reporters = new Set<() => string | undefined>();

/** Aborted (with an InterruptedError) when the process receives SIGINT or SIGTERM. */
export function interruptSignal(): AbortSignal {
    return controller.signal;
}

/** Whether a signal has arrived. */
export function interrupted(): boolean {
    return received !== undefined;
}

/** The exit code of an interrupted process: 128 + the signal's number. */
export function interruptedExitCode(signal: NodeJS.Signals = received ?? "SIGINT"): number {
    return signal === "SIGTERM" ? ExitCode.terminated : ExitCode.interrupted;
}

/** Names the command in the interruption message ("specgate generate: …"). */
export function setInterruptedCommand(name: string): void {
    commandName = name;
}

/**
 * Registers what the command has completed so far, asked for when it is interrupted (e.g. "27
 * tokens generated", "12 of 80 items measured; rerun the same command to resume"). Returns the
 * function that unregisters it.
 */
export function reportOnInterrupt(describe: () => string | undefined): () => void {
    reporters.add(describe);
    return () => reporters.delete(describe);
}

/** For commands that stop on signals their own way (serve): the handlers below leave them alone. */
export function handleSignalsItself(): void {
    handledByCommand = true;
}

/**
 * Writes, once, the command's interruption line: what it completed, then "interrupted". Returns the
 * exit code the process ends with.
 */
export function reportInterruption(): number {
    const signal = received ?? "SIGINT";
    if (!reported) {
        reported = true;
        const completed: string[] = [];
        for (const describe of reporters) {
            try {
                const text = describe();
                if (text !== undefined && text !== "") completed.push(text);
            } catch {
                // A reporter must never keep the process from stopping.
            }
        }
        process.stderr.write(`\n${commandName}: ${completed.length > 0 ? `${completed.join("; ")}; ` : ""}interrupted (${signal})\n`);
    }
    return interruptedExitCode(signal);
}

function exitNow(): never {
    const code = reportInterruption();
    removeTemporaryFiles();
    process.exit(code);
}

function onSignal(signal: NodeJS.Signals): void {
    if (handledByCommand) return;
    if (received !== undefined) exitNow();
    received = signal;
    controller.abort(new InterruptedError(signal));
    // The command may wind down on its own (runCli then reports); if it has not within the grace
    // period, it is stopped here.
    setTimeout(exitNow, graceMilliseconds).unref();
}

/**
 * For commands whose work is one synchronous loop (simulate), which no JavaScript handler can
 * interrupt: the handlers are removed, so the signal's default action ends the process at once (its
 * shell then reports 130 or 143). Such a command writes its output only after the loop, so there is
 * nothing half-written to remove.
 */
export function endAtOnceOnSignals(): void {
    if (!installed) return;
    if (received !== undefined) exitNow();
    installed = false;
    // Every listener, not only ours: a dependency's (signal-exit, loaded with node-llama-cpp) would
    // also keep the default action from ending the process until the loop is over.
    process.removeAllListeners("SIGINT");
    process.removeAllListeners("SIGTERM");
}

let installed = false;

/** Installs the SIGINT/SIGTERM handlers (bin/main.ts does, once per process). */
export function installInterruptHandlers(): void {
    if (installed) return;
    installed = true;
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
}

/** Back to the state before any signal (tests that run several commands in one process). */
export function resetInterrupts(): void {
    controller = new AbortController();
    received = undefined;
    reported = false;
    commandName = "specgate";
    handledByCommand = false;
    reporters.clear();
}
