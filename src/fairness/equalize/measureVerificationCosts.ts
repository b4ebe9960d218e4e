import type {ModelBackend} from "../../backend/ModelBackend.js";
import type {SamplingOptions} from "../../distributions/SamplingOptions.js";
import {generate} from "../../engine/generate.js";
import {GenerationTelemetry} from "../../engine/GenerationTelemetry.js";
import {InvalidInputError} from "../../errors.js";
import type {VerificationCosts} from "./predictGammaSpeedups.js";

export interface VerificationCostOptions {
    /** Measures t_T(k) for k = 1..maxGamma + 1. */
    readonly maxGamma: number;
    /** Prompt token ids (generate adds BOS), e.g. one item of each group. */
    readonly prompts: readonly (readonly number[])[];
    readonly sampling: SamplingOptions;
    /** Tokens per run; default 4·(maxGamma + 1), several full steps even at the largest γ. */
    readonly maxTokens?: number;
    readonly seed?: number;
}

/**
 * The cost curve from the engine's own telemetry: strict generation at every γ in 0..maxGamma on
 * the same prompts, each verification timed by batch size (a step at γ verifies γ+1 tokens, and the
 * first step of a run always verifies a full batch), t_D from the single-token draft evaluations.
 * Timing real steps rather than the target alone matters: draft and target evaluations interleave
 * and the cache grows as in serving, and on the shipped family a back-to-back benchmark of the
 * target alone put t_T(5) at about half the in-run cost. The γ values alternate within each
 * prompt so load drift spreads over all of them; an untimed first pass takes llama.cpp's first-use
 * cost of each batch size.
 */
export async function measureVerificationCosts(
    target: ModelBackend,
    draft: ModelBackend,
    options: VerificationCostOptions
): Promise<VerificationCosts> {
    const {maxGamma} = options;
    const maxTokens = options.maxTokens ?? 4 * (maxGamma + 1);
    if (!Number.isInteger(maxGamma) || maxGamma < 1) throw new InvalidInputError(`must be a positive integer, got ${maxGamma}`, "maxGamma");
    if (options.prompts.length === 0) throw new InvalidInputError("has no prompts", "prompts");
    const contextSize = Math.min(target.contextSize, draft.contextSize);
    // BOS, the prompt, every generated token and the final pending token must fit (as in measureFairnessItem).
    const promptBudget = contextSize - maxTokens - 2;
    if (promptBudget < 1)
        throw new InvalidInputError(
            `${maxTokens} tokens per run leave no room for a prompt in a ${contextSize}-token context`,
            "maxTokens"
        );
    const prompts = options.prompts.map((prompt) => prompt.slice(Math.max(0, prompt.length - promptBudget)));

    const run = (prompt: readonly number[], gamma: number, tokens: number, seed: number) =>
        generate(target, gamma === 0 ? undefined : draft, prompt, {
            policy: {kind: "strict"},
            sampling: options.sampling,
            gamma,
            maxTokens: tokens,
            seed
        });
    for (let gamma = 0; gamma <= maxGamma; gamma++) await run(prompts[0], gamma, Math.min(maxTokens, gamma + 1), options.seed ?? 0);
    const telemetry = new GenerationTelemetry();
    for (const [index, prompt] of prompts.entries())
        for (let offset = 0; offset <= maxGamma; offset++) {
            const gamma = (index + offset) % (maxGamma + 1);
            telemetry.merge((await run(prompt, gamma, maxTokens, (options.seed ?? 0) + index)).telemetry);
        }

    const curve = telemetry.costCurve();
    const targetMilliseconds = Array.from({length: maxGamma + 1}, (_value, index) => curve[index + 1]);
    const [draftTotal, draftCount] = telemetry.draftEvaluations;
    const missing = targetMilliseconds.findIndex((time) => !(time > 0));
    if (missing >= 0) throw new InvalidInputError(`the runs timed no ${missing + 1}-token verification above 0 ms`, "costs");
    if (draftCount === 0 || !(draftTotal > 0))
        throw new InvalidInputError("the runs timed no single-token draft evaluation above 0 ms", "costs");
    return {targetMilliseconds, draftMilliseconds: draftTotal / draftCount};
}
