import type {ConfigurationMeasurement} from "./measureConfiguration.js";

/** Per-token decode times of the two models alone, measured in the same sweep. */
export interface StepCosts {
    /** t_T(1): target-only decode seconds per emitted token. */
    readonly targetStepSeconds: number;
    /** t_D: draft-only decode seconds per emitted token. */
    readonly draftStepSeconds: number;
}

type Counts = Pick<ConfigurationMeasurement, "emittedTokens" | "decodeSeconds" | "acceptedTokens" | "draftTokens">;

/** t_T(1) and t_D from the target-only and draft-only rows; null when either produced no tokens. */
export function stepCostsOf(targetOnly: Counts, draftOnly: Counts): StepCosts | null {
    if (targetOnly.emittedTokens === 0 || draftOnly.emittedTokens === 0) return null;
    return {
        targetStepSeconds: targetOnly.decodeSeconds / targetOnly.emittedTokens,
        draftStepSeconds: draftOnly.decodeSeconds / draftOnly.emittedTokens
    };
}

/**
 * Decode seconds a speculative configuration would take if verifying γ + 1 tokens cost one target
 * step — the memory-bound regime of a GPU serving a large target, which the papers' speed-ups assume
 * and a small compute-bound CPU model does not have (there a batch of γ + 1 tokens costs several steps). Every
 * verification emits its accepted tokens plus one, so target calls = emitted − accepted; the draft
 * evaluates each proposed token once. A single-model row (no drafts) is its measured time.
 */
export function oneStepVerificationSeconds(measurement: Counts, costs: StepCosts, model: "target" | "draft" = "target"): number {
    if (model === "draft") return measurement.emittedTokens * costs.draftStepSeconds;
    const targetCalls = measurement.emittedTokens - measurement.acceptedTokens;
    return targetCalls * costs.targetStepSeconds + measurement.draftTokens * costs.draftStepSeconds;
}
