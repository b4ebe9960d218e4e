import type {BatchStatistics, EvaluationSplit} from "../backend/ModelBackend.js";
import {chooseDraftLength, type DraftLengthChoice} from "../speedup/chooseDraftLength.js";
import {expectedTokensPerStep} from "../speedup/speedupModel.js";
import {type LoadShare, type SharedDraftChoice, settledSamples, type SpeculationLoad} from "./SpeculationLoad.js";

export interface AdaptiveDraftLengthOptions {
    /** Choose the length (`draftLength: "auto"`); false: only report this generation's share and measurements to the load. */
    readonly choose: boolean;
    /** Longest draft: maxGamma for a chain, the depth for a token tree. */
    readonly maxLength: number;
    /** The length of the first steps, while the cost of a step is still unmeasured. */
    readonly initialLength: number;
    /** Target tokens per draft position: 1 for a chain, the width of a token tree. */
    readonly tokensPerPosition: number;
    /** The target's continuous-batching counters, where it batches (read to learn each step's total tokens). */
    readonly batchStatistics?: () => BatchStatistics | undefined;
    /** Whose acceptance history is this generation's prior, and which it adds to (SpeculationLoad.priorFor; serve: the tenant). */
    readonly priorKey?: string;
}

/** What one step did, for the estimates. */
export interface AdaptiveStepOutcome {
    /** Draft positions proposed (a tree's levels). */
    readonly proposed: number;
    /** Leading positions accepted. */
    readonly accepted: number;
    readonly draftMilliseconds: number;
    /** The whole step, drafting, the target call, verification and bookkeeping. */
    readonly stepMilliseconds: number;
    /**
     * The caller's time between the previous step and this one (serve: sending the previous chunk, while
     * the other generations do their steps' work); undefined before the first step, which has no cycle.
     */
    readonly callerMilliseconds?: number;
}

/**
 * `draftLength: "auto"` for one generation: before each step, the draft length in 0..maxLength that
 * maximises predicted tokens per second of the step (chooseDraftLength) from
 *  - each auto generation's acceptance α: the geometric model's estimate (accepted positions over
 *    accepted positions plus steps that ended at a rejection, recent steps weighted more) with the
 *    load's (or the tenant's) running estimate as a prior, worth as many observations as the spread of
 *    acceptance between finished generations warrants (AcceptanceSpread);
 *  - the measured cost of a target step by its total tokens and of drafting one position, shared by
 *    every generation on the load, and what a step of each length costs each live generation besides
 *    (HostStepCost: the whole cycle from one step to the next as measured, less those two);
 *  - what resuming costs after steps without a draft: the drafters read what those steps emitted
 *    (measured per token on the load), charged once, spread over the tokens still to come;
 *  - the other live generations in the same step (continuous batching): the tokens and expected
 *    yield of those of fixed length, and the auto ones, which draft the same length (their drafts
 *    share the batched draft calls, so drafting costs the batch once, and the step keeps one shape).
 * The first auto generation to choose for a shared target step chooses for all of them
 * (SpeculationLoad.sharedChoice). Where no draft pays at the estimates, the length that pays at
 * their upper confidence bounds (estimate plus one standard error) is drafted, so acceptance that
 * is still uncertain is tried before drafting stops. Where none pays there either, but one would at
 * perfect acceptance, one skipped step in every few on the load drafts a single token instead
 * (SpeculationLoad.skipOrProbe), so α never freezes and speculation resumes when acceptance or load
 * changes; where not even perfect acceptance would pay, no probe is spent. The choice depends on
 * past steps only, so any lossless policy stays lossless. Until two step sizes have been measured it
 * alternates the initial length with none. While drafting pays, a few steps without a draft now and
 * then (SpeculationLoad.reprobe) measure again what such steps cost, once that cost is stale.
 */
export class AdaptiveDraftLength {
    private accepted = 0;
    private rejected = 0;
    /** This generation's counts without decay, for the load's estimate of how generations differ. */
    private readonly totals = {accepted: 0, rejected: 0};
    private readonly priorWeight: number;
    private readonly share: LoadShare;
    private readonly prior: number;
    private statisticsBefore: {steps: number; tokens: number} | undefined;
    /** The model's own time of this generation's last target call (the whole shared step's, when batched). */
    private targetCost = 0;
    /** This generation reported the last shared target step first, so records the step's costs (afterTarget). */
    private reportsStep = true;
    /** The previous step drafted: a draft model's cache was current, so this step's draft time is the steady cost. */
    private drafting = false;
    /** Total tokens of the previous step's target call. */
    private previousStepTokens = 0;
    private lastChoice = {length: 0, skipped: false, probe: false};
    /** Whether the last step's length was chosen (some token was left to draft for), and whether the step before it drafted. */
    private lengthChosen = false;
    private previousDrafted = false;
    /** Tokens the drafter had to read before drafting, at the last choice (StepStrategy.draftLag). */
    private lag = 0;
    /** Tokens every auto generation of the last chosen step had to catch up on: their catch-ups share the draft model's batched calls. */
    private resumeTokens = 0;

    public constructor(
        private readonly load: SpeculationLoad,
        private readonly options: AdaptiveDraftLengthOptions
    ) {
        this.share = load.join(options.choose);
        this.prior = load.priorFor(options.priorKey);
        this.priorWeight = load.priorWeight;
        this.shareAcceptance();
    }

    /** The estimated acceptance per draft position. */
    public get alpha(): number {
        return (this.accepted + this.priorWeight * this.prior) / (this.accepted + this.rejected + this.priorWeight);
    }

    /**
     * The acceptance the choice assumes: the estimate plus one standard error of it (an upper
     * confidence bound), so a generation drafts while its acceptance is still uncertain and stops
     * only once it is known to be too low to pay.
     */
    public get optimisticAlpha(): number {
        const alpha = this.alpha;
        return Math.min(1, alpha + Math.sqrt((alpha * (1 - alpha)) / (this.accepted + this.rejected + this.priorWeight)));
    }

    /** Whether this generation's lengths are chosen here (draftLength auto), not only reported. */
    public get chooses(): boolean {
        return this.options.choose;
    }

    /** The last choice: its length, whether it skipped speculation, whether it was a probe. */
    public get choice(): {readonly length: number; readonly skipped: boolean; readonly probe: boolean} {
        return this.lastChoice;
    }

    /**
     * The next step's draft length, at most `limit` (the tokens still wanted, less one); `fixedLength`
     * is what a fixed or scheduled length would draft (used when not choosing); `lag`, the tokens the
     * drafter must read before it can draft (after steps without a draft, what they emitted).
     */
    public next(fixedLength: number, limit = Infinity, lag = 0): number {
        const choose = this.options.choose && limit > 0;
        this.lengthChosen = limit > 0;
        this.lag = lag;
        // Drafting on, its catch-up is part of each draft's measured cost; off, resuming costs it once.
        this.share.lag = this.drafting ? 0 : lag;
        const length = choose ? this.decide(limit) : Math.min(fixedLength, limit);
        if (!choose) this.lastChoice = {length, skipped: false, probe: false};
        this.share.tokens = 1 + this.options.tokensPerPosition * length;
        this.share.expectedYield = expectedTokensPerStep(this.alpha, length);
        return length;
    }

    /** Call right before the target call, then afterTarget with what it measured. */
    public beforeTarget(): void {
        const statistics = this.options.batchStatistics?.();
        this.statisticsBefore = statistics === undefined ? undefined : {steps: statistics.steps, tokens: statistics.tokens};
    }

    /** The target call of `tokens` tokens took `milliseconds` of wall time (`native`: the backend's split). */
    public afterTarget(tokens: number, milliseconds: number, native: EvaluationSplit | undefined): void {
        // The model's own time where measured: the wall time of a batched call includes waiting for the others.
        const cost =
            native !== undefined ? native.decodeMilliseconds + native.transferMilliseconds + native.samplingMilliseconds : milliseconds;
        this.targetCost = cost;
        const stepTokens = this.stepTokens(tokens);
        const previousStepTokens = this.previousStepTokens;
        this.previousStepTokens = stepTokens;
        // A step shared by several generations is one sample of its costs, however many report it: else
        // each step would fill as many of a cost's recent samples as it had sequences, and the median
        // would follow its last few steps, a short bout of dear ones included.
        const step = this.sharedStep();
        this.reportsStep = step === undefined || this.load.firstReport(step);
        if (!this.reportsStep) return;
        // llama.cpp rebuilds its compute graph when a batch's size changes, a cost of the change and
        // not of the size: a size is measured on a step like the one before it (provisionally otherwise).
        if (stepTokens === previousStepTokens) this.load.stepCost.record(stepTokens, cost);
        else this.load.stepCost.recordAfterChange(stepTokens, cost);
    }

    public observe(outcome: AdaptiveStepOutcome): void {
        const {proposed, accepted} = outcome;
        if (proposed > 0) {
            const rejected = accepted < proposed ? 1 : 0;
            this.accepted = this.accepted * memoryDecay + accepted;
            this.rejected = this.rejected * memoryDecay + rejected;
            this.totals.accepted += accepted;
            this.totals.rejected += rejected;
            this.load.recordAcceptance(accepted, rejected, this.options.priorKey);
            this.shareAcceptance();
            // After steps without a draft a draft model first decodes what they emitted (and its first
            // call warms it up): a one-off, the cost of resuming, not of drafting each position.
            if (this.drafting) {
                if (this.reportsStep) this.load.recordDraft(outcome.draftMilliseconds, proposed);
            } else if (this.lag > 0 && this.load.draftTime > 0)
                this.load.recordCatchUp(outcome.draftMilliseconds - proposed * this.load.draftTime, Math.max(this.lag, this.resumeTokens));
        }
        this.drafting = proposed > 0;
        // Until this generation chooses again, the others see its lag after this step (a step without a draft emits one token).
        this.share.lag = this.drafting ? 0 : this.lag + 1;
        // The cycle from the previous step's end to this one's holds everything the batch did for one
        // step of each live generation: the caller's work with the last output, every generation's
        // bookkeeping on the event loop, waiting for the slowest, and the steps of those that missed
        // the shared one. Beyond the target's compute and the drafting, it is charged per generation.
        // A cycle holds the previous step's verification and streaming too (the others' included): one
        // without a draft right after a drafted step is no sample of either kind (it would make steps
        // without a draft look dearer while drafting runs), nor is a generation's last step, whose
        // length was not chosen (no token was left to draft for). A drafted step right after one
        // without a draft is kept: probes are such steps, and they alone measure drafting while it is off.
        const caller = outcome.callerMilliseconds;
        const drafted = this.lastChoice.length > 0;
        const afterDraft = !drafted && this.previousDrafted;
        this.previousDrafted = drafted;
        if (this.reportsStep && caller !== undefined && !afterDraft && this.lengthChosen) {
            const cycle = caller + outcome.stepMilliseconds;
            const host = (cycle - outcome.draftMilliseconds - this.targetCost) / Math.max(1, this.load.liveGenerations);
            this.load.recordHost(this.lastChoice.length, host);
        }
    }

    /** Tells the other generations on the load this one's acceptance (their batch-wide choice weighs it). */
    private shareAcceptance(): void {
        this.share.alpha = this.alpha;
        this.share.optimisticAlpha = this.optimisticAlpha;
    }

    public dispose(): void {
        this.load.leave(this.share);
        if (this.options.choose) this.load.recordGeneration(this.totals.accepted, this.totals.rejected);
    }

    /** The shared target's step count after the target call, when exactly that one step ran for it; else undefined. */
    private sharedStep(): number | undefined {
        const before = this.statisticsBefore;
        const after = this.options.batchStatistics?.();
        return before !== undefined && after !== undefined && after.steps - before.steps === 1 ? after.steps : undefined;
    }

    /** The step's total tokens: from the scheduler's counters when exactly one shared step ran, else this share plus the others'. */
    private stepTokens(ownTokens: number): number {
        const before = this.statisticsBefore;
        const after = this.options.batchStatistics?.();
        if (before !== undefined && after !== undefined && after.steps - before.steps === 1) return after.tokens - before.tokens;
        const others = this.load.others(this.share);
        return ownTokens + others.tokens + others.adaptiveTokens;
    }

    private decide(limit: number): number {
        const {initialLength, maxLength} = this.options;
        if (this.load.bootstrapping()) {
            const others = this.load.others(this.share);
            this.resumeTokens = this.share.lag + others.adaptiveLag;
            // Bootstrap: measure steps without a draft, then steps of the initial length, each size on
            // steps like the one before it (the first after a change of shape pays a graph rebuild).
            const longest = Math.min(maxLength, limit);
            const length =
                this.load.stepCost.settled(others.tokens + others.adaptive + 1, settledSamples) || longest === 0
                    ? Math.min(initialLength, longest)
                    : 0;
            this.lastChoice = {length, skipped: false, probe: false};
            return length;
        }
        const shared = this.load.sharedChoice(this.stepKey(), () => this.chooseForStep(limit));
        const length = Math.min(shared.length, maxLength, limit);
        this.lastChoice = {length, skipped: shared.skipped, probe: shared.probe && length > 0};
        this.resumeTokens = shared.resumeTokens ?? this.share.lag;
        return length;
    }

    /** The shared target's step this choice is for (with the tokens per position, which the choice depends on); undefined without one. */
    private stepKey(): string | undefined {
        const statistics = this.options.batchStatistics?.();
        return statistics === undefined ? undefined : `${statistics.steps}/${this.options.tokensPerPosition}`;
    }

    /**
     * The length for every auto generation of the next step (SpeculationLoad.sharedChoice): the one
     * that maximises the batch's predicted rate at each generation's acceptance estimate. Where no
     * draft pays at the estimates, the one that pays at their upper confidence bounds (a generation
     * whose acceptance is still uncertain tries drafts before giving them up); where none pays there
     * either, no draft, or a one-token probe now and then if a draft would pay at perfect acceptance
     * (otherwise acceptance cannot change the choice, and a probe would only cost).
     */
    private chooseForStep(limit: number): SharedDraftChoice {
        const {maxLength, tokensPerPosition} = this.options;
        const others = this.load.others(this.share);
        // Resuming costs the drafters' catch-up once, spread over the tokens the auto generations still
        // have to come (this one's, at most resumeHorizon, for each of them).
        const resumeTokens = this.share.lag + others.adaptiveLag;
        const tokensToCome = (1 + others.adaptive) * Math.max(1, Math.min(limit, resumeHorizon));
        const resumeTimePerToken = resumeTokens > 0 ? (this.load.catchUpTime * resumeTokens) / tokensToCome : 0;
        const cost = this.load.stepCost;
        // The choices below ask for the same few sizes: each is predicted once.
        const predicted = new Map<number, number>();
        const stepTime = (tokens: number): number => {
            let time = predicted.get(tokens);
            if (time === undefined) predicted.set(tokens, (time = cost.predict(tokens)));
            return time;
        };
        const generations = 1 + others.adaptive + others.fixed;
        const shape = this.load.previousChoice?.length ?? 0;
        const host = this.load.hostCost;
        const input = {
            maxLength,
            tokensPerPosition,
            draftTime: this.load.draftTime,
            stepTime,
            // A length other than the last step's changes the step's shape: llama.cpp rebuilds its
            // compute graph, a cost of the change, charged as spread over the steps a choice holds.
            lengthOverhead: (length: number) =>
                generations * host.predict(length) + (length !== shape ? cost.rebuildMilliseconds / switchHorizon : 0),
            otherTokens: others.tokens,
            otherYield: others.expectedYield,
            resumeTimePerToken
        };
        const best = chooseDraftLength({...input, alpha: this.alpha, mirrorAlphas: others.adaptiveAlphas});
        // Hysteresis: a length stays unless another is predicted clearly faster, since every change of
        // the step's shape costs a rebuild of the target's compute graph that t(n) leaves out.
        const previous = this.load.previousChoice;
        const previousLength = previous === undefined || previous.probe ? 0 : previous.length;
        // The margin is a share of the auto generations' part of the batch's rate (the others' lengths are fixed).
        const autoYield = [this.alpha, ...others.adaptiveAlphas].reduce(
            (sum, alpha) => sum + expectedTokensPerStep(alpha, previousLength),
            0
        );
        const margin = (switchMargin * autoYield) / (autoYield + others.expectedYield);
        // Turning speculation on or off costs more than a change of length (drafters catch up or fall
        // behind, sequences fall out of lockstep), and where both are predicted alike, noisy costs would
        // flip between them step by step: either way needs a clear predicted gain.
        const autoSequences = 1 + others.adaptive;
        const onOff = (onOffMargin * autoSequences) / (autoSequences + others.expectedYield);
        const clearly = (choice: DraftLengthChoice, from: number): boolean =>
            choice.rate > choice.rates[from]! * (1 + (choice.length === 0 || from === 0 ? onOff : margin));
        const keep = previousLength <= maxLength && !clearly(best, previousLength);
        let length = keep ? previousLength : best.length;
        if (length === 0) {
            const optimistic = chooseDraftLength({...input, alpha: this.optimisticAlpha, mirrorAlphas: others.adaptiveOptimisticAlphas});
            if (clearly(optimistic, 0)) length = optimistic.length;
        }
        if (length > 0) {
            this.load.speculated();
            // What steps without a draft cost is measured only on such steps: re-measured now and then.
            const withoutDraft = others.tokens + 1 + others.adaptive;
            const stale = !cost.fresh(withoutDraft) || !host.fresh(0);
            if (!this.load.reprobe(stale)) return {length, skipped: false, probe: false, resumeTokens};
            return {length: 0, skipped: true, probe: false, resumeTokens};
        }
        this.load.skipped();
        // A probe is judged without the catch-up, which it measures again (a dear sample of it cannot
        // keep speculation off for good); the catch-up only spaces the probes out (skipOrProbe).
        const perfect = chooseDraftLength({
            ...input,
            resumeTimePerToken: 0,
            alpha: 1,
            mirrorAlphas: others.adaptiveAlphas.map(() => 1)
        });
        const sequences = 1 + others.adaptive;
        const size = (length: number): number => others.tokens + sequences * (1 + tokensPerPosition * length);
        // A drafted size not measured lately is predicted from others (sizes of other batches, where a
        // sequence's own cost may pass for a token's): a probe measures it, whatever the prediction.
        if (perfect.length === 0 && cost.fresh(size(1))) return {length: 0, skipped: true, probe: false, resumeTokens};
        const time = (length: number): number => length * input.draftTime + stepTime(size(length)) + input.lengthOverhead(length);
        const probeCost = Math.max(0, time(1) - time(0)) + this.load.catchUpTime * resumeTokens;
        if (this.load.skipOrProbe(time(0), probeCost)) return {length: 1, skipped: false, probe: true, resumeTokens};
        return {length: 0, skipped: true, probe: false, resumeTokens};
    }
}

/** Each drafted step weighs earlier observations by this, so the estimate follows a change of content (memory ≈ 32 steps). */
const memoryDecay = 1 - 1 / 32;
/**
 * Tokens still to come over which resuming drafting is charged at most: a generation may stop (EOS, a
 * stop string) long before its max_tokens.
 */
const resumeHorizon = 256;
/** Steps a chosen length is taken to hold, over which the graph rebuild of changing to it is spread. */
const switchHorizon = 8;
/** How much faster (predicted, as a share of the auto generations' part of the batch's rate) another length must be to replace the previous one. */
const switchMargin = 0.01;
/** The same, between speculation off (length 0) and on. */
const onOffMargin = 0.05;
