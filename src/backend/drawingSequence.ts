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
}

/** Whether `sequence` draws ids itself (evaluateDrawn). */
export function supportsDrawing(sequence: BackendSequence): sequence is DrawingSequence {
    return typeof (sequence as Partial<DrawingSequence>).evaluateDrawn === "function";
}
