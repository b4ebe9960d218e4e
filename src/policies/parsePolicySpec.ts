import {InvalidPolicyError} from "../errors.js";
import {parsePolicyConfig} from "./createPolicy.js";
import type {PolicyConfig} from "./policyConfigSchema.js";

/**
 * Compact policy specs for the command line, `kind[:argument…]`:
 *   greedy | strict | block | match
 *   typical[:threshold[:alpha]]
 *   fuzzy:DIVERGENCE:THRESHOLD[:TOPK]       e.g. fuzzy:js:0.4, fuzzy:js-fsd:0.5:50
 *   calibrated[:FREQUENCY[:TAU]]            e.g. calibrated:6:0.01
 *   lossy:TAU                               e.g. lossy:0.05
 *   random:PROBABILITY                      e.g. random:0.6
 * or a JSON object, e.g. '{"kind":"fuzzy","threshold":0.4,"distribution":"processed"}'.
 */
export function parsePolicySpec(spec: string, field = "policy"): PolicyConfig {
    const text = spec.trim();
    if (text.startsWith("{")) {
        let value: unknown;
        try {
            value = JSON.parse(text);
        } catch (error) {
            throw new InvalidPolicyError(`not valid JSON: ${(error as Error).message}`, field);
        }
        return parsePolicyConfig(value, field);
    }
    const [kind, ...parts] = text.split(":");
    const number = (index: number, name: string): number | undefined => {
        if (parts[index] == null || parts[index] === "") return undefined;
        const value = Number(parts[index]);
        if (!Number.isFinite(value)) throw new InvalidPolicyError(`${name} must be a number, got "${parts[index]}" in "${spec}"`, field);
        return value;
    };
    const maximumParts: Record<string, number> = {
        greedy: 0,
        strict: 0,
        block: 0,
        match: 0,
        typical: 2,
        fuzzy: 3,
        calibrated: 2,
        lossy: 1,
        random: 1
    };
    if (kind in maximumParts && parts.length > maximumParts[kind])
        throw new InvalidPolicyError(`"${kind}" takes at most ${maximumParts[kind]} arguments, got "${spec}"`, field);
    const config: Record<string, unknown> = {kind};
    switch (kind) {
        case "typical":
            config.posteriorThreshold = number(0, "threshold");
            config.posteriorAlpha = number(1, "alpha");
            break;
        case "fuzzy":
            config.divergence = parts[0] === "" ? undefined : parts[0];
            config.threshold = number(1, "threshold");
            config.topK = number(2, "top-k");
            break;
        case "calibrated":
            config.frequencyThreshold = number(0, "frequency threshold");
            config.tau = number(1, "tau");
            break;
        case "lossy":
            config.tau = number(0, "tau");
            break;
        case "random":
            config.acceptanceProbability = number(0, "probability");
            break;
    }
    for (const key of Object.keys(config)) if (config[key] === undefined) delete config[key];
    return parsePolicyConfig(config, field);
}

/** A short, stable label for a policy config (the inverse of parsePolicySpec for the common cases). */
export function policyLabel(config: PolicyConfig): string {
    switch (config.kind) {
        case "typical":
            return `typical:${config.posteriorThreshold}:${config.posteriorAlpha}`;
        case "fuzzy":
            return `fuzzy:${config.divergence}:${config.threshold}${config.topK != null ? `:${config.topK}` : ""}${config.distribution === "processed" ? "(processed)" : ""}`;
        case "calibrated":
            return `calibrated:${config.frequencyThreshold}:${config.tau}`;
        case "lossy":
            return `lossy:${config.tau}`;
        case "random":
            return `random:${config.acceptanceProbability}`;
        default:
            return config.kind;
    }
}
