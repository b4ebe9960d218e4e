import type {ModelBackend} from "../backend/ModelBackend.js";
import {anyNativeAddon} from "../backend/nativeAddon.js";
import {GrammarTooComplexError, InvalidInputError, ServerOverloadedError} from "../errors.js";
import type {GrammarBudget} from "./GrammarBudget.js";
import {type CheckedSchema, finishGrammar} from "./jsonSchemaGrammar.js";
import type {TokenConstraint} from "./TokenConstraint.js";
import {assertConstrainable} from "./constraintFor.js";

/** Converts a checked schema's JSON text to GBNF off the event loop (default: the addon's compileJsonSchema). */
export type AsyncSchemaConverter = (schemaJson: string, budget: GrammarBudget) => Promise<string>;

const addonConverter: AsyncSchemaConverter = (schemaJson, budget) =>
    anyNativeAddon().compileJsonSchema(schemaJson, budget.maxJobs, budget.maxGrammarBytes);

/**
 * The constraint for a checked schema on `backend`, compiled off the event loop within `budget`:
 * conversion (a thread of its own) and grammar construction (another) must end within
 * `budget.timeoutMs` together, and the grammar within `budget.maxGrammarBytes`; otherwise a
 * GrammarTooComplexError naming the schema's field. Work past the deadline is abandoned: its thread
 * ends on its own and its grammar, if any, is disposed of. More than `budget.maxJobs` grammar jobs at
 * once is a ServerOverloadedError (HTTP 429). The constraint's masks are held to `budget.computeMs`.
 */
export async function compileConstraint(
    backend: ModelBackend,
    schema: CheckedSchema,
    budget: GrammarBudget,
    convert: AsyncSchemaConverter = addonConverter
): Promise<TokenConstraint> {
    assertConstrainable(backend, schema.field);
    const deadline = performance.now() + budget.timeoutMs;
    const overTime = (stage: string): GrammarTooComplexError =>
        new GrammarTooComplexError(
            `${stage} took longer than the server's budget of ${budget.timeoutMs} ms (--grammar-timeout-ms): simplify the schema`,
            schema.field
        );
    const converted = await withinDeadline(jobErrors(convert(schema.text, budget), schema.field), deadline, () =>
        overTime("converting the schema to a grammar")
    );
    const grammar = finishGrammar(schema, converted);
    // A backend without compileConstraint (a test double) builds on the calling thread.
    const compiling =
        backend.compileConstraint != null
            ? backend.compileConstraint(grammar, {maxJobs: budget.maxJobs, computeBudgetMs: budget.computeMs, field: schema.field})
            : Promise.resolve().then(() => backend.createConstraint!(grammar));
    return withinDeadline(
        compiling,
        deadline,
        () => overTime("building the schema's grammar"),
        (late) => late.dispose()
    );
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

/**
 * `work`'s result, or `late()`'s error once `deadline` (performance.now() time) passes first; a result
 * that arrives after that goes to `discard`.
 */
async function withinDeadline<T>(work: Promise<T>, deadline: number, late: () => Error, discard?: (value: T) => void): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const timeout = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(
            () => {
                timedOut = true;
                reject(late());
            },
            Math.max(0, deadline - performance.now())
        );
    });
    work.then(
        (value) => {
            if (timedOut) discard?.(value);
        },
        () => undefined
    );
    try {
        return await Promise.race([work, timeout]);
    } finally {
        clearTimeout(timer);
    }
}
