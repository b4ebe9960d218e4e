import type {ArgmaxCapableSequence} from "../backend/ModelBackend.js";
import {evaluateRows} from "../backend/evaluateRows.js";
import {timedEvaluation} from "../backend/timedEvaluation.js";
import {processLogits} from "../distributions/processLogits.js";
import {tokenLogprob} from "../distributions/tokenLogprobs.js";
import {createGreedyPolicy} from "../policies/greedyPolicy.js";
import type {VerificationPolicy, VerificationResult} from "../policies/VerificationPolicy.js";
import {verifiesDrawnDrafts} from "./deviceDrawPath.js";
import type {DraftLengthController} from "./DraftLengthController.js";
import type {GenerationChunk} from "./GenerationOutput.js";
import type {Drafter, DrafterSession, DraftProposal} from "./drafters/Drafter.js";
import {ModelDrafter} from "./drafters/ModelDrafter.js";
import {sharedPrefixLength} from "../backend/sharedPrefixLength.js";
import {StepConstraint, type TargetRows} from "./StepConstraint.js";
import type {StepState} from "./StepState.js";
import type {StepInput, StepOutcome, StepSetup, StepStrategy} from "./StepStrategy.js";

/**
 * Chain drafting: the drafter proposes up to γ tokens (a draft model: one evaluation each, keeping
 * its rows; n-gram and suffix lookup: no model call and no rows, verified as q = δ_x); the target
 * evaluates [pending token, drafts…] in one batch; the policy decides the accepted prefix and the
 * final token; the target rolls back the rejected suffix. Without a drafter, or on a step where it
 * finds nothing, the same step is target-only decoding (batch [pending]).
 */
export class ChainStep implements StepStrategy {
    private session: DrafterSession | undefined;
    /**
     * draftLength auto with a draft model: the session opens at the first step that drafts, reading
     * the history then (never, if no step drafts), so steps before it run exactly as target-only ones.
     */
    private readonly opensLate: boolean;
    private deferred = false;
    /** History tokens the drafter had read when it last proposed (or, before, that its lent sequence holds). */
    private draftedThrough = 0;
    /** The target sequence while steps read argmax ids instead of rows (argmaxFastPath), else absent. */
    private argmax: ArgmaxCapableSequence | undefined;
    private stepPolicy: VerificationPolicy;
    private readonly grammar: StepConstraint | undefined;

    public constructor(
        private readonly setup: StepSetup,
        private readonly state: StepState,
        private readonly controller: DraftLengthController,
        /** Absent: target-only decoding. */
        private readonly drafter: Drafter | undefined,
        /** The target sequence where the argmax fast path applies (argmaxFastPathSequence). */
        private readonly fastPath: ArgmaxCapableSequence | undefined
    ) {
        this.argmax = fastPath;
        this.stepPolicy = this.argmax !== undefined ? createGreedyPolicy() : setup.policy;
        this.opensLate = drafter instanceof ModelDrafter && setup.adaptive?.chooses === true;
        const {constraint, telemetry, options, target} = setup;
        this.grammar =
            constraint !== undefined
                ? new StepConstraint(constraint, telemetry, {
                      greedy: options.sampling.temperature === 0,
                      endToken: options.ignoreEos ? undefined : target.eosToken
                  })
                : undefined;
    }

    public get started(): boolean {
        return this.drafter === undefined || this.session !== undefined || this.deferred;
    }

    /** Tokens the drafter must read before its next draft: what the history gained since it last proposed. */
    public get draftLag(): number {
        return this.drafter === undefined ? 0 : Math.max(0, this.state.history.length - this.draftedThrough);
    }

    public async start(): Promise<void> {
        if (this.drafter === undefined) return;
        const {draftSequence, promptTokens} = this.setup;
        this.draftedThrough = draftSequence !== undefined ? sharedPrefixLength(draftSequence.tokens, promptTokens) : 0;
        if (this.opensLate) this.deferred = true;
        else await this.open(promptTokens);
    }

    /** Opens the drafter's session on `promptTokens` (all but the last in the target's cache). */
    private async open(promptTokens: readonly number[]): Promise<void> {
        const {target, options, telemetry, draftSequence} = this.setup;
        if (this.drafter === undefined) return;
        this.session = await this.drafter.start({
            target,
            promptTokens,
            options,
            chance: this.state.chance,
            telemetry,
            sequence: draftSequence,
            targetSequence: this.setup.sequence
        });
        // Argmax ids verify only drafts made without rows; drawn ids, drafts drawn on the device or without probabilities.
        const drawn = verifiesDrawnDrafts(this.fastPath);
        this.argmax = (drawn ? this.session.drawsOnDevice === true : this.session.supportsArgmax) ? this.fastPath : undefined;
        if (this.fastPath !== undefined && this.argmax === undefined && options.sampling.temperature > 0)
            telemetry.noteRowsCopied("verification at T > 0 with a draft model");
        this.stepPolicy = this.argmax !== undefined ? createGreedyPolicy() : this.setup.policy;
    }

    public async step({prefix, wanted, promptStep}: StepInput): Promise<StepOutcome> {
        const top = this.setup.options.logprobs;
        const proposal = await this.constrainDraft(await this.draft(wanted));
        const draftTokens = proposal?.tokens ?? [];
        if (verifiesDrawnDrafts(this.argmax)) {
            // Verified on the device as drawn (q at each token) or, without probabilities, as q = δ: never from rows.
            if (proposal?.probs !== undefined && proposal.drawn === undefined)
                throw new Error(`drafter ${proposal.source} returned rows where it was asked to draw on the device`);
            this.argmax.expectDraft(proposal?.drawn);
        }
        const evaluation = await this.evaluateTarget(prefix, draftTokens, promptStep);
        const rawLogits = top !== undefined ? evaluation.logits.map((row) => row.slice()) : undefined;
        const rows = this.grammar !== undefined ? await this.grammar.maskRows(evaluation, draftTokens) : evaluation;
        const verification = this.verify(proposal, draftTokens, rows);
        const chunk = await this.advance(proposal, draftTokens, verification);
        if (proposal !== undefined) this.draftedThrough = this.state.history.length;
        if (top !== undefined && rawLogits !== undefined)
            chunk.logprobs = chunk.tokens.map((token, index) => tokenLogprob(rawLogits[index], token, top));
        return {chunk, drafted: draftTokens.length, accepted: verification.acceptedCount};
    }

    public finish(emitted: readonly number[]): void {
        this.session?.finish(emitted);
    }

    public async dispose(): Promise<void> {
        await this.session?.dispose();
    }

    /** 1. Draft up to `wanted` tokens (none in the prompt step or without a drafter). */
    private async draft(wanted: number): Promise<DraftProposal | undefined> {
        const start = performance.now();
        // The history so far stands for the prompt: all but its pending token are in the target's cache.
        if (this.deferred && this.session === undefined && wanted > 0) await this.open([...this.state.history]);
        const drawn = verifiesDrawnDrafts(this.argmax);
        const random = this.state.chance.random;
        const proposal =
            this.session !== undefined && wanted > 0
                ? await this.session.propose({
                      history: this.state.history,
                      maxTokens: wanted,
                      argmaxOnly: this.argmax !== undefined && !drawn,
                      deviceDraws: drawn ? {uniform: () => random.nextDouble()} : undefined
                  })
                : undefined;
        this.setup.telemetry.time.draft += performance.now() - start;
        return proposal;
    }

    /** 1b. With a constraint, the draft is cut at its first forbidden token (StepConstraint.cutDraft). */
    private async constrainDraft(proposal: DraftProposal | undefined): Promise<DraftProposal | undefined> {
        if (this.grammar === undefined || proposal === undefined || proposal.tokens.length === 0) return proposal;
        return this.grammar.cutDraft(proposal, this.stepPolicy.lossless);
    }

    /**
     * 2. One batched target evaluation of the pending token and every draft token (in the prompt
     * step, of the whole prompt, reading its last row only).
     */
    private async evaluateTarget(prefix: readonly number[], draftTokens: readonly number[], promptStep: boolean): Promise<TargetRows> {
        const {sequence, telemetry, options, started, adaptive} = this.setup;
        const start = performance.now();
        const batch = [...prefix, this.state.pending, ...draftTokens];
        const positions = batch.map((_token, index) => index).slice(prefix.length);
        if (!promptStep) adaptive?.beforeTarget();
        const argmaxSequence = this.argmax;
        const evaluation = await timedEvaluation(sequence, async (): Promise<TargetRows> =>
            argmaxSequence !== undefined
                ? {argmax: await argmaxSequence.evaluateArgmax(batch, {positions}), logits: [], probabilities: undefined}
                : this.grammar !== undefined
                  ? // Sampler rows come from the masked logit rows (StepConstraint.maskRows), not from the backend.
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
            adaptive?.afterTarget(batch.length, evaluation.milliseconds, evaluation.native);
        }
        return evaluation.result;
    }

    /** 3. Sampler rows (unless the backend computed them), then the policy's decision. */
    private verify(proposal: DraftProposal | undefined, draftTokens: number[], evaluation: TargetRows): VerificationResult {
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
            this.state.chance
        );
        telemetry.time.policy += performance.now() - start;
        return verification;
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
            this.session?.observe({proposal, accepted, emitted: verification.emitted});
            telemetry.drafters.record(proposal.consulted, proposal.source, draftTokens.length, accepted);
        }
        await this.grammar?.advance(verification.emitted);
        this.controller.observe(draftTokens.length, accepted);
        return this.state.emit(verification, draftTokens.length, start);
    }
}
