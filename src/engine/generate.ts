import {withBos} from "../backend/addsBos.js";
import {Eagle3HeadBackend} from "../backend/Eagle3HeadBackend.js";
import type {BackendSequence, ModelBackend} from "../backend/ModelBackend.js";
import {restrictSequence, restrictVocabulary} from "../backend/restrictVocabulary.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";
import {InvalidInputError, PromptExceedsContextError} from "../errors.js";
import type {CorrectionMemory} from "../policies/CorrectionMemory.js";
import {createPolicy} from "../policies/createPolicy.js";
import type {VerificationPolicy} from "../policies/VerificationPolicy.js";
import {AdaptiveDraftLength} from "./AdaptiveDraftLength.js";
import {createDrafter} from "./drafters/createDrafter.js";
import {ModelDrafter} from "./drafters/ModelDrafter.js";
import type {Drafter} from "./drafters/Drafter.js";
import {pairDraftModel} from "./drafters/pairDraftModel.js";
import {Eagle3Drafter} from "./drafters/Eagle3Drafter.js";
import {eagle3TreeBranches, maxEagle3TreeBranches} from "./drafters/Eagle3TreeSession.js";
import {type TreeShape, treeShapeLabel} from "./drafters/TreeDraftSession.js";
import {detokenizerCleansSpaces} from "./detokenizerCleansSpaces.js";
import type {GenerationChunk, GenerationResult} from "./GenerationOutput.js";
import {GenerationTelemetry} from "./GenerationTelemetry.js";
import {type GenerationOptions, type GenerationOptionsInput, parseGenerationOptions} from "./GenerationOptions.js";
import {SpeculationLoad} from "./SpeculationLoad.js";
import {StepLoop} from "./StepLoop.js";

export type {GenerationChunk, GenerationResult} from "./GenerationOutput.js";

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
 * exactly the same code and backend. With `options.tree` the draft model proposes token trees
 * instead (TreeStep); the strategy is chosen once, before the first step.
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
    const tree = treeDrafting(options, draft, target, fullTarget, drafter, resources);
    const speculates = drafter != null && (options.gamma > 0 || (options.draftLength === "auto" && (options.maxGamma ?? 0) > 0));

    const sequence =
        resources.sequence !== undefined
            ? restrictSequence(fullTarget, resources.sequence, target.vocabularySize)
            : await target.createSequence(tree !== undefined ? {branches: tree.branches} : undefined);
    const adaptive = adaptiveDraftLength(options, speculates, fullTarget, resources.speculationLoad, resources.speculationPriorKey);
    const loop = await startedOrDisposed(
        {sequence, lent: resources.sequence !== undefined, adaptive},
        () =>
            new StepLoop({
                target,
                options,
                telemetry,
                promptTokens,
                started,
                drafter: speculates && tree === undefined ? drafter : undefined,
                tree,
                policy:
                    resources.policy ??
                    createPolicy(options.policy, {vocabularySize: target.vocabularySize, correctionMemory: resources.correctionMemory}),
                policyGiven: resources.policy != null,
                sequence,
                sequenceLent: resources.sequence !== undefined,
                draftSequence: resources.draftSequence,
                constraint: resources.constraint,
                // Probed on the model itself: a restricted view of it is a new object per generation.
                holdSpaces: detokenizerCleansSpaces(fullTarget),
                adaptive
            })
    );
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

/**
 * `create()`, or, when it throws, what was made for the loop disposed of (the target sequence
 * unless lent, the draft length chooser) and the error rethrown.
 */
async function startedOrDisposed(
    made: {sequence: BackendSequence; lent: boolean; adaptive: AdaptiveDraftLength | undefined},
    create: () => StepLoop
): Promise<StepLoop> {
    try {
        return create();
    } catch (error) {
        made.adaptive?.dispose();
        if (!made.lent) await made.sequence.dispose();
        throw error;
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
 * With options.tree, its shape and the draft model that drafts it (`draft`, or the model drafter's
 * own), after checking what trees need: a draft of the same vocabulary, a lossless policy, none of
 * what reads chain rows, and lent sequences (prompt caching) with enough branches.
 */
function treeDrafting(
    options: GenerationOptions,
    draft: ModelBackend | undefined,
    target: ModelBackend,
    fullTarget: ModelBackend,
    drafter: Drafter | undefined,
    resources: GenerationResources
): {shape: TreeShape; draft: ModelBackend; branches: number} | undefined {
    const shape = options.tree;
    if (shape === undefined) return undefined;
    const refuse = (message: string, field: string): never => {
        throw new InvalidInputError(message, field);
    };
    const model =
        drafter instanceof ModelDrafter
            ? drafter.model
            : drafter instanceof Eagle3Drafter
              ? drafter.head
              : drafter === undefined
                ? draft
                : undefined;
    if (model === undefined)
        return refuse("token trees are drafted by a draft model or an EAGLE-3 head: give one, with the model or eagle3 drafter", "tree");
    // A head's tree is a spine with leaf siblings: each sibling is a branch of the target's sequence.
    const branches = model instanceof Eagle3HeadBackend ? eagle3TreeBranches(shape) : shape.width;
    if (branches > maxEagle3TreeBranches)
        refuse(
            `an EAGLE-3 head's ${treeShapeLabel(shape)} tree needs 1 + (width − 1) × depth = ${branches} branches, more than ${maxEagle3TreeBranches}`,
            "tree"
        );
    if (target !== fullTarget || model.vocabularySize !== target.vocabularySize)
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
    for (const [lent, field, needed] of [
        [resources.sequence, "sequence", branches],
        [resources.draftSequence, "draftSequence", shape.width]
    ] as const)
        if (lent !== undefined && (lent.treeBranches ?? 1) < needed)
            refuse(
                `the lent ${field} has ${lent.treeBranches ?? 1} branches (a server's: those of its --tree), fewer than the ${needed} this tree needs`,
                "tree"
            );
    return {shape, draft: model, branches};
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

/** Longest stretch of generation steps between two turns of the event loop. */
const eventLoopTurnMilliseconds = 50;

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
