import {isMainThread} from "node:worker_threads";

/** What the guard needs of an addon build (native/src/grammar.cpp). */
export interface GrammarJobExits {
    /** Ends the process at once with `code`, skipping static destructors, when a grammar job's thread still runs; false otherwise. */
    exitWhileGrammarJobsRun(code: number): boolean;
}

const guarded = new WeakSet<object>();

/**
 * Makes the process's exit safe while grammar jobs still run. A grammar job (converting a schema,
 * building a grammar) runs inside llama.cpp on a detached thread that nothing can stop, and a caller
 * may stop waiting for it (a time budget, a shutdown, Ctrl-C). A normal exit would then run the C++
 * static destructors of llama.cpp and the runtime under that thread (a crash at exit, or a hang), so
 * on process "exit" the addon ends the process itself, with the same code, when a job still runs.
 *
 * Only on the main thread: a worker's exit is not the process's (its jobs are freed when they end).
 * Listeners added to "exit" after this one do not run when a job is still running.
 */
export function guardExitAgainstGrammarJobs(addon: Partial<GrammarJobExits>): void {
    if (!isMainThread || guarded.has(addon) || typeof addon.exitWhileGrammarJobsRun !== "function") return;
    guarded.add(addon);
    process.on("exit", (code) => {
        addon.exitWhileGrammarJobsRun!(typeof code === "number" && Number.isInteger(code) ? code : 1);
    });
}
