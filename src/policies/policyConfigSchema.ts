import {z} from "zod";
import {divergenceKinds} from "../divergences/DivergenceKind.js";

/**
 * Every verification policy and its parameters, validated. Unknown kinds and unknown parameters are
 * errors (strict objects). Defaults are the papers' / vLLM's where they give one; a parameter with no
 * published default (fuzzy threshold, lossy τ, random acceptance rate) is required.
 */
const memoryEntry = z.tuple([z.int().min(0), z.int().min(0), z.int().min(1)]);

export const policyConfigSchema = z.discriminatedUnion("kind", [
    z.strictObject({kind: z.literal("greedy")}),
    z.strictObject({kind: z.literal("strict")}),
    z.strictObject({kind: z.literal("block")}),
    z.strictObject({kind: z.literal("match")}),
    z.strictObject({
        kind: z.literal("typical"),
        posteriorThreshold: z.number().min(0).max(1).default(0.09),
        posteriorAlpha: z.number().min(0).max(1).default(0.3)
    }),
    z.strictObject({
        kind: z.literal("fuzzy"),
        divergence: z.enum(divergenceKinds).default("js"),
        threshold: z.number().min(0),
        topK: z.int().min(1).optional(),
        distribution: z.enum(["raw", "processed"]).default("raw")
    }),
    z.strictObject({
        kind: z.literal("calibrated"),
        // Not published: the Calibrated SD paper's text leaves both values blank ("frequency threshold to ,
        // and semantic gating threshold to"); 6 and 0.01 are what secondary descriptions of the paper
        // give, kept as defaults so `calibrated` runs without arguments; tune τ with `calibrate`.
        frequencyThreshold: z.int().min(1).default(6),
        tau: z.number().gt(0).max(1).default(0.01),
        onlineUpdate: z.boolean().default(true),
        /** A correction-memory JSON file (relative paths resolve against the file that names it). */
        memory: z.string().min(1).optional(),
        /** Inline memory entries [draft, target, count]; added to the file's when both are given. */
        memoryEntries: z.array(memoryEntry).optional()
    }),
    z.strictObject({kind: z.literal("lossy"), tau: z.number().gt(0).max(1)}),
    z.strictObject({kind: z.literal("random"), acceptanceProbability: z.number().min(0).max(1)})
]);

export type PolicyConfig = z.output<typeof policyConfigSchema>;
export type PolicyConfigInput = z.input<typeof policyConfigSchema>;
export type PolicyKind = PolicyConfig["kind"];

export const policyKinds: readonly PolicyKind[] = [
    "greedy",
    "strict",
    "block",
    "match",
    "typical",
    "fuzzy",
    "calibrated",
    "lossy",
    "random"
];
