import {addsBos} from "../backend/addsBos.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {restrictVocabulary} from "../backend/restrictVocabulary.js";
import {processLogits} from "../distributions/processLogits.js";
import {evaluateRows} from "../backend/evaluateRows.js";
import {timedEvaluation} from "../backend/timedEvaluation.js";
import {InvalidInputError, PromptExceedsContextError} from "../errors.js";
import type {CorrectionMemory} from "../policies/CorrectionMemory.js";
import {createPolicy} from "../policies/createPolicy.js";
import {createGreedyPolicy} from "../policies/greedyPolicy.js";
import type {VerificationPolicy, VerificationResult} from "../policies/VerificationPolicy.js";
import {SeededChance} from "../random/SeededChance.js";
import {DraftLengthController} from "./DraftLengthController.js";
import {createDrafter} from "./drafters/createDrafter.js";
import type {Drafter, DrafterSession, DraftProposal} from "./drafters/Drafter.js";
import {pairDraftModel} from "./drafters/pairDraftModel.js";
import {GenerationTelemetry} from "./GenerationTelemetry.js";
import {type GenerationOptionsInput, parseGenerationOptions} from "./GenerationOptions.js";
import {type FinishReason, StopDetector} from "./StopDetector.js";

export interface GenerationChunk {
    /** Token ids emitted by this step (after stop handling). */
    tokens: number[];
    /** Text to append (held back while a UTF-8 character or a stop string is incomplete). */
    text: string;
    /** The policy's decision for this step (absent for the prompt). */
    verification?: VerificationResult;
}

export interface GenerationResult {
    text: string;
    tokens: number[];
    promptTokens: number;
    finishReason: FinishReason;
    telemetry: GenerationTelemetry;
}

export interface GenerationResources {
    /** Memory for the `calibrated` policy, shared by whoever passes the same instance. */
    correctionMemory?: CorrectionMemory;
    /** A policy instance to reuse across generations (its scratch buffers and, for CSD, its memory). */
    policy?: VerificationPolicy;
    /**
     * A drafter instance to reuse across generations (a suffix drafter's cache is shared by whoever
     * passes the same instance). Overrides `options.drafter`.
     */
    drafter?: Drafter;
    signal?: AbortSignal;
}

/**
 * Speculative generation, one step at a time (data flow: prompt → draft → verify → emit → telemetry):
 *  1. the drafter proposes up to γ tokens (a draft model: one evaluation each, keeping its rows;
 *     n-gram and suffix lookup: no model call and no rows, verified as q = δ_x);
 *  2. the target evaluates [last emitted token, drafts…] in ONE batch, returning γ+1 logit rows;
 *  3. the policy decides the accepted prefix and the final token;
 *  4. both KV caches roll back the rejected suffix; the final token is evaluated at the head of the
 *     next step's target batch, so every step costs exactly one target call.
 * The drafter is `resources.drafter`, else `options.drafter` (a spec such as `ngram:2:5` or
 * `ngram+model`), else the `model` drafter on `draft` when one is given. Without a drafter (or with
 * γ = 0, or on a step where the drafter finds nothing) the same loop is target-only decoding: each step evaluates one
 * token and the policy emits the bonus token sampled from the target row — the baseline runs through
 * exactly the same code and backend.
 */
export async function* streamGeneration(
    fullTarget: ModelBackend,
    draft: ModelBackend | undefined,
    prompt: string | readonly number[],
    optionsInput: GenerationOptionsInput = {},
    resources: GenerationResources = {}
): AsyncGenerator<GenerationChunk, GenerationResult> {
    const options = parseGenerationOptions(optionsInput);
    const drafter = resources.drafter ?? (options.drafter != null ? createDrafter(options.drafter, draft, "drafter") : draft != null ? createDrafter("model", draft) : undefined);
    const sharedSize = draft != null ? pairDraftModel(fullTarget, draft, drafter) : fullTarget.vocabularySize;
    // Ids only one model of the pair has are masked: the target is seen through the shared ids
    // (restrictVocabulary), so it never emits a token the draft cannot read, and the model drafter
    // cuts a longer draft the same way, so it never proposes one the target lacks.
    const target = restrictVocabulary(fullTarget, Math.min(sharedSize, drafter?.vocabularySize ?? sharedSize));
    const speculative = drafter != null && options.gamma > 0;
    const controller = new DraftLengthController({
        mode: options.draftLength,
        gamma: speculative ? options.gamma : 0,
        maxGamma: speculative ? Math.max(options.gamma, options.maxGamma ?? 2 * options.gamma) : 0,
        minConfidence: options.minConfidence
    });
    const policy = resources.policy ?? createPolicy(options.policy, {vocabularySize: target.vocabularySize, correctionMemory: resources.correctionMemory});
    const chance = new SeededChance(options.seed);
    const telemetry = new GenerationTelemetry();
    const started = performance.now();

    const promptTokens = typeof prompt === "string" ? target.tokenize(prompt) : [...prompt];
    if (options.addBos && addsBos(target) && promptTokens[0] !== target.bosToken) promptTokens.unshift(target.bosToken!);
    if (promptTokens.length === 0)
        throw new InvalidInputError("is empty and the model has no BOS token to start from", "prompt");
    promptTokens.forEach((token, index) => {
        if (!Number.isInteger(token) || token < 0 || token >= target.vocabularySize)
            throw new InvalidInputError(`token ${token} is outside [0, ${target.vocabularySize})`, `prompt[${index}]`);
    });
    if (promptTokens.length + 1 > target.contextSize)
        throw new PromptExceedsContextError(promptTokens.length, target.contextSize);
    telemetry.promptTokens = promptTokens.length;

    const endTokens = new Set<number>(target.eosToken != null && !options.ignoreEos ? [target.eosToken] : []);
    const stopDetector = new StopDetector({endTokens, maxTokens: options.maxTokens, stop: options.stop, decode: (tokens) => target.detokenize(tokens)});
    const targetSequence = await target.createSequence();
    let session: DrafterSession | undefined;
    try {
        // Prompt and emitted tokens; the last one is `pending`, not yet in the target's cache.
        const history = [...promptTokens];
        let pending = promptTokens[promptTokens.length - 1];
        // With firstTokenFromPrompt the first step decodes the whole prompt and takes the first token
        // from its last row, as llama-server does: no draft precedes the first token, and the drafter
        // reads the prompt after it. Otherwise the prompt but its last token is decoded here.
        let prefix: number[] | undefined = promptTokens.slice(0, -1);
        if (!options.firstTokenFromPrompt) {
            if (prefix.length > 0) await targetSequence.evaluate(prefix, {positions: []});
            prefix = undefined;
            session = speculative ? await drafter!.start({target, promptTokens, options, chance, telemetry}) : undefined;
            telemetry.time.prompt = performance.now() - started;
        }
        const argmaxPossible = options.argmaxFastPath && options.sampling.temperature === 0 && options.minConfidence === 0 &&
            resources.policy == null && greedyEquivalentAtTemperatureZero.has(options.policy.kind) && targetSequence.evaluateArgmax != null;
        let argmaxOnly = argmaxPossible && (session == null || session.supportsArgmax);
        let stepPolicy = argmaxOnly ? createGreedyPolicy() : policy;

        let finishReason: FinishReason | undefined;
        while (finishReason == null) {
            resources.signal?.throwIfAborted();
            if (session == null && speculative && prefix === undefined) {
                // After a prompt step's first token went out: the drafter reads the prompt now.
                const drafterStart = performance.now();
                session = await drafter!.start({target, promptTokens, options, chance, telemetry});
                telemetry.time.prompt += performance.now() - drafterStart;
                argmaxOnly = argmaxPossible && session.supportsArgmax;
                stepPolicy = argmaxOnly ? createGreedyPolicy() : policy;
            }
            const promptStep = prefix !== undefined;
            const room = target.contextSize - targetSequence.tokens.length - (prefix?.length ?? 0) - 1;
            if (room < 0) {
                finishReason = "length";
                break;
            }
            // A step emits up to its draft + 1 tokens: a draft longer than the tokens still wanted, less one, is wasted work.
            const wanted = promptStep ? 0 : Math.min(controller.next, room, options.maxTokens - stopDetector.emittedTokens.length - 1);

            // 1. Draft.
            let phaseStart = performance.now();
            const proposal: DraftProposal | undefined = session != null && wanted > 0
                ? await session.propose({history, maxTokens: wanted, argmaxOnly})
                : undefined;
            const draftTokens = proposal?.tokens ?? [];
            telemetry.time.draft += performance.now() - phaseStart;

            // 2. Verify: one batched target evaluation of the pending token and every draft token (in
            // the prompt step, of the whole prompt, reading its last row only).
            phaseStart = performance.now();
            const batch = [...(prefix ?? []), pending, ...draftTokens];
            const positions = batch.map((_token, index) => index).slice(prefix?.length ?? 0);
            prefix = undefined;
            const evaluation = await timedEvaluation(targetSequence, async () => argmaxOnly
                ? {argmax: await targetSequence.evaluateArgmax!(batch, {positions}), logits: [], probabilities: undefined}
                : {argmax: undefined, ...await evaluateRows(targetSequence, batch, options.sampling, {positions})});
            const {argmax: targetArgmax, logits: targetLogits} = evaluation.result;
            if (promptStep) {
                // Prompt processing: its own time line, and no point of the verification cost curve.
                telemetry.time.prompt = performance.now() - started;
            } else {
                telemetry.time.verify += performance.now() - phaseStart;
                telemetry.recordTargetEvaluation(batch.length, evaluation.milliseconds, evaluation.native);
            }

            // 3. Sampling rows, then the policy.
            phaseStart = performance.now();
            const targetProbs = evaluation.result.probabilities ?? targetLogits.map((row) => processLogits(row, options.sampling));
            telemetry.time.sampling += performance.now() - phaseStart;
            phaseStart = performance.now();
            const verification = stepPolicy.verify({
                draftTokens,
                targetProbs,
                // Absent for q-less proposals (n-gram, suffix, greedy model drafts): verified as q = δ_x.
                draftProbs: proposal?.probs,
                targetLogits,
                draftLogits: proposal?.logits,
                targetArgmax
            }, chance);
            telemetry.time.policy += performance.now() - phaseStart;

            // 4. Roll back rejected suffixes; the final token becomes the next step's pending token.
            phaseStart = performance.now();
            const accepted = verification.acceptedCount;
            await targetSequence.rollback(draftTokens.length - accepted);
            const finalToken = verification.emitted[verification.emitted.length - 1];
            history.push(...verification.emitted);
            if (proposal != null) {
                session!.observe({proposal, accepted, emitted: verification.emitted});
                telemetry.drafters.record(proposal.consulted, proposal.source, draftTokens.length, accepted);
            }
            pending = finalToken;
            controller.observe(draftTokens.length, accepted);
            telemetry.recordStep(draftTokens.length, accepted, verification.emitted.length);

            const emitted = stopDetector.accept(verification.emitted);
            finishReason = emitted.finished;
            telemetry.time.other += performance.now() - phaseStart;
            yield {tokens: emitted.tokens, text: emitted.text, verification};
        }
        telemetry.time.total = performance.now() - started;
        // What was emitted, not what verification produced past EOS, a stop string or max tokens.
        telemetry.emittedTokens = stopDetector.emittedTokens.length;
        session?.finish(stopDetector.emittedTokens);
        return {text: stopDetector.text, tokens: [...stopDetector.emittedTokens], promptTokens: promptTokens.length, finishReason, telemetry};
    } finally {
        await targetSequence.dispose();
        await session?.dispose();
    }
}

/** Policies that are exact match with the target argmax at temperature 0 (see argmaxFastPath). */
const greedyEquivalentAtTemperatureZero = new Set(["greedy", "strict", "match", "typical"]);

/** Run a generation to the end and return the result (streamGeneration without the chunks). */
export async function generate(
    target: ModelBackend,
    draft: ModelBackend | undefined,
    prompt: string | readonly number[],
    options: GenerationOptionsInput = {},
    resources: GenerationResources = {}
): Promise<GenerationResult> {
    const stream = streamGeneration(target, draft, prompt, options, resources);
    for (;;) {
        const next = await stream.next();
        if (next.done) return next.value;
    }
}
