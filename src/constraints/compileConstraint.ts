import type {ModelBackend} from "../backend/ModelBackend.js";
import {anyNativeAddon} from "../backend/nativeAddon.js";
import {GrammarTooComplexError, InvalidInputError, ServerOverloadedError} from "../errors.js";
import type {GrammarBudget} from "./GrammarBudget.js";
import {type CheckedSchema, finishGrammar} from "./jsonSchemaGrammar.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";
import {assertConstrainable} from "./constraintFor.js";
import {grammarJobPlace} from "./grammarJobPlaces.js";

/** Converts a checked schema's JSON text to GBNF off the event loop (default: the addon's compileJsonSchema). */
export type AsyncSchemaConverter = (schemaJson: string, budget: GrammarBudget) => Promise<string>;

const addonConverter: AsyncSchemaConverter = (schemaJson, budget) =>
    anyNativeAddon().compileJsonSchema(schemaJson, budget.maxJobs, budget.maxGrammarBytes);

/** How compileConstraint runs, beside its budget. */
export interface CompileConstraintOptions {
    /**
     * Stops waiting when aborted (a client that left, a shutdown, Ctrl-C): the promise rejects with the
     * signal's reason at once and the work, abandoned, ends on its own thread.
     */
    readonly signal?: AbortSignal;
    /** Default: the addon's compileJsonSchema. */
    readonly convert?: AsyncSchemaConverter;
}

/**
 * The constraint for a checked schema on `backend`, compiled off the event loop within `budget`:
 * conversion (a thread of its own) and grammar construction (another) must end within
 * `budget.timeoutMs` together, and the grammar within `budget.maxGrammarBytes`; otherwise a
 * GrammarTooComplexError naming the schema's field. Work past the deadline, or once `options.signal`
 * aborts, is abandoned: its thread ends on its own and its grammar, if any, is disposed of. At most
 * `budget.maxJobs` grammar jobs run at once (grammarJobPlaces): a compile waits for a place within its
 * deadline, and one still waiting at the deadline is a ServerOverloadedError (HTTP 429). The
 * constraint's masks are held to `budget.computeMs`.
 */
export async function compileConstraint(
    backend: ModelBackend,
    schema: CheckedSchema,
    budget: GrammarBudget,
    options: CompileConstraintOptions = {}
): Promise<TokenConstraint> {
    assertConstrainable(backend, schema.field);
    const convert = options.convert ?? addonConverter;
    const limits: Limits = {deadline: performance.now() + budget.timeoutMs, signal: options.signal};
    const overTime = (stage: string) => (): GrammarTooComplexError =>
        new GrammarTooComplexError(
            `${stage} took longer than the budget of ${budget.timeoutMs} ms (--grammar-timeout-ms): simplify the schema`,
            schema.field
        );
    const converting = await inPlace(budget, limits, () => jobErrors(convert(schema.text, budget), schema.field));
    const converted = await withinLimits(converting.job, limits, overTime("converting the schema to a grammar"));
    const grammar = finishGrammar(schema, converted);
    // A backend without compileConstraint (a test double) builds on the calling thread.
    const compiling = await inPlace(budget, limits, () =>
        backend.compileConstraint != null
            ? backend.compileConstraint(grammar, {maxJobs: budget.maxJobs, computeBudgetMs: budget.computeMs, field: schema.field})
            : Promise.resolve().then(() => backend.createConstraint!(grammar))
    );
    return withinLimits(compiling.job, limits, overTime("building the schema's grammar"), (late) => late.dispose());
}

/** `start`ed once one of the budget's job places is free (grammarJobPlace); the place is held until the job's promise settles. */
async function inPlace<T>(budget: GrammarBudget, limits: Limits, start: () => Promise<T>): Promise<{job: Promise<T>}> {
    const release = await grammarJobPlace(budget.maxJobs, limits);
    const job = start();
    job.then(release, release);
    // Wrapped: an async function would otherwise wait for the job itself.
    return {job};
}

/** The native job's errors as typed ones: too large a grammar, too many jobs at once, a schema the converter refuses. */
async function jobErrors<T>(job: Promise<T>, field: string): Promise<T> {
    try {
        return await job;
    } catch (error) {
        const code = (error as {code?: unknown}).code;
        const message = (error as Error).message;
        if (code === "grammar_too_large") throw new GrammarTooComplexError(message, field);
        if (code === "grammar_jobs_busy") throw new ServerOverloadedError(message);
        throw new InvalidInputError(message, field);
    }
}

/** When waiting ends: a deadline (performance.now() time) and an optional signal. */
interface Limits {
    readonly deadline: number;
    readonly signal?: AbortSignal;
}

/**
 * `work`'s result; or `late()`'s error once the deadline passes first, or the signal's reason once it
 * aborts first. A result that arrives after either goes to `discard`.
 */
async function withinLimits<T>(work: Promise<T>, limits: Limits, late: () => Error, discard?: (value: T) => void): Promise<T> {
    const {signal} = limits;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    let gaveUp = false;
    const limit = new Promise<never>((_resolve, reject) => {
        const giveUp = (error: unknown): void => {
            gaveUp = true;
            reject(error);
        };
        if (signal?.aborted === true) return giveUp(signal.reason);
        timer = setTimeout(() => giveUp(late()), Math.max(0, limits.deadline - performance.now()));
        onAbort = () => giveUp(signal!.reason);
        signal?.addEventListener("abort", onAbort, {once: true});
    });
    work.then(
        (value) => {
            if (gaveUp) discard?.(value);
        },
        () => undefined
    );
    try {
        return await Promise.race([work, limit]);
    } finally {
        clearTimeout(timer);
        if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    }
}
