import {InvalidPolicyError} from "../errors.js";
import {createBlockPolicy} from "./blockPolicy.js";
import {createCalibratedPolicy} from "./calibratedPolicy.js";
import {CorrectionMemory} from "./CorrectionMemory.js";
import {createFuzzyPolicy} from "./fuzzyPolicy.js";
import {createGreedyPolicy} from "./greedyPolicy.js";
import {createLossyPolicy} from "./lossyPolicy.js";
import {createMatchPolicy} from "./matchPolicy.js";
import {type PolicyConfig, policyConfigSchema} from "./policyConfigSchema.js";
import {createRandomAcceptancePolicy} from "./randomAcceptancePolicy.js";
import {createStrictPolicy} from "./strictPolicy.js";
import {createTypicalPolicy} from "./typicalPolicy.js";
import type {VerificationPolicy} from "./VerificationPolicy.js";

/** Validate an untrusted policy configuration; the error names the offending field. */
export function parsePolicyConfig(value: unknown, field = "policy"): PolicyConfig {
    const parsed = policyConfigSchema.safeParse(value);
    if (parsed.success) return parsed.data;
    // An unknown key says more than the required parameter it was probably meant to be ("treshold").
    const issue = parsed.error.issues.find((candidate) => candidate.code === "unrecognized_keys") ?? parsed.error.issues[0];
    const path = [field, ...issue.path.map(String)].join(".");
    if (issue.code === "unrecognized_keys")
        throw new InvalidPolicyError(`unknown parameter ${issue.keys.map((key) => `"${key}"`).join(", ")}`, path);
    if (issue.code === "invalid_type" && /received undefined$/.test(issue.message) && issue.path.length === 1) {
        const kind = (value as {kind?: unknown} | null)?.kind;
        throw new InvalidPolicyError(
            `${typeof kind === "string" ? kind : "the policy"} needs "${String(issue.path[0])}" (a ${issue.expected})`,
            field
        );
    }
    if (issue.code === "invalid_union" && (issue.path.length === 0 || (issue.path.length === 1 && issue.path[0] === "kind")))
        throw new InvalidPolicyError(
            `unknown policy kind; expected one of greedy, strict, block, match, typical, fuzzy, calibrated, lossy, random`,
            `${field}.kind`
        );
    throw new InvalidPolicyError(issue.message, path);
}

export interface PolicyResources {
    /** The correction memory a `calibrated` policy reads and updates (a fresh empty one otherwise). */
    correctionMemory?: CorrectionMemory;
    /** Vocabulary size, needed to create an empty memory or to check inline entries. */
    vocabularySize?: number;
}

/** Build a policy from a validated configuration. */
export function createPolicy(config: PolicyConfig, resources: PolicyResources = {}): VerificationPolicy {
    switch (config.kind) {
        case "greedy":
            return createGreedyPolicy();
        case "strict":
            return createStrictPolicy();
        case "block":
            return createBlockPolicy();
        case "match":
            return createMatchPolicy();
        case "typical":
            return createTypicalPolicy(config);
        case "fuzzy":
            return createFuzzyPolicy(config);
        case "lossy":
            return createLossyPolicy(config);
        case "random":
            return createRandomAcceptancePolicy(config);
        case "calibrated": {
            const entries = config.memoryEntries ?? [];
            const shared = resources.correctionMemory;
            const vocabularySize = shared?.vocabularySize ?? resources.vocabularySize;
            if (vocabularySize == null)
                throw new InvalidPolicyError("a calibrated policy needs a correction memory or the vocabulary size", "policy.memory");
            for (const [index, [draftToken, targetToken]] of entries.entries()) {
                if (draftToken >= vocabularySize || targetToken >= vocabularySize)
                    throw new InvalidPolicyError(`token id outside [0, ${vocabularySize})`, `policy.memoryEntries.${index}`);
            }
            // Inline entries belong to this policy alone; a shared memory only takes online updates.
            if (shared != null)
                return createCalibratedPolicy({...config, memory: entries.length === 0 ? shared : shared.withPrivateEntries(entries)});
            const memory = new CorrectionMemory(vocabularySize);
            for (const [draftToken, targetToken, count] of entries) memory.record(draftToken, targetToken, count);
            return createCalibratedPolicy({...config, memory});
        }
    }
}
