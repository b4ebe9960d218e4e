import type {ModelBackend} from "../backend/ModelBackend.js";
import {sharedPrefixLength} from "../backend/sharedPrefixLength.js";
import {SeededChance} from "../random/SeededChance.js";
import {argmaxFastPathSequence} from "./argmaxFastPath.js";
import {ChainStep} from "./ChainStep.js";
import {deviceDrawSequence, draftReads} from "./deviceDrawPath.js";
import {DraftLengthController} from "./DraftLengthController.js";
import type {Drafter} from "./drafters/Drafter.js";
import type {TreeShape} from "./drafters/TreeDraftSession.js";
import type {GenerationChunk, GenerationResult} from "./GenerationOutput.js";
import {StepState} from "./StepState.js";
import type {StepOutcome, StepSetup, StepStrategy} from "./StepStrategy.js";
import {type FinishReason, StopDetector} from "./StopDetector.js";
import {TreeStep} from "./TreeStep.js";

export interface StepLoopSetup extends StepSetup {
    /** Absent: target-only (no drafter, or γ = 0), or token trees. */
    readonly drafter: Drafter | undefined;
    /** Token trees from this draft model (options.tree). */
    readonly tree: {readonly shape: TreeShape; readonly draft: ModelBackend} | undefined;
    /** The caller passed its own policy instance: the argmax fast path would bypass it, so it is off. */
    readonly policyGiven: boolean;
    /** `sequence` belongs to the caller (GenerationResources.sequence): reused from its tokens, not disposed of. */
    readonly sequenceLent: boolean;
    /** Streamed text holds a trailing space back: the detokenizer may still remove it (detokenizerCleansSpaces). */
    readonly holdSpaces: boolean;
}

/**
 * One generation between steps: the prompt still to decode (`promptPrefix`), the draft length, and
 * the strategy chosen once for the whole generation — a chain of drafts (ChainStep, target-only
 * decoding without a drafter) or token trees (TreeStep). Every step costs exactly one target call.
 */
export class StepLoop {
    private readonly state: StepState;
    /**
     * The prompt but its last token, while the first step (which decodes it) has not run; null after.
     * With firstTokenFromPrompt the first step decodes the whole prompt and takes the first token from
     * its last row, as llama-server does: no draft precedes the first token, and the drafter reads the
     * prompt after it. Otherwise begin() decodes this prefix before any step.
     */
    private promptPrefix: number[] | null;
    private readonly controller: DraftLengthController;
    private readonly strategy: StepStrategy;
    /** performance.now() when the previous step returned: the time until the next is the caller's (serve: streaming the chunk). */
    private previousStepEnd: number | undefined;

    public constructor(private readonly setup: StepLoopSetup) {
        const {options, target, promptTokens} = setup;
        this.promptPrefix = promptTokens.slice(0, -1);
        // A tree's depth is its draft length (trees keep a fixed shape, so maxGamma never applies to them).
        const gamma = setup.tree !== undefined ? setup.tree.shape.depth : this.speculative ? options.gamma : 0;
        this.controller = new DraftLengthController({
            mode: options.draftLength,
            gamma,
            maxGamma: this.speculative ? Math.max(gamma, options.maxGamma ?? 2 * options.gamma) : 0,
            minConfidence: options.minConfidence
        });
        const endTokens = new Set<number>(target.eosToken != null && !options.ignoreEos ? [target.eosToken] : []);
        const stopDetector = new StopDetector({
            endTokens,
            maxTokens: options.maxTokens,
            stop: options.stop,
            decode: (tokens) => target.detokenize(tokens),
            holdSpaces: setup.holdSpaces
        });
        this.state = new StepState(promptTokens, new SeededChance(options.seed), stopDetector, setup.telemetry);
        const reads = {policyGiven: setup.policyGiven, constrained: setup.constraint !== undefined};
        const fastPath =
            argmaxFastPathSequence(setup.sequence, options, reads) ??
            deviceDrawSequence(
                setup,
                {...reads, speculative: this.speculative, ...draftReads(setup.drafter, setup.tree !== undefined, options)},
                this.state.chance
            );
        this.strategy =
            setup.tree !== undefined
                ? new TreeStep(setup, this.state, this.controller, setup.tree, fastPath)
                : new ChainStep(setup, this.state, this.controller, setup.drafter, fastPath);
    }

    public get finishReason(): FinishReason | undefined {
        return this.state.finishReason;
    }

    /**
     * Reuses what a lent sequence holds of the prompt; then, without firstTokenFromPrompt, decodes the
     * prompt but its last token and starts the drafter.
     */
    public async begin(): Promise<void> {
        await this.reuseCachedPrompt();
        const prefix = this.promptPrefix;
        if (this.setup.options.firstTokenFromPrompt || prefix === null) return;
        this.promptPrefix = null;
        if (prefix.length > 0) await this.setup.sequence.evaluate(prefix, {positions: []});
        await this.strategy.start();
        this.setup.telemetry.time.prompt = performance.now() - this.setup.started;
    }

    /** One step; undefined when the context is full before it (finish reason "length"). */
    public async step(): Promise<GenerationChunk | undefined> {
        const {telemetry, target, sequence, options} = this.setup;
        const promptStep = this.promptPrefix !== null;
        if (!this.strategy.started && !promptStep) {
            // After a prompt step's first token went out: the drafter reads the prompt now.
            const drafterStart = performance.now();
            await this.strategy.start();
            telemetry.time.prompt += performance.now() - drafterStart;
        }
        const prefix = this.promptPrefix ?? [];
        const room = target.contextSize - sequence.tokens.length - prefix.length - 1;
        if (room < 0) {
            this.state.finishReason = "length";
            return undefined;
        }
        const stepStart = performance.now();
        const draftBefore = telemetry.time.draft;
        // A step emits up to its draft + 1 tokens: a draft longer than the tokens still wanted, less one, is wasted work.
        const wanted = promptStep
            ? 0
            : this.chooseLength(Math.min(room, options.maxTokens - this.state.stopDetector.emittedTokens.length - 1));
        this.promptPrefix = null;
        const outcome = await this.strategy.step({prefix, wanted, promptStep});
        if (!promptStep) this.observeStep(outcome, stepStart, draftBefore);
        this.previousStepEnd = performance.now();
        return outcome.chunk;
    }

    public result(): GenerationResult {
        const {telemetry, promptTokens, started} = this.setup;
        const stopDetector = this.state.stopDetector;
        telemetry.time.total = performance.now() - started;
        // What was emitted, not what verification produced past EOS, a stop string or max tokens.
        telemetry.emittedTokens = stopDetector.emittedTokens.length;
        this.strategy.finish(stopDetector.emittedTokens);
        return {
            text: stopDetector.text,
            tokens: [...stopDetector.emittedTokens],
            promptTokens: promptTokens.length,
            finishReason: this.state.finishReason ?? "length",
            telemetry
        };
    }

    /** Every part is disposed of, even when one before it throws; the first error is rethrown. */
    public async dispose(): Promise<void> {
        try {
            this.setup.adaptive?.dispose();
            if (!this.setup.sequenceLent) await this.setup.sequence.dispose();
        } finally {
            await this.strategy.dispose();
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
        const length = adaptive?.next(this.controller.next, limit, this.strategy.draftLag) ?? Math.min(this.controller.next, limit);
        if (this.speculative && limit > 0) {
            const choice = adaptive?.choice;
            this.setup.telemetry.draftLengths.record(length, choice?.skipped ?? false, choice?.probe ?? false);
        }
        return length;
    }

    /** Tells draftLength auto (or the shared load) what the step drafted, accepted and cost. */
    private observeStep(outcome: StepOutcome, stepStart: number, draftBefore: number): void {
        this.setup.adaptive?.observe({
            proposed: outcome.drafted,
            accepted: outcome.accepted,
            draftMilliseconds: this.setup.telemetry.time.draft - draftBefore,
            stepMilliseconds: performance.now() - stepStart,
            callerMilliseconds: this.previousStepEnd !== undefined ? stepStart - this.previousStepEnd : 0
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
}
