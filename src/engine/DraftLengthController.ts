import {InvalidInputError} from "../errors.js";

/**
 * How many tokens the draft proposes per step.
 * - `fixed`: always γ (the draft may still stop early at `minConfidence`, 0 disables).
 * - `schedule`: Hugging Face assisted generation's heuristic — start at γ, +2 after a step where every
 *   draft token was accepted, −1 (never below 1) otherwise; capped at `maxGamma`.
 * In both, drafting stops early when the draft's top probability falls below `minConfidence`
 * (llama.cpp's --draft-p-min; node-llama-cpp's minConfidence).
 */
export interface DraftLengthOptions {
    /** `auto` is chosen by AdaptiveDraftLength; here it is γ, capped at maxGamma. */
    readonly mode: "fixed" | "schedule" | "auto";
    readonly gamma: number;
    readonly maxGamma: number;
    readonly minConfidence: number;
}

export class DraftLengthController {
    private current: number;

    public constructor(private readonly options: DraftLengthOptions) {
        if (!Number.isInteger(options.gamma) || options.gamma < 0 || options.gamma > 64)
            throw new InvalidInputError(`must be an integer in [0, 64], got ${options.gamma}`, "gamma");
        if (!Number.isInteger(options.maxGamma) || options.maxGamma < options.gamma)
            throw new InvalidInputError(`must be an integer ≥ gamma, got ${options.maxGamma}`, "maxGamma");
        if (!(options.minConfidence >= 0 && options.minConfidence <= 1))
            throw new InvalidInputError(`must be in [0, 1], got ${options.minConfidence}`, "minConfidence");
        this.current = options.gamma;
    }

    /** Draft tokens to propose in the next step (before any confidence cut). */
    public get next(): number {
        return this.current;
    }

    public get minConfidence(): number {
        return this.options.minConfidence;
    }

    /** Update after a step that proposed `proposed` tokens and had `accepted` accepted. */
    public observe(proposed: number, accepted: number): void {
        if (this.options.mode !== "schedule" || proposed === 0) return;
        this.current = accepted === proposed ? Math.min(this.options.maxGamma, this.current + 2) : Math.max(1, this.current - 1);
    }
}
