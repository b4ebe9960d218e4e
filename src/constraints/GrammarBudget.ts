/**
 * What one structured-output request may spend on its grammar in `serve` (flags --grammar-timeout-ms,
 * --grammar-compute-ms, --grammar-jobs); the sizes no budget makes safe are refused before it
 * (schemaLimits).
 */
export interface GrammarBudget {
    /** Milliseconds converting the schema and building its grammar may take together (then 400 grammar_too_complex). */
    readonly timeoutMs: number;
    /** Largest grammar (GBNF text) a schema may convert to, in bytes: what construction and every step pay for. */
    readonly maxGrammarBytes: number;
    /** Grammar jobs (conversions, constructions) running at once, abandoned ones included (others wait; 429 if none frees in time). */
    readonly maxJobs: number;
    /** Milliseconds of mask work (on worker threads) one request's grammar may spend over its generation. */
    readonly computeMs: number;
}

export const defaultGrammarBudget: GrammarBudget = {
    timeoutMs: 2000,
    maxGrammarBytes: 1_048_576,
    maxJobs: 4,
    computeMs: 120_000
};
