import {z} from "zod";

/**
 * The `speculative` extension field of a completion request, so both arms of a canary run on one
 * server: `"off"` decodes target-only; an object overrides the server's defaults for this request.
 * `policy` is a compact spec ("fuzzy:js:0.4") or a policy object; γ = 0 is target-only too.
 */
export const speculativeFieldSchema = z.union([
    z.literal("off"),
    z.strictObject({
        /** Drafter spec ("ngram", "suffix", "ngram+model", …); default: the server's --drafter. */
        drafter: z.string().min(1).max(200).optional(),
        policy: z.union([z.string().min(1).max(1000), z.record(z.string(), z.unknown())]).optional(),
        /** Draft tokens per step, or "auto" / "auto:MAX" (chosen each step in 0..8 or 0..MAX; parseGammaSpec). */
        gamma: z.union([z.int().min(0).max(64), z.string().min(1).max(16)]).optional(),
        /** Stop drafting below this draft top probability (llama.cpp --draft-p-min); 0 disables. */
        min_confidence: z.number().min(0).max(1).optional(),
        draft_sampling: z.enum(["sample", "greedy"]).optional(),
        draft_length: z.enum(["fixed", "schedule", "auto"]).optional(),
        /** "WIDTHxDEPTH": a token tree no wider than the server's --tree; "off": a chain. Default: the server's. */
        tree: z.string().min(1).max(16).optional()
    })
]);

export type SpeculativeField = z.infer<typeof speculativeFieldSchema>;
