import {z} from "zod";
import {samplingOptionsSchema} from "../distributions/SamplingOptions.js";
import {InvalidInputError} from "../errors.js";
import {policyConfigSchema} from "../policies/policyConfigSchema.js";

/**
 * Options of one generation. Defaults follow what node-llama-cpp / vLLM users expect: lossless
 * verification (`strict`), γ = 4, sampled drafts (q is then the draft's own sampler row, which keeps
 * `strict` exact at any temperature; greedy drafts are verified as q-less proposals, q = δ_x).
 */
export const generationOptionsSchema = z.strictObject({
    policy: policyConfigSchema.default({kind: "strict"}),
    gamma: z.int().min(0).max(64).default(4),
    /**
     * `fixed`: γ every step. `schedule`: Hugging Face's +2 / −1 heuristic. `auto`: before each step, the
     * length in 0..maxGamma that maximises predicted tokens per second from the measured cost of a
     * target step at the current batch and the generation's acceptance (src/engine/AdaptiveDraftLength.ts);
     * no draft when none pays. γ is then the length of the first steps; a token tree's depth becomes
     * its largest depth.
     */
    draftLength: z.enum(["fixed", "schedule", "auto"]).default("fixed"),
    /** Cap for the `schedule` and `auto` modes; defaults to 2·γ. */
    maxGamma: z.int().min(0).max(64).optional(),
    /** Stop drafting when the draft's top probability is below this (llama.cpp --draft-p-min); 0 disables. */
    minConfidence: z.number().min(0).max(1).default(0),
    draftSampling: z.enum(["sample", "greedy"]).default("sample"),
    /**
     * Drafter spec (src/engine/drafters/parseDrafterSpec.ts): `model`, `ngram[:MIN[:MAX[:LENGTH]]]`,
     * `suffix[:MIN_COUNT[:DEPTH[:MAX_NODES]]]` or a chain such as `ngram+model`. Absent: `model` when a
     * draft model is given, else none (target-only).
     */
    drafter: z.string().min(1).optional(),
    /**
     * Token trees instead of a chain: the draft model proposes `width` children of the pending token,
     * each growing a chain `depth` tokens deep (width × depth drafted tokens), verified in one target
     * call by recursive rejection sampling (T > 0) or the longest argmax path (T = 0). Needs a draft
     * model, the native backend and the strict or greedy policy; `gamma` is then unused.
     */
    tree: z.strictObject({width: z.int().min(1).max(16), depth: z.int().min(1).max(16)}).optional(),
    sampling: samplingOptionsSchema.default({temperature: 1, topK: 0, topP: 1, minP: 0}),
    maxTokens: z.int().min(1).default(256),
    stop: z.array(z.string().min(1)).max(16).readonly().default([]),
    seed: z.int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
    /** Keep generating past the end-of-generation token, to maxTokens (vLLM's and llama-server's ignore_eos: load benchmarks). */
    ignoreEos: z.boolean().default(false),
    /**
     * The first token comes from the prompt's own last row, before any draft, as llama-server does:
     * time to first token is one target decode of the prompt, and the drafter reads the prompt after
     * it. serve sets it. False (default): the first step already drafts, which offline measurements
     * (bench, sweep, fairness, the oracle) model. Both are exact: a step without a draft is
     * target-only decoding.
     */
    firstTokenFromPrompt: z.boolean().default(false),
    /**
     * At temperature 0 every policy among greedy/strict/match/typical reduces to exact match with the
     * target argmax (proved in the policy tests), so both models return only argmax ids instead of
     * full logit rows: identical output, and the logit transfer (a cost per vocabulary entry and
     * position, large in node-llama-cpp) disappears. Needs minConfidence 0 (which reads draft rows).
     */
    argmaxFastPath: z.boolean().default(true),
    /**
     * Strict verification of a draft model's tokens at T > 0 with device token selection: target draws
     * per row read with the drafted id's probability, the proposals a rejection's residual is sampled
     * from (src/engine/residualDraw.ts). More makes the fallback to whole rows (every draw rejected)
     * rarer and each row's read larger (8 + 8 × this bytes).
     */
    residualCandidates: z.int().min(1).max(64).default(16),
    /**
     * Log-probabilities of each emitted token under the target's own distribution (log-softmax of its
     * raw logits, before temperature, truncation or a constraint), with this many most likely
     * alternatives (0: the emitted token's alone). Absent: none. Turns the argmax fast path off.
     */
    logprobs: z.int().min(0).max(20).optional(),
    /** Prepend the model's BOS token to the prompt when it has one and its GGUF adds it (addsBos). */
    addBos: z.boolean().default(true)
});

export type GenerationOptions = z.output<typeof generationOptionsSchema>;
export type GenerationOptionsInput = z.input<typeof generationOptionsSchema>;

export function parseGenerationOptions(value: unknown): GenerationOptions {
    const parsed = generationOptionsSchema.safeParse(value ?? {});
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const message = issue.code === "unrecognized_keys" ? `unknown option ${issue.keys.map((key) => `"${key}"`).join(", ")}` : issue.message;
    throw new InvalidInputError(message, issue.path.map(String).join(".") || "options");
}
