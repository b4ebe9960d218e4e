import {withBos} from "../backend/addsBos.js";
import type {BackendSequence, ModelBackend} from "../backend/ModelBackend.js";
import {restrictSequence, restrictVocabulary} from "../backend/restrictVocabulary.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";
import {type TokenLogprob, tokenLogprob} from "../distributions/tokenLogprobs.js";
import {argmax} from "../distributions/argmax.js";
import {processLogits} from "../distributions/processLogits.js";
import {evaluateRows} from "../backend/evaluateRows.js";
import {timedEvaluation} from "../backend/timedEvaluation.js";
import {ConstraintViolationError, InvalidInputError, PromptExceedsContextError} from "../errors.js";
import type {CorrectionMemory} from "../policies/CorrectionMemory.js";
import {createPolicy} from "../policies/createPolicy.js";
import {createGreedyPolicy} from "../policies/greedyPolicy.js";
import type {VerificationPolicy, VerificationResult} from "../policies/VerificationPolicy.js";
import {SeededChance} from "../random/SeededChance.js";
import {AdaptiveDraftLength} from "./AdaptiveDraftLength.js";
import {DraftLengthController} from "./DraftLengthController.js";
import {createDrafter} from "./drafters/createDrafter.js";
import {ModelDrafter} from "./drafters/ModelDrafter.js";
import type {Drafter, DrafterSession, DraftProposal} from "./drafters/Drafter.js";
import {pairDraftModel} from "./drafters/pairDraftModel.js";
import {detokenizerCleansSpaces} from "./detokenizerCleansSpaces.js";
import {GenerationTelemetry} from "./GenerationTelemetry.js";
import {TreeDraftSession} from "./drafters/TreeDraftSession.js";
import {type DraftTree, verifyTreeGreedy, verifyTreeSampling} from "../policies/treeVerification.js";
import {type GenerationOptions, type GenerationOptionsInput, parseGenerationOptions} from "./GenerationOptions.js";
import {type FinishReason, StopDetector} from "./StopDetector.js";
import {sharedPrefixLength} from "../backend/sharedPrefixLength.js";
import {SpeculationLoad} from "./SpeculationLoad.js";

export interface GenerationChunk {
    /** Token ids emitted by this step (after stop handling). */
    tokens: number[];
    /** Text to append (held back while a UTF-8 character or a stop string is incomplete). */
    text: string;
    /** The policy's decision for this step (absent for the prompt). */
    verification?: VerificationResult;
    /** With options.logprobs: one entry per token of `tokens`, from the target's row at its position. */
    logprobs?: TokenLogprob[];
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
    /**
     * Output must satisfy it (a grammar): the target's rows are masked by it, drafts are checked
     * against clones of it, and it is advanced past every emitted token. The caller disposes of it.
     */
    constraint?: TokenConstraint;
    /**
     * A target sequence to run on instead of a fresh one (prompt caching): the tokens it holds that
     * begin the prompt are not decoded again, the rest is rolled back. It is not disposed of; at the
     * end it holds the prompt and the output (but the last token), ready to be lent again.
     */
    sequence?: BackendSequence;
    /** The same for the model drafter's draft sequence. */
    draftSequence?: BackendSequence;
    /**
     * What the generations on this target share for `draftLength: "auto"` (step costs, acceptance,
     * the batch's composition). Every generation given one reports its share and measurements to it,
     * whatever its draft length mode. Absent: an auto generation learns on its own.
     */
    speculationLoad?: SpeculationLoad;
    /**
     * On `speculationLoad`, whose acceptance history is this generation's prior for `draftLength:
     * "auto"` (serve: the tenant, whose prompts may draft better or worse than others'); absent: every
     * generation's on the load.
     */
    speculationPriorKey?: string;
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
    const drafter =
        resources.drafter ??
        (options.drafter != null
            ? createDrafter(options.drafter, draft, "drafter")
            : draft != null
              ? createDrafter("model", draft)
              : undefined);
    const sharedSize = draft != null ? pairDraftModel(fullTarget, draft, drafter) : fullTarget.vocabularySize;
    // Ids only one model of the pair has are masked: the target is seen through the shared ids
    // (restrictVocabulary), so it never emits a token the draft cannot read, and the model drafter
    // cuts a longer draft the same way, so it never proposes one the target lacks.
    const target = restrictVocabulary(fullTarget, Math.min(sharedSize, drafter?.vocabularySize ?? sharedSize));
    const started = performance.now();
    const telemetry = new GenerationTelemetry();
    const promptTokens = promptTokensOf(target, prompt, options);
    telemetry.promptTokens = promptTokens.length;
    const treeDraft = options.tree !== undefined ? treeDraftModel(options, draft, target, fullTarget, drafter, resources) : undefined;
    const speculates = drafter != null && (options.gamma > 0 || (options.draftLength === "auto" && (options.maxGamma ?? 0) > 0));

    const loop = new StepLoop({
        target,
        options,
        telemetry,
        promptTokens,
        started,
        drafter: speculates && options.tree === undefined ? drafter : undefined,
        tree: options.tree !== undefined && treeDraft !== undefined ? {shape: options.tree, draft: treeDraft} : undefined,
        policy:
            resources.policy ??
            createPolicy(options.policy, {vocabularySize: target.vocabularySize, correctionMemory: resources.correctionMemory}),
        policyGiven: resources.policy != null,
        sequence:
            resources.sequence !== undefined
                ? restrictSequence(fullTarget, resources.sequence, target.vocabularySize)
                : await target.createSequence(options.tree !== undefined ? {branches: options.tree.width} : undefined),
        sequenceLent: resources.sequence !== undefined,
        draftSequence: resources.draftSequence,
        constraint: resources.constraint,
        // Probed on the model itself: a restricted view of it is a new object per generation.
        holdSpaces: detokenizerCleansSpaces(fullTarget),
        adaptive: adaptiveDraftLength(options, speculates, fullTarget, resources.speculationLoad, resources.speculationPriorKey)
    });
    try {
        await loop.begin();
        let yieldedAt = performance.now();
        for (;;) {
            // Steps that decode inline resolve as microtasks, which starve the event loop: without a
            // turn of it now and then, timers, I/O and signal handlers (Ctrl-C) would wait for the end.
            if (performance.now() - yieldedAt > eventLoopTurnMilliseconds) {
                await new Promise((resolve) => setImmediate(resolve));
                yieldedAt = performance.now();
            }
            resources.signal?.throwIfAborted();
            const chunk = await loop.step();
            if (chunk === undefined) break;
            yield chunk;
            if (loop.finishReason !== undefined) break;
        }
        return loop.result();
    } finally {
        await loop.dispose();
    }
}

/** The draft length chooser of an auto generation, or the reporter of any generation given a shared load. */
function adaptiveDraftLength(
    options: GenerationOptions,
    speculates: boolean,
    target: ModelBackend,
    load: SpeculationLoad | undefined,
    priorKey: string | undefined
): AdaptiveDraftLength | undefined {
    const choose = speculates && options.draftLength === "auto";
    if (!choose && load === undefined) return undefined;
    const tree = options.tree;
    const maxGamma = options.maxGamma ?? 2 * options.gamma;
    return new AdaptiveDraftLength(load ?? new SpeculationLoad(), {
        choose,
        maxLength: tree !== undefined ? tree.depth : Math.max(options.gamma, maxGamma),
        initialLength: tree !== undefined ? tree.depth : options.gamma > 0 ? options.gamma : Math.min(4, maxGamma),
        tokensPerPosition: tree?.width ?? 1,
        batchStatistics: () => target.batchStatistics,
        priorKey
    });
}

/**
 * The draft model that drafts token trees (`draft`, or the model drafter's own), after checking what
 * trees need: a draft of the same vocabulary, a lossless policy, none of what reads chain rows, and
 * lent sequences (prompt caching) with enough branches.
 */
function treeDraftModel(
    options: GenerationOptions,
    draft: ModelBackend | undefined,
    target: ModelBackend,
    fullTarget: ModelBackend,
    drafter: Drafter | undefined,
    resources: GenerationResources
): ModelBackend {
    const refuse = (message: string, field: string): never => {
        throw new InvalidInputError(message, field);
    };
    const model = drafter instanceof ModelDrafter ? drafter.model : drafter === undefined ? draft : undefined;
    if (model === undefined) refuse("token trees are drafted by a draft model: give one, with the model drafter", "tree");
    if (target !== fullTarget || model!.vocabularySize !== target.vocabularySize)
        refuse("token trees need a draft and target with vocabularies of the same size", "tree");
    if (options.policy.kind !== "strict" && options.policy.kind !== "greedy")
        refuse(`token trees are verified losslessly: use the strict or greedy policy, not ${options.policy.kind}`, "policy");
    if (options.sampling.temperature > 0 && (options.policy.kind === "greedy" || options.draftSampling === "greedy"))
        refuse("at T > 0 a tree's children are drawn from the draft's rows: use policy strict and draftSampling sample", "tree");
    if (options.draftLength === "schedule" || options.minConfidence > 0)
        refuse("token trees have a fixed width: draftLength fixed or auto (which chooses the depth) and minConfidence 0", "tree");
    if (options.logprobs !== undefined) refuse("logprobs are not reported with token trees", "logprobs");
    if (resources.constraint !== undefined) refuse("constrained output (a grammar) is not drafted as token trees", "tree");
    if (resources.policy !== undefined) refuse("token trees are verified by their own rule, not a policy instance", "tree");
    const width = options.tree!.width;
    for (const [lent, field] of [
        [resources.sequence, "sequence"],
        [resources.draftSequence, "draftSequence"]
    ] as const)
        if (lent !== undefined && (lent.treeBranches ?? 1) < width)
            refuse(`the lent ${field} has ${lent.treeBranches ?? 1} branches, fewer than the tree's width ${width}`, "tree");
    return model!;
}

/** The prompt's token ids (tokenized, BOS prepended where the model adds it), checked against the vocabulary and context. */
function promptTokensOf(target: ModelBackend, prompt: string | readonly number[], options: GenerationOptions): number[] {
    const tokens = typeof prompt === "string" ? target.tokenize(prompt) : prompt;
    const promptTokens = options.addBos ? withBos(target, tokens) : [...tokens];
    if (promptTokens.length === 0) throw new InvalidInputError("is empty and the model has no BOS token to start from", "prompt");
    promptTokens.forEach((token, index) => {
        if (!Number.isInteger(token) || token < 0 || token >= target.vocabularySize)
            throw new InvalidInputError(`token ${token} is outside [0, ${target.vocabularySize})`, `prompt[${index}]`);
    });
    if (promptTokens.length + 1 > target.contextSize) throw new PromptExceedsContextError(promptTokens.length, target.contextSize);
    return promptTokens;
}

interface StepLoopSetup {
    readonly target: ModelBackend;
    readonly sequence: BackendSequence;
    readonly options: GenerationOptions;
    readonly telemetry: GenerationTelemetry;
    readonly promptTokens: readonly number[];
    readonly started: number;
    /** Absent: target-only (no drafter, or γ = 0), or token trees. */
    readonly drafter: Drafter | undefined;
    /** Token trees from this draft model (options.tree). */
    readonly tree: {readonly shape: {readonly width: number; readonly depth: number}; readonly draft: ModelBackend} | undefined;
    readonly policy: VerificationPolicy;
    /** The caller passed its own policy instance: the argmax fast path would bypass it, so it is off. */
    readonly policyGiven: boolean;
    /** `sequence` belongs to the caller (GenerationResources.sequence): reused from its tokens, not disposed of. */
    readonly sequenceLent: boolean;
    readonly draftSequence: BackendSequence | undefined;
    readonly constraint: TokenConstraint | undefined;
    /** Streamed text holds a trailing space back: the detokenizer may still remove it (detokenizerCleansSpaces). */
    readonly holdSpaces: boolean;
    /** draftLength "auto", or a shared load to report to (absent: neither). */
    readonly adaptive: AdaptiveDraftLength | undefined;
}

/** What one step's target evaluation gave: argmax ids (fast path) or raw rows and sampler rows. */
interface TargetEvaluation {
    readonly argmax: number[] | undefined;
    readonly logits: Float64Array[];
    readonly probabilities?: Float64Array[];
}

/**
 * The state of one generation between steps: the target sequence, the history (prompt and emitted
 * tokens; the last one is `pending`, not yet in the target's cache), the drafter session, and
 * whether the prompt is still to be decoded (`promptPrefix`). Each step is draft → evaluate the
 * target → verify → advance, so every step costs exactly one target call.
 */
class StepLoop {
    public finishReason: FinishReason | undefined;
    private readonly history: number[];
    private pending: number;
    /**
     * The prompt but its last token, while the first step (which decodes it) has not run; null after.
     * With firstTokenFromPrompt the first step decodes the whole prompt and takes the first token from
     * its last row, as llama-server does: no draft precedes the first token, and the drafter reads the
     * prompt after it. Otherwise begin() decodes this prefix before any step.
     */
    private promptPrefix: number[] | null;
    private session: DrafterSession | undefined;
    private treeSession: TreeDraftSession | undefined;
    private readonly controller: DraftLengthController;
    private readonly chance: SeededChance;
    private readonly stopDetector: StopDetector;
    /** At temperature 0 with a greedy-equivalent policy, steps may read argmax ids instead of rows (see argmaxFastPath). */
    private readonly argmaxPossible: boolean;
    private argmaxOnly: boolean;
    private stepPolicy: VerificationPolicy;

    public constructor(private readonly setup: StepLoopSetup) {
        const {options, target, promptTokens} = setup;
        this.history = [...promptTokens];
        this.pending = promptTokens[promptTokens.length - 1];
        this.promptPrefix = promptTokens.slice(0, -1);
        const speculative = setup.drafter !== undefined || setup.tree !== undefined;
        // A tree's depth is its draft length (trees keep a fixed shape, so maxGamma never applies to them).
        const gamma = setup.tree !== undefined ? setup.tree.shape.depth : speculative ? options.gamma : 0;
        this.controller = new DraftLengthController({
            mode: options.draftLength,
            gamma,
            maxGamma: speculative ? Math.max(gamma, options.maxGamma ?? 2 * options.gamma) : 0,
            minConfidence: options.minConfidence
        });
        this.chance = new SeededChance(options.seed);
        const endTokens = new Set<number>(target.eosToken != null && !options.ignoreEos ? [target.eosToken] : []);
        this.stopDetector = new StopDetector({
            endTokens,
            maxTokens: options.maxTokens,
            stop: options.stop,
            decode: (tokens) => target.detokenize(tokens),
            holdSpaces: setup.holdSpaces
        });
        this.argmaxPossible =
            options.argmaxFastPath &&
            options.sampling.temperature === 0 &&
            options.minConfidence === 0 &&
            !setup.policyGiven &&
            greedyEquivalentAtTemperatureZero.has(options.policy.kind) &&
            // Rows are needed to mask them (a constraint) and to report log-probabilities.
            setup.constraint === undefined &&
            options.logprobs === undefined &&
            setup.sequence.evaluateArgmax != null;
        this.argmaxOnly = this.argmaxPossible;
        this.stepPolicy = this.argmaxOnly ? createGreedyPolicy() : setup.policy;
    }

    /**
     * Reuses what a lent sequence holds of the prompt; then, without firstTokenFromPrompt, decodes the
     * prompt but its last token and starts the drafter.
     */
    public async begin(): Promise<void> {
        await this.reuseCachedPrompt();
        if (this.setup.options.firstTokenFromPrompt) return;
        const prefix = this.promptPrefix!;
        this.promptPrefix = null;
        if (prefix.length > 0) await this.setup.sequence.evaluate(prefix, {positions: []});
        await this.startDrafter();
        this.setup.telemetry.time.prompt = performance.now() - this.setup.started;
    }

    /** One step; undefined when the context is full before it (finish reason "length"). */
    public async step(): Promise<GenerationChunk | undefined> {
        if (this.session === undefined && this.treeSession === undefined && this.promptPrefix === null && this.speculative) {
            // After a prompt step's first token went out: the drafter reads the prompt now.
            const drafterStart = performance.now();
            await this.startDrafter();
            this.setup.telemetry.time.prompt += performance.now() - drafterStart;
        }
        const prefix = this.promptPrefix ?? [];
        const room = this.setup.target.contextSize - this.setup.sequence.tokens.length - prefix.length - 1;
        if (room < 0) {
            this.finishReason = "length";
            return undefined;
        }
        const stepStart = performance.now();
        const draftBefore = this.setup.telemetry.time.draft;
        // A step emits up to its draft + 1 tokens: a draft longer than the tokens still wanted, less one, is wasted work.
        const wanted =
            this.promptPrefix !== null
                ? 0
                : this.chooseLength(Math.min(room, this.setup.options.maxTokens - this.stopDetector.emittedTokens.length - 1));
        if (this.treeSession !== undefined && wanted > 0) {
            const chunk = await this.treeStep(wanted);
            this.observeStep(wanted, chunk.verification!.acceptedCount, stepStart, draftBefore);
            return chunk;
        }
        const promptStep = this.promptPrefix !== null;
        const proposal = await this.constrainDraft(await this.draft(wanted));
        const draftTokens = proposal?.tokens ?? [];
        const evaluation = await this.evaluateTarget(prefix, draftTokens);
        const rawLogits = this.setup.options.logprobs !== undefined ? evaluation.logits.map((row) => row.slice()) : undefined;
        const verification = this.verify(proposal, draftTokens, await this.maskRows(evaluation, draftTokens));
        const chunk = await this.advance(proposal, draftTokens, verification);
        if (rawLogits !== undefined)
            chunk.logprobs = chunk.tokens.map((token, index) => tokenLogprob(rawLogits[index], token, this.setup.options.logprobs!));
        if (!promptStep) this.observeStep(draftTokens.length, verification.acceptedCount, stepStart, draftBefore);
        return chunk;
    }

    public result(): GenerationResult {
        const {telemetry, promptTokens, started} = this.setup;
        telemetry.time.total = performance.now() - started;
        // What was emitted, not what verification produced past EOS, a stop string or max tokens.
        telemetry.emittedTokens = this.stopDetector.emittedTokens.length;
        this.session?.finish(this.stopDetector.emittedTokens);
        return {
            text: this.stopDetector.text,
            tokens: [...this.stopDetector.emittedTokens],
            promptTokens: promptTokens.length,
            finishReason: this.finishReason ?? "length",
            telemetry
        };
    }

    /** Every part is disposed of, even when one before it throws; the first error is rethrown. */
    public async dispose(): Promise<void> {
        try {
            this.setup.adaptive?.dispose();
            if (!this.setup.sequenceLent) await this.setup.sequence.dispose();
        } finally {
            try {
                await this.session?.dispose();
            } finally {
                await this.treeSession?.dispose();
            }
        }
    }

    private get speculative(): boolean {
        return this.setup.drafter !== undefined || this.setup.tree !== undefined;
    }

    /**
     * This step's draft length, at most `limit`: the controller's, or draftLength auto's choice;
     * counted for a speculative generation where a draft was possible.
     */
    private chooseLength(limit: number): number {
        const adaptive = this.setup.adaptive;
        const length = adaptive?.next(this.controller.next, limit) ?? Math.min(this.controller.next, limit);
        if (this.speculative && limit > 0) {
            const choice = adaptive?.choice;
            this.setup.telemetry.draftLengths.record(length, choice?.skipped ?? false, choice?.probe ?? false);
        }
        return length;
    }

    /** Tells draftLength auto (or the shared load) what the step drafted, accepted and cost. */
    private observeStep(proposed: number, accepted: number, stepStart: number, draftBefore: number): void {
        this.setup.adaptive?.observe({
            proposed,
            accepted,
            draftMilliseconds: this.setup.telemetry.time.draft - draftBefore,
            stepMilliseconds: performance.now() - stepStart
        });
    }

    /**
     * A lent sequence keeps the longest prefix it shares with the prompt, short of the prompt's last
     * token (whose row gives the first token), and drops the rest; only the remainder is decoded.
     */
    private async reuseCachedPrompt(): Promise<void> {
        const {sequence, promptTokens, telemetry} = this.setup;
        const held = sequence.tokens;
        if (held.length === 0) return;
        const common = sharedPrefixLength(held, promptTokens, promptTokens.length - 1);
        if (held.length > common) await sequence.rollback(held.length - common);
        this.promptPrefix = promptTokens.slice(common, -1);
        telemetry.cachedPromptTokens = common;
    }

    private async startDrafter(): Promise<void> {
        const {drafter, target, promptTokens, options, telemetry, tree} = this.setup;
        if (tree !== undefined) {
            this.treeSession = await TreeDraftSession.start(tree.draft, promptTokens, tree.shape, {
                options,
                chance: this.chance,
                telemetry,
                sequence: this.setup.draftSequence
            });
            return;
        }
        if (drafter === undefined) return;
        this.session = await drafter.start({
            target,
            promptTokens,
            options,
            chance: this.chance,
            telemetry,
            sequence: this.setup.draftSequence
        });
        this.argmaxOnly = this.argmaxPossible && this.session.supportsArgmax;
        this.stepPolicy = this.argmaxOnly ? createGreedyPolicy() : this.setup.policy;
    }

    /** 1. Draft up to `wanted` tokens (none in the prompt step or without a drafter). */
    private async draft(wanted: number): Promise<DraftProposal | undefined> {
        const start = performance.now();
        const proposal =
            this.session !== undefined && wanted > 0
                ? await this.session.propose({history: this.history, maxTokens: wanted, argmaxOnly: this.argmaxOnly})
                : undefined;
        this.setup.telemetry.time.draft += performance.now() - start;
        return proposal;
    }

    /**
     * 1b. With a constraint, a draft is cut at its first token the constraint forbids. A lossless
     * policy given the draft's rows keeps that token: the masked target row gives it probability 0,
     * so verification rejects it for certain and draws from the residual, which is speculative
     * sampling as proven (the draft length depends only on tokens already drafted). Otherwise the
     * token is dropped, so no policy can accept it.
     */
    private async constrainDraft(proposal: DraftProposal | undefined): Promise<DraftProposal | undefined> {
        const constraint = this.setup.constraint;
        if (constraint === undefined || proposal === undefined || proposal.tokens.length === 0) return proposal;
        const start = performance.now();
        try {
            // Checked off the event loop and undone: no copy of the grammar per step.
            const allowed = await constraint.acceptTokens(proposal.tokens, {restore: true});
            if (allowed === proposal.tokens.length) return proposal;
            const keep = allowed + (this.stepPolicy.lossless && proposal.probs !== undefined ? 1 : 0);
            return {
                ...proposal,
                tokens: proposal.tokens.slice(0, keep),
                probs: proposal.probs?.slice(0, keep),
                logits: proposal.logits?.slice(0, keep)
            };
        } finally {
            this.setup.telemetry.time.grammar += performance.now() - start;
        }
    }

    /**
     * 2b. With a constraint, each target row is masked by the constraint's state after the tokens
     * before it (emitted ones, then the draft's), and its sampler row recomputed from the masked row.
     * A row after a forbidden draft token (kept for a lossless policy, which rejects it for certain)
     * is left as it is: it is never reached. Masking a row costs one grammar check per vocabulary
     * entry (llama.cpp's), so at T = 0 a row whose argmax the grammar allows is left whole. The whole
     * step's grammar work is one call off the event loop (the constraint's worker), which leaves the
     * constraint's state as it was.
     */
    private async maskRows(evaluation: TargetEvaluation, draftTokens: readonly number[]): Promise<TargetEvaluation> {
        const constraint = this.setup.constraint;
        if (constraint === undefined) return evaluation;
        const start = performance.now();
        try {
            const greedy = this.setup.options.sampling.temperature === 0;
            this.setup.telemetry.grammarMasks += await constraint.maskRows(evaluation.logits, draftTokens, {greedy});
            return {argmax: undefined, logits: evaluation.logits, probabilities: undefined};
        } finally {
            this.setup.telemetry.time.grammar += performance.now() - start;
        }
    }

    /**
     * 2. One batched target evaluation of the pending token and every draft token (in the prompt
     * step, of the whole prompt, reading its last row only).
     */
    private async evaluateTarget(prefix: readonly number[], draftTokens: readonly number[]): Promise<TargetEvaluation> {
        const {sequence, telemetry, options, started, constraint} = this.setup;
        const promptStep = this.promptPrefix !== null;
        this.promptPrefix = null;
        const start = performance.now();
        const batch = [...prefix, this.pending, ...draftTokens];
        const positions = batch.map((_token, index) => index).slice(prefix.length);
        if (!promptStep) this.setup.adaptive?.beforeTarget();
        const evaluation = await timedEvaluation(sequence, async (): Promise<TargetEvaluation> =>
            this.argmaxOnly
                ? {argmax: await sequence.evaluateArgmax!(batch, {positions}), logits: [], probabilities: undefined}
                : constraint !== undefined
                  ? // Sampler rows come from the masked logit rows (maskRows), not from the backend.
                    {argmax: undefined, logits: await sequence.evaluate(batch, {positions}), probabilities: undefined}
                  : {
                        argmax: undefined,
                        ...(await evaluateRows(sequence, batch, options.sampling, {
                            positions,
                            // Logit rows are read for log-probabilities.
                            withoutLogits: this.stepPolicy.readsTargetLogits === false && options.logprobs === undefined,
                            // The rows go to the policy alone (verify below) and are dropped after it.
                            transientRows: this.stepPolicy.releasesRows === true
                        }))
                    }
        );
        if (promptStep) {
            // Prompt processing: its own time line, and no point of the verification cost curve.
            telemetry.time.prompt = performance.now() - started;
        } else {
            telemetry.time.verify += performance.now() - start;
            telemetry.recordTargetEvaluation(batch.length, evaluation.milliseconds, evaluation.native);
            this.setup.adaptive?.afterTarget(batch.length, evaluation.milliseconds, evaluation.native);
        }
        return evaluation.result;
    }

    /** 3. Sampler rows (unless the backend computed them), then the policy's decision. */
    private verify(proposal: DraftProposal | undefined, draftTokens: number[], evaluation: TargetEvaluation): VerificationResult {
        const {telemetry, options} = this.setup;
        let start = performance.now();
        const targetProbs = evaluation.probabilities ?? evaluation.logits.map((row) => processLogits(row, options.sampling));
        telemetry.time.sampling += performance.now() - start;
        start = performance.now();
        const verification = this.stepPolicy.verify(
            {
                draftTokens,
                targetProbs,
                // Absent for q-less proposals (n-gram, suffix, greedy model drafts): verified as q = δ_x.
                draftProbs: proposal?.probs,
                targetLogits: this.stepPolicy.readsTargetLogits === false ? undefined : evaluation.logits,
                draftLogits: proposal?.logits,
                targetArgmax: evaluation.argmax
            },
            this.chance
        );
        telemetry.time.policy += performance.now() - start;
        return verification;
    }

    /**
     * A token-tree step: the draft proposes a tree up to `depth` deep; the target decodes the pending
     * token and every node in one call (each node attending to its ancestors only); the tree is
     * verified (the longest argmax path at T = 0, recursive rejection sampling at T > 0); both
     * sequences keep the accepted path and drop the other branches' cells.
     */
    private async treeStep(depth: number): Promise<GenerationChunk> {
        const {sequence, telemetry, options} = this.setup;
        let start = performance.now();
        const tree = await this.treeSession!.propose(this.history, depth, this.argmaxOnly);
        telemetry.time.draft += performance.now() - start;
        start = performance.now();
        const greedy = tree.rows === undefined;
        this.setup.adaptive?.beforeTarget();
        const evaluation = await timedEvaluation(sequence, () =>
            sequence.evaluateTree!(
                [this.pending, ...tree.tokens],
                [-1, ...tree.parents.map((parent) => parent + 1)],
                this.argmaxOnly ? {kind: "argmax"} : greedy ? {kind: "logits"} : {kind: "distributions", sampling: options.sampling}
            )
        );
        telemetry.time.verify += performance.now() - start;
        telemetry.recordTargetEvaluation(tree.tokens.length + 1, evaluation.milliseconds, evaluation.native);
        this.setup.adaptive?.afterTarget(tree.tokens.length + 1, evaluation.milliseconds, evaluation.native);
        start = performance.now();
        const rows = evaluation.result;
        const verdict = greedy
            ? verifyTreeGreedy(tree, rows.argmax ?? rows.logits.map((row) => argmax(row)))
            : verifyTreeSampling(tree, rows.probabilities!, this.chance);
        telemetry.time.policy += performance.now() - start;
        start = performance.now();
        await sequence.keepTreePath!([0, ...verdict.path.map((node) => node + 1)]);
        await this.treeSession!.observe(verdict.path);
        return this.emitTreeStep(tree, depth, verdict.path.length, verdict.emitted, greedy, start);
    }

    private emitTreeStep(
        tree: DraftTree,
        depth: number,
        accepted: number,
        emitted: number[],
        greedy: boolean,
        start: number
    ): GenerationChunk {
        this.setup.telemetry.drafters.record(["model"], "model", tree.tokens.length, accepted, depth);
        const verification: VerificationResult = {
            acceptedCount: accepted,
            emitted,
            finalTokenSource: greedy ? "target-argmax" : "residual",
            positions: []
        };
        return this.emit(verification, tree.tokens.length, start);
    }

    /** The step's tokens join the history, the last one pending; telemetry; what the stop rules let out. */
    private emit(verification: VerificationResult, proposed: number, start: number): GenerationChunk {
        const {telemetry} = this.setup;
        this.history.push(...verification.emitted);
        this.pending = verification.emitted[verification.emitted.length - 1];
        telemetry.recordStep(proposed, verification.acceptedCount, verification.emitted.length);
        const emitted = this.stopDetector.accept(verification.emitted);
        this.finishReason = emitted.finished;
        telemetry.time.other += performance.now() - start;
        return {tokens: emitted.tokens, text: emitted.text, verification};
    }

    private async advanceConstraint(emitted: readonly number[]): Promise<void> {
        const start = performance.now();
        await advanceConstraintPast(this.setup.constraint, emitted, this.setup.options.ignoreEos ? undefined : this.setup.target.eosToken);
        this.setup.telemetry.time.grammar += performance.now() - start;
    }

    /** 4. Roll back rejected drafts; the final token becomes the next step's pending token; emit. */
    private async advance(
        proposal: DraftProposal | undefined,
        draftTokens: readonly number[],
        verification: VerificationResult
    ): Promise<GenerationChunk> {
        const {sequence, telemetry} = this.setup;
        const start = performance.now();
        const accepted = verification.acceptedCount;
        await sequence.rollback(draftTokens.length - accepted);
        if (proposal !== undefined) {
            this.session!.observe({proposal, accepted, emitted: verification.emitted});
            telemetry.drafters.record(proposal.consulted, proposal.source, draftTokens.length, accepted);
        }
        await this.advanceConstraint(verification.emitted);
        this.controller.observe(draftTokens.length, accepted);
        return this.emit(verification, draftTokens.length, start);
    }
}

/** The constraint, past the tokens a step emitted (an end-of-generation token ends the output instead), off the event loop. */
async function advanceConstraintPast(
    constraint: TokenConstraint | undefined,
    emitted: readonly number[],
    endToken: number | undefined
): Promise<void> {
    if (constraint === undefined) return;
    const end = endToken === undefined ? -1 : emitted.indexOf(endToken);
    const tokens = end < 0 ? emitted : emitted.slice(0, end);
    const accepted = await constraint.acceptTokens(tokens);
    if (accepted < tokens.length) throw new ConstraintViolationError(`token ${tokens[accepted]} is not allowed by the grammar here`);
}

/** Longest stretch of generation steps between two turns of the event loop. */
const eventLoopTurnMilliseconds = 50;

/** Policies that are exact match with the target argmax at temperature 0 (see argmaxFastPath). */
const greedyEquivalentAtTemperatureZero = new Set(["greedy", "strict", "block", "match", "typical"]);

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
