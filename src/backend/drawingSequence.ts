import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import type {BackendSequence, EvaluateOptions} from "./ModelBackend.js";

/** The ids evaluateDrawn drew, and how many of them were drawn on the host from copied logit rows. */
export interface DrawnTokens {
    readonly tokens: number[];
    /** Rows whose ids were drawn on the host (the device declined: see NativeSequence.evaluateDrawn); 0 when every id came from the graph. */
    readonly hostRows: number;
}

/**
 * A sequence that draws token ids itself from its sampler rows, given a uniform per row: inside the
 * decode graph where its backend selects tokens on the device (only the ids leave it), else from the
 * copied rows. The draw is SeededChance.choose's inverse-CDF rule, so the caller's seeded generator
 * keeps deciding every token.
 */
export interface DrawingSequence extends BackendSequence {
    /**
     * Appends `tokens` and draws one id per wanted position (EvaluateOptions.positions; default the last)
     * from its sampler row for `sampling` (temperature > 0), with `uniforms[i]` in [0, 1) for position i.
     */
    evaluateDrawn(
        tokens: readonly number[],
        sampling: SamplingOptions,
        uniforms: readonly number[],
        options?: Pick<EvaluateOptions, "positions">
    ): Promise<DrawnTokens>;

    /**
     * Appends `tokens` and, per wanted position i, reads only what lossless verification of a draft
     * without probabilities (q = δ) needs: p_i(drafted[i]) and a draw, with `uniforms[i]`, from p_i with
     * drafted[i] removed (drafted[i] = −1: from p_i itself).
     */
    evaluateVerified(
        tokens: readonly number[],
        sampling: SamplingOptions,
        drafted: readonly number[],
        uniforms: readonly number[],
        options?: Pick<EvaluateOptions, "positions">
    ): Promise<VerifiedRows>;
}

/** evaluateVerified's rows: per wanted position, the drafted id's probability and a draw from the row without it. */
export interface VerifiedRows {
    /** The id drawn from each row with its drafted id removed (the row itself where none was drafted). */
    readonly residualTokens: number[];
    /** The drafted id's probability in each row (0 where none was drafted). */
    readonly draftedProbabilities: number[];
    /** Rows computed on the host from copied logit rows. */
    readonly hostRows: number;
}

/** Whether `sequence` draws ids itself (evaluateDrawn). */
export function supportsDrawing(sequence: BackendSequence): sequence is DrawingSequence {
    return typeof (sequence as Partial<DrawingSequence>).evaluateDrawn === "function";
}
