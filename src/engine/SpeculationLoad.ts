import {AcceptanceSpread} from "./AcceptanceSpread.js";
import {joinUntimedSteps, MeasuredStepTimes} from "./MeasuredStepTimes.js";
import {RecentMedian} from "./RecentMedian.js";
import {StepCostCurve} from "./StepCostCurve.js";

/** One live generation's share of the next target step: its tokens and the tokens it is expected to emit. */
export class LoadShare {
    public tokens = 1;
    public expectedYield = 1;
    /** Its acceptance estimate per draft position (AdaptiveDraftLength). */
    public alpha = 0.5;
    /** Tokens its drafter must read before it drafts again, when it did not draft the step before (else 0). */
    public lag = 0;

    /** `adaptive`: its length is chosen by draftLength auto (the others' are fixed, scheduled or none). */
    public constructor(public readonly adaptive: boolean) {}
}

/**
 * What the generations on one target share for choosing draft lengths (`draftLength: "auto"`): the
 * measured cost of a target step by its total tokens, the cost of drafting one position and of a
 * drafter catching up on one token it missed, the time a step spends outside both, what a step of
 * each draft length was measured to take against one without a draft (MeasuredStepTimes), a running
 * acceptance estimate that is every new generation's prior, and each live generation's share of the
 * next step (the batch composition, under continuous batching).
 * One instance per server; a generation without one gets its own.
 */
export class SpeculationLoad {
    private readonly draftMilliseconds = new RecentMedian();
    private readonly catchUpMilliseconds = new RecentMedian();
    private readonly overheadMilliseconds = new RecentMedian();
    /** Geometric acceptance counts (accepted positions; steps that ended at a rejection), halved as they grow. */
    private readonly overall = {accepted: 0, rejected: 0};
    /** The same counts by prior key (serve: the tenant), most recently used last; at most maxPriorKeys. */
    private readonly keyed = new Map<string, {accepted: number; rejected: number}>();
    private readonly shares = new Set<LoadShare>();
    private readonly spread = new AcceptanceSpread();
    private lastChoice: {readonly step: string | undefined; readonly choice: SharedDraftChoice} | undefined;
    /** The last settled choice (not a try) at each load (MeasuredStepTimes.key), most recently used last; at most maxSettledKeys. */
    private readonly settled = new Map<string, SettledRegime>();
    private bootstrapChoices = 0;
    /** The last shared target step whose cost was recorded (firstReport). */
    private reportedStep = -Infinity;

    /**
     * `stepCost`: the curve to learn into (a preset one, in tests); `stepTimes`: what a step of each
     * length takes against one without a draft (one that times nothing, in tests whose costs are preset).
     */
    public constructor(
        public readonly stepCost = new StepCostCurve(),
        public readonly stepTimes = new MeasuredStepTimes()
    ) {}

    /** A share of the next step for a generation that starts; leave() when it ends. */
    public join(adaptive = false): LoadShare {
        const share = new LoadShare(adaptive);
        this.shares.add(share);
        this.stepTimes.disturb(joinUntimedSteps);
        return share;
    }

    public leave(share: LoadShare): void {
        this.shares.delete(share);
        this.stepTimes.disturb();
    }

    /**
     * The rest of the batch, every live generation but `share`: the tokens and expected yield of those
     * whose length is fixed, how many choose theirs by draftLength auto, the tokens those put into the
     * step they last chose for, and the tokens their drafters must catch up on before drafting again.
     */
    public others(share: LoadShare): {
        tokens: number;
        expectedYield: number;
        adaptive: number;
        adaptiveTokens: number;
        adaptiveAlphas: number[];
        adaptiveLag: number;
    } {
        let tokens = 0;
        let expectedYield = 0;
        let adaptive = 0;
        let adaptiveTokens = 0;
        let adaptiveLag = 0;
        const adaptiveAlphas: number[] = [];
        for (const other of this.shares)
            if (other === share) continue;
            else if (other.adaptive) {
                adaptive++;
                adaptiveTokens += other.tokens;
                adaptiveLag += other.lag;
                adaptiveAlphas.push(other.alpha);
            } else {
                tokens += other.tokens;
                expectedYield += other.expectedYield;
            }
        return {tokens, expectedYield, adaptive, adaptiveTokens, adaptiveAlphas, adaptiveLag};
    }

    /**
     * One draft length for every auto generation of a shared target step: the first generation to
     * choose for `step` (the shared target's step count, with what else the choice depends on) runs
     * `choose`, the others of that step take its result. Sequences of unequal lengths in one step
     * can cost more than their tokens (llama.cpp decodes a batch over separate KV streams in passes
     * of equal lengths, and a one-token probe beside non-drafting sequences is a pass of its own),
     * and the choice weighs every auto generation's acceptance anyway. Without a step (no shared
     * target), every call chooses.
     */
    public sharedChoice(step: string | undefined, choose: () => SharedDraftChoice): SharedDraftChoice {
        if (step !== undefined && this.lastChoice?.step === step) return this.lastChoice.choice;
        const choice = choose();
        this.lastChoice = {step, choice};
        return choice;
    }

    /**
     * Whether draft lengths are still chosen to measure the cost curve rather than from it: until two
     * step sizes have settledSamples steady samples each, or, where the batch's shape keeps changing,
     * for about maxBootstrapSteps steps (choices per live generation; then two sizes measured in any
     * way do). A size seen only
     * right after a change of shape, or once, may be far off, and a curve that overrates drafting keeps
     * speculation off for good (it never measures the drafted sizes again).
     */
    public bootstrapping(): boolean {
        const curve = this.stepCost;
        const done =
            curve.settledSizes(settledSamples) >= 2 ||
            (this.bootstrapChoices >= maxBootstrapSteps * Math.max(1, this.shares.size) && curve.sizes >= 2);
        if (!done) this.bootstrapChoices++;
        return !done;
    }

    /**
     * A settled choice (not a try) of `length` at load `key` (MeasuredStepTimes.key): counts how long
     * its regime (drafting or not) has held there, and whether that regime began with a turn at that load.
     */
    public settle(key: string, length: number): void {
        const last = this.settled.get(key);
        this.settled.delete(key);
        if (last === undefined && this.settled.size >= maxSettledKeys) this.settled.delete(this.settled.keys().next().value!);
        const held = last !== undefined && last.length > 0 === length > 0;
        this.settled.set(key, {length, choices: held ? last.choices + 1 : 1, turned: held ? last.turned : last !== undefined});
    }

    /** The last settled choice at load `key` (where hysteresis starts); undefined before any. */
    public settledAt(key: string): SettledRegime | undefined {
        return this.settled.get(key);
    }

    public get liveGenerations(): number {
        return this.shares.size;
    }

    /** A generation's accepted positions and rejections, for every new generation's prior and, given `key`, its key's. */
    public recordAcceptance(accepted: number, rejected: number, key?: string): void {
        addAcceptance(this.overall, accepted, rejected);
        if (key === undefined) return;
        const counts = this.keyed.get(key) ?? {accepted: 0, rejected: 0};
        this.keyed.delete(key);
        if (this.keyed.size >= maxPriorKeys) this.keyed.delete(this.keyed.keys().next().value!);
        this.keyed.set(key, counts);
        addAcceptance(counts, accepted, rejected);
    }

    /**
     * The prior of a new generation under `key` (serve: its tenant): that key's own acceptance, with
     * the running estimate of all generations as its prior worth keyPriorWeight observations, so a
     * tenant whose drafts are accepted less starts lower than the server's mean; without a key, or
     * before the key has been seen, the running estimate alone.
     */
    public priorFor(key?: string): number {
        const overall = this.acceptancePrior;
        const counts = key === undefined ? undefined : this.keyed.get(key);
        if (counts === undefined) return overall;
        return (counts.accepted + keyPriorWeight * overall) / (counts.accepted + counts.rejected + keyPriorWeight);
    }

    /** A generation ends with these counts of its own (accepted positions; steps that ended at a rejection). */
    public recordGeneration(accepted: number, rejected: number): void {
        this.spread.record(accepted, rejected);
    }

    /** Observations a new generation's prior is worth (AcceptanceSpread: more where generations' acceptance differs less). */
    public get priorWeight(): number {
        return this.spread.priorWeight;
    }

    /** The running acceptance estimate (every generation's, recent ones weighted more), from a prior of ½ worth two observations. */
    public get acceptancePrior(): number {
        return (this.overall.accepted + 1) / (this.overall.accepted + this.overall.rejected + 2);
    }

    public recordDraft(milliseconds: number, positions: number): void {
        if (positions > 0) this.draftMilliseconds.add(milliseconds / positions);
    }

    /** Milliseconds to draft one position; 0 before any was measured. */
    public get draftTime(): number {
        return this.draftMilliseconds.value ?? 0;
    }

    /**
     * Drafters read `tokens` they had missed (steps without a draft) in `milliseconds` before drafting:
     * the tokens of every generation that caught up in the same step, whose batched catch-ups each waited for.
     */
    public recordCatchUp(milliseconds: number, tokens: number): void {
        if (tokens > 0) this.catchUpMilliseconds.add(Math.max(0, milliseconds) / tokens);
    }

    /** Milliseconds for a drafter to read one token it missed; 0 before any was measured. */
    public get catchUpTime(): number {
        return this.catchUpMilliseconds.value ?? 0;
    }

    /**
     * Whether the shared target's step number `step` is reported for the first time (every generation
     * of the step reports it, in the order the step handed out its results): only that report records
     * the step's cost. Steps are numbered upwards, so a lower or equal number was reported before.
     */
    public firstReport(step: number): boolean {
        if (step <= this.reportedStep) return false;
        this.reportedStep = step;
        return true;
    }

    public recordOverhead(milliseconds: number): void {
        this.overheadMilliseconds.add(Math.max(0, milliseconds));
    }

    public get overheadTime(): number {
        return this.overheadMilliseconds.value ?? 0;
    }
}

/** A draft length chosen for a step: skipped (none paid), or a probe (a try of a length other than the one that paid, to measure it). */
export interface SharedDraftChoice {
    readonly length: number;
    readonly skipped: boolean;
    readonly probe: boolean;
    /** Tokens the step's auto generations' drafters had to catch up on when it was chosen (all of them: their catch-ups share batched draft calls). */
    readonly resumeTokens?: number;
}

/** The last settled draft length at a load, the settled choices its regime (drafting or not) has held, and whether it began with a turn there. */
export interface SettledRegime {
    readonly length: number;
    readonly choices: number;
    readonly turned: boolean;
}

/** Loads whose last settled choice is remembered (live generations by powers of two, times tokens per position). */
const maxSettledKeys = 64;
/** Steady samples of a step size before the bootstrap counts it as measured (their median ignores one outlier). */
export const settledSamples = 3;
/** Bootstrap steps after which a curve of two sizes measured in any way is used (a batch whose shape never holds still). */
const maxBootstrapSteps = 64;

/** Acceptance observations kept at full weight before the counts are halved. */
const acceptanceMemory = 4096;
/** Prior keys remembered (the least recently used is dropped): tenants are configured, so this is a guard, not a limit. */
const maxPriorKeys = 1024;
/** Observations the running estimate of all generations is worth as a key's prior. */
const keyPriorWeight = 8;

/** Adds observations to acceptance counts, halving both once they exceed acceptanceMemory (recent ones weigh more). */
function addAcceptance(counts: {accepted: number; rejected: number}, accepted: number, rejected: number): void {
    counts.accepted += accepted;
    counts.rejected += rejected;
    if (counts.accepted + counts.rejected > acceptanceMemory) {
        counts.accepted /= 2;
        counts.rejected /= 2;
    }
}
