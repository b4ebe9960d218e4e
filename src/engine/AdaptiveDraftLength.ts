import type {BatchStatistics, EvaluationSplit} from "../backend/ModelBackend.js";
import {chooseDraftLength} from "../speedup/chooseDraftLength.js";
import {expectedTokensPerStep} from "../speedup/speedupModel.js";
import {MeasuredStepTimes} from "./MeasuredStepTimes.js";
import {type LoadShare, type SettledRegime, type SharedDraftChoice, settledSamples, type SpeculationLoad} from "./SpeculationLoad.js";

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
    /** The caller's time between the previous step and this one (serve: sending the previous chunk); default 0. */
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
 *    every generation on the load;
 *  - what resuming costs after steps without a draft: the drafters read what those steps emitted
 *    (measured per token on the load), charged once, spread over the tokens still to come;
 *  - the other live generations in the same step (continuous batching): the tokens and expected
 *    yield of those of fixed length, and the auto ones, which draft the same length (their drafts
 *    share the batched draft calls, so drafting costs the batch once, and the step keeps one shape);
 *  - what a step of each length was measured to take at the current load, against one without a
 *    draft (MeasuredStepTimes): the wall time between shared steps holds every cost the model leaves
 *    out (the server's own work per stream, a draft holding a batched step back), so it lowers the
 *    predicted rate of a length measured dearer than predicted (never raises it).
 * The first auto generation to choose for a shared target step chooses for all of them
 * (SpeculationLoad.sharedChoice). At each load (live generations in powers of two) the length last
 * settled there stays unless another is rated 1% faster; speculation is turned on only for a draft
 * rated 5% faster than none (10% while only the model, no measured step, says so), and once turned on
 * or off it is not turned back for minDwell steps at that load. Now and then a few steps try another
 * length (MeasuredStepTimes.explore): no draft while drafting, which times drafting against it; a
 * draft while not, which also keeps α measured, so speculation resumes when acceptance or load
 * changes — but only where some draft would pay at perfect acceptance, and at the longest interval
 * where drafting is measured clearly slower. The choice depends on past steps only, so any lossless
 * policy stays lossless. Until two step sizes have been measured it alternates the initial length
 * with none.
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
    private targetMilliseconds = 0;
    /** This generation reported the last shared target step first, so records the step's costs (afterTarget). */
    private reportsStep = true;
    /** The previous step drafted: a draft model's cache was current, so this step's draft time is the steady cost. */
    private drafting = false;
    /** Total tokens of the previous step's target call. */
    private previousStepTokens = 0;
    private lastChoice = {length: 0, skipped: false, probe: false};
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
        this.lag = lag;
        // Drafting on, its catch-up is part of each draft's measured cost; off, resuming costs it once.
        this.share.lag = this.drafting ? 0 : lag;
        const length = choose ? this.decide(limit) : Math.min(fixedLength, limit);
        if (!choose) this.lastChoice = {length, skipped: false, probe: false};
        // Its drafter first reads what it has not seen (a prompt, or what steps without a draft
        // emitted): work of this generation alone, which would make the step look dearer at its length.
        if (length > 0 && !this.drafting && lag > 0) this.load.stepTimes.disturb();
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
        this.targetMilliseconds = milliseconds;
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
        this.load.stepTimes.stepped(expectedTokensPerStep(this.alpha, proposed));
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
        // What the caller does with each step's output is a cost per step as well; with other
        // generations running, that time also holds their steps, so it is counted only when alone.
        const caller = this.load.liveGenerations === 1 ? (outcome.callerMilliseconds ?? 0) : 0;
        if (this.reportsStep)
            this.load.recordOverhead(outcome.stepMilliseconds - outcome.draftMilliseconds - this.targetMilliseconds + caller);
    }

    /** Tells the other generations on the load this one's acceptance (their batch-wide choice weighs it). */
    private shareAcceptance(): void {
        this.share.alpha = this.alpha;
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
        this.lastChoice = {length, skipped: shared.skipped, probe: shared.probe};
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
     * that maximises the batch's predicted rate at each generation's acceptance estimate, with what
     * each length was measured to take at this load (MeasuredStepTimes.correct), the previous length
     * kept unless another is clearly faster (choose); now and then a try of another length
     * (MeasuredStepTimes.explore, flagged as a probe).
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
        const input = {
            maxLength,
            tokensPerPosition,
            draftTime: this.load.draftTime,
            stepTime,
            overheadTime: this.load.overheadTime,
            otherTokens: others.tokens,
            otherYield: others.expectedYield,
            resumeTimePerToken
        };
        const best = chooseDraftLength({...input, alpha: this.alpha, mirrorAlphas: others.adaptiveAlphas});
        // The model's rates, with what a step of each length was measured to cost at this load.
        const stepTimes = this.load.stepTimes;
        const key = MeasuredStepTimes.key(this.load.liveGenerations, tokensPerPosition);
        const corrected = stepTimes.correct(key, best);
        const chosen = this.choose(corrected, others, this.load.settledAt(key), stepTimes.measuredAt(key));
        let choice: SharedDraftChoice = {length: chosen, skipped: chosen === 0, probe: false, resumeTokens};
        const candidate = (): number | undefined => this.tryCandidate(chosen, corrected, best.times, input, others.adaptiveAlphas);
        const tried = stepTimes.explore(key, chosen, candidate, (length) => corrected[length]);
        if (tried !== undefined) choice = {length: tried, skipped: false, probe: true, resumeTokens};
        else this.load.settle(key, chosen);
        stepTimes.begin(key, choice.length, best.yields[choice.length], best.times[0]);
        return choice;
    }

    /**
     * The length of the best rate in `rates`, the length last settled at this load (`previous`) kept
     * unless another is clearly faster (every change of the step's shape costs a rebuild of the
     * target's compute graph). Speculation is turned on only for a clear gain — onMargin where a
     * draft's step time is `measured` at this load, unmeasuredOnMargin where only the model claims
     * it — as turning it on costs the drafters' catch-up, and a draft that holds a batched step back
     * or finishes some requests long before others costs more than any estimate shows. Within
     * minDwell choices of a turn on or off at this load it is not turned back: where drafting and not
     * drafting are about as fast, noisy estimates would otherwise flip it every few steps and pay
     * each turn's catch-up and rebuilds.
     */
    private choose(
        rates: readonly number[],
        others: {readonly adaptiveAlphas: readonly number[]; readonly expectedYield: number},
        previous: SettledRegime | undefined,
        measured: boolean
    ): number {
        const {maxLength} = this.options;
        const previousLength = previous?.length ?? 0;
        const dwelling = previous !== undefined && previous.turned && previous.choices < minDwell;
        let best = dwelling && previousLength > 0 ? 1 : 0;
        for (let length = best + 1; length < rates.length; length++) if (rates[length] > rates[best] * (1 + 1e-9)) best = length;
        if (previousLength === 0) {
            const margin = measured ? onMargin : unmeasuredOnMargin;
            return best > 0 && !dwelling && rates[best] >= rates[0] * (1 + margin) ? best : 0;
        }
        if (previousLength > maxLength) return best;
        // The margin is a share of the auto generations' part of the batch's rate (the others' lengths are fixed).
        const autoYield = [this.alpha, ...others.adaptiveAlphas].reduce(
            (sum, alpha) => sum + expectedTokensPerStep(alpha, previousLength),
            0
        );
        const margin = (switchMargin * autoYield) / (autoYield + others.expectedYield);
        return rates[best] <= rates[previousLength] * (1 + margin) ? previousLength : best;
    }

    /**
     * What to try now and then beside `chosen` (MeasuredStepTimes.explore): none while drafting (to time
     * drafting against it); while not — if some draft would pay at perfect acceptance (otherwise
     * acceptance cannot change the choice, and a try would only cost) — the draft rated best at the
     * acceptance estimates (`rates`), or, where longer, the longest draft up to the one best at perfect
     * acceptance whose step is predicted (`times`) to take at most cheapTryFactor times one without a
     * draft: a longer try measures acceptance faster (speculation comes back sooner when it returns),
     * which is cheap where a step is memory-bound, while on a long compute-bound batch a long draft's
     * steps cost many steps without one.
     */
    private tryCandidate(
        chosen: number,
        rates: readonly number[],
        times: readonly number[],
        input: Omit<Parameters<typeof chooseDraftLength>[0], "alpha">,
        otherAlphas: readonly number[]
    ): number | undefined {
        if (chosen > 0) return 0;
        const perfect = chooseDraftLength({...input, resumeTimePerToken: 0, alpha: 1, mirrorAlphas: otherAlphas.map(() => 1)});
        if (perfect.length === 0) return undefined;
        let candidate = 1;
        for (let length = 2; length < rates.length; length++) if (rates[length] > rates[candidate]) candidate = length;
        for (let length = candidate + 1; length <= perfect.length && times[length] <= cheapTryFactor * times[0]; length++)
            candidate = length;
        return candidate;
    }
}

/** Each drafted step weighs earlier observations by this, so the estimate follows a change of content (memory ≈ 32 steps). */
const memoryDecay = 1 - 1 / 32;
/**
 * Tokens still to come over which resuming drafting is charged at most: a generation may stop (EOS, a
 * stop string) long before its max_tokens.
 */
const resumeHorizon = 256;
/** How much faster (predicted, as a share of the auto generations' part of the batch's rate) another length must be to replace the previous one. */
const switchMargin = 0.01;
/** How much faster than no draft a draft must be rated to turn speculation on, where a draft's step time is measured at the load. */
const onMargin = 0.05;
/** The same where only the cost model rates it. */
const unmeasuredOnMargin = 0.1;
/** A try of a draft is made longer than the length rated best while its step is predicted to cost at most this many steps without a draft. */
const cheapTryFactor = 2;
/** Shared steps at one load after speculation was turned on or off before it may be turned back. */
const minDwell = 16;
