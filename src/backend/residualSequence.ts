import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import type {BackendSequence, EvaluateOptions} from "./ModelBackend.js";

/** evaluateScored's draws: per wanted position, the id drawn from its sampler row and that id's probability. */
export interface ScoredDraws {
    readonly tokens: number[];
    readonly probabilities: number[];
    /** The row's probability at each id `gather` gave for it (−1: 0); empty lists without `gather`. */
    readonly gathered: number[][];
    /** Rows computed on the host from copied logit rows (the device declined, or the rows were copied anyway). */
    readonly hostRows: number;
}

/** evaluateCandidates' rows: per wanted position, p(drafted) and K draws from the row with their probabilities. */
export interface CandidateRows {
    /** The drafted id's probability in each row (0 where none was drafted). */
    readonly draftedProbabilities: number[];
    /** K ids drawn from each row, one per uniform, in the uniforms' order. */
    readonly candidates: number[][];
    /** Each candidate's probability in its row. */
    readonly candidateProbabilities: number[][];
    readonly hostRows: number;
}

/** evaluateGathered's rows: per wanted position, the row's probability of each id asked. */
export interface GatheredRows {
    readonly probabilities: number[][];
    readonly hostRows: number;
}

/** Most candidates (or ids gathered) per row. */
export const maxResidualWidth = 64;

/**
 * A sequence that reads only what speculative sampling with a draft model needs of its sampler rows
 * (native/src/DeviceResidual.h), inside the decode graph where its backend selects tokens on the
 * device, else from copied rows: the draft's drawn ids with their probabilities, the target's
 * probability of each drafted id with K draws from its row (the bonus token, and the proposals for
 * rejection sampling from the residual), and the draft row's probabilities at those K ids. Every
 * draw is SeededChance.choose's inverse-CDF rule with the caller's uniform.
 */
export interface ResidualSequence extends BackendSequence {
    /**
     * Appends `tokens`; per wanted position i draws an id with `uniforms[i]` and returns it with its
     * probability, and the row's probability at each id of `options.gather[i]` (every position the same
     * count K, 1..maxResidualWidth; −1: none). A draft model draws and, at a rejection, reads q at the
     * target's candidates with the same K, so its sampler chain stays one (a change of chain makes
     * llama.cpp reserve its graphs again).
     */
    evaluateScored(
        tokens: readonly number[],
        sampling: SamplingOptions,
        uniforms: readonly number[],
        options?: Pick<EvaluateOptions, "positions"> & {readonly gather?: readonly (readonly number[])[]}
    ): Promise<ScoredDraws>;

    /**
     * Appends `tokens`; per wanted position i: the probability of `drafted[i]` (−1: none) and one draw
     * per uniform of `uniforms[i]` (every position the same count K, 1..maxResidualWidth).
     */
    evaluateCandidates(
        tokens: readonly number[],
        sampling: SamplingOptions,
        drafted: readonly number[],
        uniforms: readonly (readonly number[])[],
        options?: Pick<EvaluateOptions, "positions">
    ): Promise<CandidateRows>;

    /** Appends `tokens`; per wanted position i, the row's probability of each id of `ids[i]` (every position the same count). */
    evaluateGathered(
        tokens: readonly number[],
        sampling: SamplingOptions,
        ids: readonly (readonly number[])[],
        options?: Pick<EvaluateOptions, "positions">
    ): Promise<GatheredRows>;
}

/** Whether `sequence` reads draft-model verification's values itself (evaluateScored). */
export function readsResiduals(sequence: BackendSequence): sequence is ResidualSequence {
    return typeof (sequence as Partial<ResidualSequence>).evaluateScored === "function";
}
