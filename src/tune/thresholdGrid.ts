import {InvalidInputError} from "../errors.js";
import {parsePolicySpec} from "../policies/parsePolicySpec.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";

/** Policies whose acceptance a single threshold loosens, as `calibrate --policy` takes them. */
export type TunablePolicyKind = "fuzzy" | "calibrated" | "typical";

export interface ThresholdGrid {
    readonly kind: TunablePolicyKind;
    /** What the threshold is, for reports: "T (js)", "τ", "posterior threshold". */
    readonly parameter: string;
    readonly thresholds: readonly number[];
    /** The policy at each threshold, in the order of `thresholds`. */
    readonly policies: readonly PolicyConfig[];
}

/**
 * Default grids; none is published by a seed. They span "about strict" to "accept nearly everything":
 * fuzzy's default divergence is textbook JS, at most ln 2 ≈ 0.69, so 0.05–0.6 covers its range (seed
 * 001 sweeps "T = [0.1, 0.2, ... 0.9, 1.0]" (App. D) with the reference code's JS variant, which is not
 * bounded by ln 2, and shows T = 0.3 and 0.7 as out-of-the-box values in Table 3). τ of the Calibrated SD paper's gate
 * is a probability ratio whose published value is blank in the stored text, swept on a log scale from
 * strict-like to permissive; typical's posterior threshold from vLLM's 0.09 both ways.
 */
const defaultThresholds: Record<TunablePolicyKind, readonly number[]> = {
    fuzzy: [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
    calibrated: [0.3, 0.1, 0.03, 0.01, 0.003, 0.001],
    typical: [0.3, 0.2, 0.09, 0.05, 0.02, 0.01]
};

/**
 * The candidate policies of `calibrate`: `base` is the policy without its threshold — "fuzzy",
 * "fuzzy:kl" (divergence), "calibrated" or "calibrated:3" (frequency threshold), "typical" — and
 * each threshold is appended as the spec's last argument (FSD's T, CSD's τ, typical's posterior
 * threshold). `memory` is the correction-memory file a calibrated policy starts from.
 */
export function thresholdGrid(base: string, thresholds?: readonly number[], memory?: string): ThresholdGrid {
    const [kind, ...parts] = base.trim().split(":");
    if (kind !== "fuzzy" && kind !== "calibrated" && kind !== "typical")
        throw new InvalidInputError(`must be fuzzy[:DIVERGENCE], calibrated[:FREQUENCY] or typical, got "${base}"`, "policy");
    if (parts.length > 1 || (kind === "typical" && parts.length > 0))
        throw new InvalidInputError(`give the policy without its threshold (the thresholds are given apart), got "${base}"`, "policy");
    if (memory != null && kind !== "calibrated") throw new InvalidInputError("only applies to the calibrated policy", "memory");
    const values = thresholds ?? defaultThresholds[kind];
    if (values.length === 0) throw new InvalidInputError("is empty", "thresholds");
    const prefix = kind === "fuzzy" ? `fuzzy:${parts[0] ?? "js"}` : kind === "calibrated" ? `calibrated:${parts[0] ?? "6"}` : "typical";
    // A bad divergence or frequency is the policy's fault, whatever the thresholds.
    parsePolicySpec(`${prefix}:0.1`, "policy");
    const policies = values.map((threshold) => {
        const policy = parsePolicySpec(`${prefix}:${threshold}`, "thresholds");
        return policy.kind === "calibrated" && memory != null ? {...policy, memory} : policy;
    });
    const parameter = kind === "fuzzy" ? `T (${prefix.slice(6)})` : kind === "calibrated" ? "τ" : "posterior threshold";
    return {kind, parameter, thresholds: [...values], policies};
}
