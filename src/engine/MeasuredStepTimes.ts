import type {DraftLengthChoice} from "../speedup/chooseDraftLength.js";

/**
 * What a step of each draft length really costs beside a step without a draft, at one load (live
 * generations, in powers of two): the ratio q(k) of the wall time between two shared steps at length
 * k to that at length 0, which holds every cost the cost model leaves out — the server's own work
 * per stream and step, a draft that holds a batched step back — and none of the noise of its
 * step-cost estimates. The expected tokens of a step still come from the acceptance estimates, which
 * are measured on every drafted step.
 *
 * A step's time grows as the generations' contexts do, so a ratio is measured in pairs: a try of a
 * few steps at one length between steady steps of the other (explore), its mean time over the mean of
 * the chosen length's recent steady steps before it and its next ones after it, which cancels a drift
 * over the try; each step's time is taken over the cost model's time of a step without a draft at its
 * composition, which cancels generations coming and going (a try that finishes some of them early).
 * Steps that carry another generation's work (a prompt, a drafter's catch-up) are left out, and a try
 * at one load pauses while the load is at another. Tries come at
 * intervals that double while they confirm the choice; a length whose ratio says it is clearly
 * slower is not tried again until maxExploreInterval steps have passed. The choice depends on past
 * steps only, so it leaves every lossless policy lossless.
 */
export class MeasuredStepTimes {
    private readonly loads = new Map<string, LoadTimes>();
    private open: OpenStep | undefined;
    private previous: {key: string; length: number} | undefined;
    /** Shared steps begun, at every load. */
    private steps = 0;
    /** Steps still to begin that are not timed (disturb). */
    private untimedBegins = 0;

    /**
     * `measure`: false times nothing, so no ratio is measured (tests whose costs are preset; tries of
     * a draft still come, for acceptance); `clock` in milliseconds.
     */
    public constructor(
        private readonly measure = true,
        private readonly clock: () => number = () => performance.now()
    ) {}

    /** The key of a load of `live` generations drafting `tokensPerPosition` target tokens per position. */
    public static key(live: number, tokensPerPosition: number): string {
        return `${live <= 2 ? live : 2 ** Math.ceil(Math.log2(live))}/${tokensPerPosition}`;
    }

    /**
     * A shared step starts at `length`, every live generation expected to give `expected` tokens
     * together, a step without a draft at this composition predicted to take `baseline` ms (the cost
     * model's): the step before it ends here. A step's time is taken over its baseline, so that steps
     * of a load whose generations come and go stay comparable. Only a step of the same length and load
     * as the one before it is timed (the first after a change pays a graph rebuild and a drafter's
     * catch-up, costs of the change that the model charges on its own). A try at one load pauses
     * while steps run at others, and is dropped after maxPausedSteps of them.
     */
    public begin(key: string, length: number, expected: number, baseline = 1): void {
        const now = this.clock();
        this.close(now);
        const steady = this.untimedBegins === 0 && this.previous?.key === key && this.previous.length === length;
        if (this.untimedBegins > 0) this.untimedBegins--;
        this.previous = {key, length};
        const load = this.loadFor(key);
        this.steps++;
        // A try paused while the load was elsewhere goes on, unless so many steps ran meanwhile that
        // the steps around it are no longer comparable (the contexts grew or were replaced).
        if (this.steps - load.lastStep - 1 > maxPausedSteps) {
            load.trial = undefined;
            load.recent.clear();
        }
        load.lastStep = this.steps;
        load.steps++;
        this.open = {key, length, start: now, steady, index: load.steps, expected, stepped: 0, baseline};
        const trial = load.trial;
        if (trial?.phase === "try" && (trial.to !== length || --trial.remaining <= 0)) trial.phase = "after";
    }

    /** A generation's step ended, from which it expected `tokens` tokens (at its acceptance estimate, for its draft length). */
    public stepped(tokens: number): void {
        if (this.open !== undefined) this.open.stepped += tokens;
    }

    /**
     * Work that is no step's own ran, or will run, beside the shared steps: the step under way is not
     * timed, and with `steps` neither are that many steps after it. A generation that joins passes
     * joinUntimedSteps: its prompt is decoded in the step under way or the next, and its drafter reads
     * that prompt before the step after (or at its first draft, which disturbs that step in turn); one
     * that leaves, or a drafter catching up on what steps without a draft emitted, passes 0. A try
     * under way goes on, its disturbed steps left out (each step is taken over its baseline, which
     * follows the number of generations).
     */
    public disturb(steps = 0): void {
        if (this.open !== undefined) this.open.steady = false;
        this.untimedBegins = Math.max(this.untimedBegins, steps);
    }

    /** Whether some draft length's step time is measured at `key`. */
    public measuredAt(key: string): boolean {
        return (this.loads.get(key)?.ratios.size ?? 0) > 0;
    }

    /** The measured time of a step at `length` over one without a draft at `key`; undefined where not measured. */
    public timeRatio(key: string, length: number): number | undefined {
        if (length === 0) return 1;
        const ratio = this.loads.get(key)?.ratios.get(length);
        return ratio === undefined ? undefined : Math.exp(ratio.logSum / ratio.weight);
    }

    /**
     * The rate of every length of `choice` (chooseDraftLength's) with the measured time ratios: a
     * length k measured at `key` runs in q(k) times the predicted time of a step without a draft, plus
     * its predicted catch-up, for the tokens the acceptance estimates expect (never above the
     * prediction); an unmeasured length keeps its prediction, scaled as the measured draft length
     * nearest it was (so it is assumed to be as far off as that one: much of a draft's extra time is
     * the same whatever its length, so a line through q(0) = 1 would overrate long drafts where a step
     * is memory-bound); where no draft length is measured, the predictions.
     */
    public correct(key: string, choice: DraftLengthChoice): number[] {
        const withRatios = choice.rates.map((_rate, length) => {
            const ratio = this.timeRatio(key, length);
            // The model leaves costs out, never adds them: a measurement only ever lowers its rate (and a
            // noisy pair that would raise it is not believed).
            return ratio === undefined
                ? undefined
                : Math.min(choice.rates[length], choice.yields[length] / (choice.times[0] * ratio + choice.resumeTimes[length]));
        });
        return choice.rates.map((rate, length) => {
            const measured = withRatios[length];
            if (measured !== undefined) return measured;
            let nearest: number | undefined;
            for (let other = 1; other < withRatios.length; other++)
                if (withRatios[other] !== undefined && (nearest === undefined || Math.abs(other - length) < Math.abs(nearest - length)))
                    nearest = other;
            return nearest === undefined ? rate : (rate * withRatios[nearest]!) / choice.rates[nearest];
        });
    }

    /**
     * The length to run the next step at instead of `chosen`, when a try is due: `candidate()` (0
     * while drafting, a draft length while not; asked only when a try is due), unless drafting is
     * measured against no draft here in confirmingPairs tries and the candidate's rate (`rate`) is below exploreWithin of the
     * chosen one's (any after maxExploreInterval steps); it runs for trySteps steps, after which the
     * chosen length runs again. Undefined: run `chosen`. Turning drafting on or off starts the
     * intervals again.
     */
    public explore(
        key: string,
        chosen: number,
        candidateFor: () => number | undefined,
        rate: (length: number) => number
    ): number | undefined {
        const load = this.loadFor(key);
        if (load.trial?.phase === "try") return load.trial.to;
        if (load.drafting !== chosen > 0) {
            load.drafting = chosen > 0;
            load.interval = baseExploreInterval;
            load.lastExplored = load.steps;
        }
        const since = load.steps - load.lastExplored;
        if (since < load.interval) return undefined;
        const candidate = candidateFor();
        if (candidate === undefined || candidate === chosen || chosen > 0 === candidate > 0) return undefined;
        // Untimed, a try of no draft would tell nothing; one of a draft still measures acceptance.
        if (!this.measure && candidate === 0) return undefined;
        // A try is timed against the chosen length's last steady steps, if recent.
        const recent = (load.recent.get(chosen) ?? []).filter((step) => load.steps - step.index < recentSteps);
        if (this.measure && recent.length < pairSteps) return undefined;
        // Confirmed: the drafted length's time against no draft, or while not drafting, any draft
        // length's, measured in confirmingPairs tries (one noisy pair must not stop tries for good).
        const pairs = (length: number): number => load.ratios.get(length)?.pairs ?? 0;
        const confirmed =
            chosen > 0 ? pairs(chosen) >= confirmingPairs : [...load.ratios.keys()].some((length) => pairs(length) >= confirmingPairs);
        if (confirmed && since < maxExploreInterval && !(rate(candidate) >= exploreWithin * rate(chosen))) return undefined;
        load.lastExplored = load.steps;
        load.interval = Math.min(maxExploreInterval, 2 * load.interval);
        load.trial = {
            from: chosen,
            to: candidate,
            firstStep: load.steps + 1,
            before: recent.length === 0 ? Number.NaN : mean(recent.map((step) => step.milliseconds)),
            tried: [],
            after: [],
            phase: "try",
            remaining: trySteps
        };
        return candidate;
    }

    private close(now: number): void {
        const step = this.open;
        this.open = undefined;
        if (!this.measure || step === undefined || !step.steady) return;
        // Where only some generations stepped (a draft held others back to the next step), the time to
        // step them all is the longer: the step's time over the share of the expected tokens it produced.
        const milliseconds = ((now - step.start) * step.expected) / step.stepped / step.baseline;
        if (!(milliseconds > 0) || !Number.isFinite(milliseconds)) return;
        const load = this.loadFor(step.key);
        const recent = load.recent.get(step.length) ?? [];
        recent.push({index: step.index, milliseconds});
        if (recent.length > pairSteps) recent.shift();
        load.recent.set(step.length, recent);
        const trial = load.trial;
        // A step begun before the try is the chosen length's last before it.
        if (trial === undefined || step.index < trial.firstStep) return;
        // The try's last step ends after the try has handed the next step back to `from`; steps of
        // other lengths (the chosen length moved) are passed over, for at most recentSteps.
        if (step.length === trial.to) trial.tried.push(milliseconds);
        else if (trial.phase === "after" && step.length === trial.from) {
            trial.after.push(milliseconds);
            if (trial.after.length >= pairSteps) this.finish(load, trial);
        } else if (step.index - trial.firstStep > trySteps + recentSteps) load.trial = undefined;
    }

    /** A try and the steps around it are timed: its ratio to them joins the pair's estimate. */
    private finish(load: LoadTimes, trial: Trial): void {
        load.trial = undefined;
        if (trial.tried.length === 0) return;
        const ratio = mean(trial.tried) / ((trial.before + mean(trial.after)) / 2);
        // The ratio of a drafted step to one without a draft, whichever ran as the try.
        const length = trial.to > 0 ? trial.to : trial.from;
        const logRatio = trial.to > 0 ? Math.log(ratio) : -Math.log(ratio);
        if (!Number.isFinite(logRatio)) return;
        const estimate = load.ratios.get(length) ?? {logSum: 0, weight: 0, pairs: 0};
        estimate.logSum = estimate.logSum * ratioDecay + logRatio;
        estimate.weight = estimate.weight * ratioDecay + 1;
        estimate.pairs++;
        load.ratios.set(length, estimate);
    }

    private loadFor(key: string): LoadTimes {
        let load = this.loads.get(key);
        if (load === undefined) {
            if (this.loads.size >= maxKeys) this.loads.delete(this.loads.keys().next().value!);
            this.loads.set(
                key,
                (load = {
                    ratios: new Map(),
                    recent: new Map(),
                    steps: 0,
                    lastStep: this.steps,
                    lastExplored: 0,
                    interval: baseExploreInterval,
                    drafting: undefined
                })
            );
        }
        return load;
    }
}

function mean(values: readonly number[]): number {
    return values.reduce((sum, value) => sum + value, 0) / values.length;
}

interface OpenStep {
    readonly key: string;
    readonly length: number;
    readonly start: number;
    steady: boolean;
    /** Its number among the steps begun at its load. */
    readonly index: number;
    /** The tokens expected of a step of every live generation at its length, and of the generations that did step. */
    readonly expected: number;
    stepped: number;
    /** The predicted time of a step without a draft at its composition: its time is measured in these. */
    readonly baseline: number;
}

/** A try of length `to` amid steps of `from`: the mean time of `from`'s steps before it, its own steps' times, and those of `from` after it. */
interface Trial {
    readonly from: number;
    readonly to: number;
    /** The number of the try's first step. */
    readonly firstStep: number;
    readonly before: number;
    readonly tried: number[];
    readonly after: number[];
    phase: "try" | "after";
    remaining: number;
}

interface LoadTimes {
    /** log q(k) by draft length k: decayed sums of the pairs' log ratios, their weight, and how many pairs were measured. */
    readonly ratios: Map<number, {logSum: number; weight: number; pairs: number}>;
    /** The last steady steps' times by length (pairSteps of each), with their numbers among this load's steps. */
    readonly recent: Map<number, Array<{readonly index: number; readonly milliseconds: number}>>;
    trial?: Trial;
    /** Shared steps begun at this load. */
    steps: number;
    /** The number, among the steps at every load, of its last step. */
    lastStep: number;
    lastExplored: number;
    interval: number;
    /** Whether the chosen length drafted, at the last explore(). */
    drafting: boolean | undefined;
}

/** Steps after the one under way that a generation joining leaves untimed: its prompt's decode, then its drafter's read of it. */
export const joinUntimedSteps = 2;
/** Steps at other loads after which a load's try, and the steps it would be paired with, are dropped. */
const maxPausedSteps = 32;
/** Steps at a load within which a length's steady steps pair with a try (the chosen length may move between lengths meanwhile). */
const recentSteps = 32;
/** Steady steps of the chosen length timed before and after a try. */
const pairSteps = 4;
/** Steps a try runs (the first, after the change, is not timed). */
const trySteps = 5;
/** Each new pair weighs the earlier ones of its length by this. */
const ratioDecay = 0.75;
/** Steps between tries, doubling after each up to maxExploreInterval. */
const baseExploreInterval = 8;
const maxExploreInterval = 2048;
/** Tries of a length before its ratio can stop further tries (exploreWithin). */
const confirmingPairs = 2;
/** A measured pair is tried again when the candidate's rate is at least this share of the chosen length's. */
const exploreWithin = 0.85;
/** Loads remembered (live generations by powers of two, times tokens per position). */
const maxKeys = 64;
