import {describe, expect, it} from "vitest";
import {AdaptiveDraftLength} from "./AdaptiveDraftLength.js";
import {joinUntimedSteps, MeasuredStepTimes} from "./MeasuredStepTimes.js";
import {presetSpeculationLoad} from "./testing/presetSpeculationLoad.js";

/** A clock the test moves. */
function testClock(): {now: number; read: () => number} {
    const clock = {now: 0, read: () => clock.now};
    return clock;
}

/**
 * Runs `count` shared steps on `stepTimes`, chosen `chosen` unless a try is due (of `candidate`): a step
 * of length k takes `milliseconds(k, step)`; every step's generations all step (their expected
 * tokens `expected`) unless `share` says what share of them did. Returns the lengths run.
 */
function run(
    stepTimes: MeasuredStepTimes,
    clock: {now: number},
    key: string,
    settings: {
        count: number;
        chosen: number;
        candidate: number;
        milliseconds: (length: number, step: number) => number;
        rate?: (length: number) => number;
        share?: (length: number) => number;
        /** The predicted time of a step without a draft at each step (default 1). */
        baseline?: (step: number) => number;
    }
): number[] {
    const lengths: number[] = [];
    for (let step = 0; step < settings.count; step++) {
        const length = stepTimes.explore(key, settings.chosen, () => settings.candidate, settings.rate ?? (() => 1)) ?? settings.chosen;
        lengths.push(length);
        stepTimes.begin(key, length, 10, settings.baseline?.(step) ?? 1);
        stepTimes.stepped(10 * (settings.share?.(length) ?? 1));
        clock.now += settings.milliseconds(length, step);
    }
    return lengths;
}

describe("MeasuredStepTimes", () => {
    it("times a few steps of another length between steps of the chosen one, and takes their ratio", () => {
        const clock = testClock();
        const stepTimes = new MeasuredStepTimes(true, clock.read);
        const key = MeasuredStepTimes.key(16, 1);
        expect(stepTimes.timeRatio(key, 4)).toBeUndefined();
        expect(stepTimes.timeRatio(key, 0)).toBe(1);
        const lengths = run(stepTimes, clock, key, {count: 40, chosen: 0, candidate: 4, milliseconds: (length) => (length === 4 ? 3 : 1)});
        // Tried from step 8, five steps; measured once four steady steps of 0 follow.
        expect(lengths.flatMap((length, step) => (length === 4 ? [step] : [])).slice(0, 5)).toEqual([8, 9, 10, 11, 12]);
        expect(stepTimes.timeRatio(key, 4)).toBeCloseTo(3, 9);
        // Trying 0 while drafting 4 measures the same ratio the other way round.
        const drafting = new MeasuredStepTimes(true, clock.read);
        run(drafting, clock, key, {count: 40, chosen: 4, candidate: 0, milliseconds: (length) => (length === 4 ? 3 : 1)});
        expect(drafting.timeRatio(key, 4)).toBeCloseTo(3, 9);
    });

    it("cancels a drift of the step time over a try (contexts growing) with the steps before and after it", () => {
        const clock = testClock();
        const stepTimes = new MeasuredStepTimes(true, clock.read);
        const key = MeasuredStepTimes.key(4, 1);
        run(stepTimes, clock, key, {
            count: 40,
            chosen: 0,
            candidate: 2,
            milliseconds: (length, step) => (length === 2 ? 2 : 1) * (1 + step / 20)
        });
        expect(stepTimes.timeRatio(key, 2)).toBeCloseTo(2, 1);
    });

    it("counts a step in which only part of the generations stepped as that much slower (a draft held the others back)", () => {
        const clock = testClock();
        const stepTimes = new MeasuredStepTimes(true, clock.read);
        const key = MeasuredStepTimes.key(8, 1);
        run(stepTimes, clock, key, {
            count: 40,
            chosen: 0,
            candidate: 3,
            milliseconds: (length) => (length === 3 ? 2 : 1),
            share: (length) => (length === 3 ? 0.5 : 1)
        });
        expect(stepTimes.timeRatio(key, 3)).toBeCloseTo(4, 9);
    });

    it("keeps a try across generations leaving and joining (the join's steps untimed) and a short stay at another load", () => {
        const clock = testClock();
        const settings = {chosen: 0, candidate: 2, milliseconds: (length: number) => (length === 2 ? 3 : 1)};
        const key = MeasuredStepTimes.key(2, 1);
        const left = new MeasuredStepTimes(true, clock.read);
        run(left, clock, key, {...settings, count: 10});
        // Two steps into the try a generation leaves: the step under way is not timed, the try goes on.
        left.disturb();
        clock.now += 50;
        run(left, clock, key, {...settings, count: 10});
        expect(left.timeRatio(key, 2)).toBeCloseTo(3, 9);
        // One joins: the step under way and the next joinUntimedSteps (its prompt, its drafter's read of it) are dear and not timed.
        const joined = new MeasuredStepTimes(true, clock.read);
        run(joined, clock, key, {...settings, count: 10});
        joined.disturb(joinUntimedSteps);
        clock.now += 50;
        run(joined, clock, key, {...settings, count: joinUntimedSteps, milliseconds: (length) => settings.milliseconds(length) + 50});
        run(joined, clock, key, {...settings, count: 10});
        expect(joined.timeRatio(key, 2)).toBeCloseTo(3, 9);
        // The same steps timed: one join fewer untimed steps and the ratio is off.
        const counted = new MeasuredStepTimes(true, clock.read);
        run(counted, clock, key, {...settings, count: 10});
        counted.disturb(joinUntimedSteps - 1);
        run(counted, clock, key, {...settings, count: joinUntimedSteps, milliseconds: (length) => settings.milliseconds(length) + 50});
        run(counted, clock, key, {...settings, count: 10});
        expect(counted.timeRatio(key, 2)).not.toBeCloseTo(3, 1);
        // Steps at another load pause it (the first step back is not timed); too many of them drop it.
        const elsewhere = MeasuredStepTimes.key(8, 1);
        const paused = new MeasuredStepTimes(true, clock.read);
        run(paused, clock, key, {...settings, count: 10});
        run(paused, clock, elsewhere, {...settings, count: 32, milliseconds: () => 7});
        run(paused, clock, key, {...settings, count: 10});
        expect(paused.timeRatio(key, 2)).toBeCloseTo(3, 9);
        const moved = new MeasuredStepTimes(true, clock.read);
        run(moved, clock, key, {...settings, count: 10});
        run(moved, clock, elsewhere, {...settings, count: 33, milliseconds: () => 7});
        run(moved, clock, key, {...settings, count: 6});
        expect(moved.timeRatio(key, 2)).toBeUndefined();
    });

    it("pairs a try with the chosen length's recent steady steps while the chosen length moves between lengths", () => {
        const clock = testClock();
        const stepTimes = new MeasuredStepTimes(true, clock.read);
        const key = MeasuredStepTimes.key(32, 1);
        // Four steps at 4, then two at 2, over and over: never five steps of one length in a row.
        const chosen = (step: number): number => (step % 6 < 4 ? 4 : 2);
        const milliseconds = (length: number): number => (length === 0 ? 1 : length === 4 ? 3 : 2);
        for (let step = 0; step < 120; step++) {
            const length =
                stepTimes.explore(
                    key,
                    chosen(step),
                    () => 0,
                    () => 1
                ) ?? chosen(step);
            stepTimes.begin(key, length, 10);
            stepTimes.stepped(10);
            clock.now += milliseconds(length);
        }
        expect(stepTimes.timeRatio(key, 4)).toBeCloseTo(3, 9);
    });

    it("takes each step over its baseline, so generations that finish during a try do not make drafting look cheap", () => {
        const clock = testClock();
        const stepTimes = new MeasuredStepTimes(true, clock.read);
        const key = MeasuredStepTimes.key(32, 1);
        // From the try's second step on, half the generations have left: every step takes half as long, as the model predicts.
        const baseline = (step: number): number => (step >= 9 ? 0.5 : 1);
        run(stepTimes, clock, key, {
            count: 30,
            chosen: 0,
            candidate: 4,
            baseline,
            milliseconds: (length, step) => (length === 4 ? 3 : 1) * baseline(step)
        });
        expect(stepTimes.timeRatio(key, 4)).toBeCloseTo(3, 9);
    });

    it("measures nothing when told not to", () => {
        const clock = testClock();
        const key = MeasuredStepTimes.key(2, 1);
        // Untimed, it still tries drafts (they measure acceptance), never no draft, and measures no ratio.
        const blind = new MeasuredStepTimes(false, clock.read);
        expect(
            run(blind, clock, key, {count: 100, chosen: 0, candidate: 2, milliseconds: () => 1}).filter((length) => length === 2)
        ).toHaveLength(15);
        expect(run(blind, clock, key, {count: 100, chosen: 2, candidate: 0, milliseconds: () => 1}).every((length) => length === 2)).toBe(
            true
        );
        expect(blind.timeRatio(key, 2)).toBeUndefined();
    });

    it("tries again at doubling intervals, and not a length measured clearly slower in two tries until maxExploreInterval", () => {
        const clock = testClock();
        const key = MeasuredStepTimes.key(16, 1);
        const even = new MeasuredStepTimes(true, clock.read);
        const tried = run(even, clock, key, {count: 200, chosen: 0, candidate: 2, milliseconds: () => 1});
        const starts = tried.flatMap((length, step) => (length === 2 && tried[step - 1] === 0 ? [step] : []));
        expect(starts).toEqual([8, 24, 56, 120]);
        const slow = new MeasuredStepTimes(true, clock.read);
        const lengths = run(slow, clock, key, {
            count: 2100,
            chosen: 0,
            candidate: 2,
            milliseconds: (length) => (length === 2 ? 4 : 1),
            rate: (length) => (length === 2 && slow.timeRatio(key, 2) !== undefined ? 0.5 : 1)
        });
        // A second try confirms the first (one noisy pair must not stop tries for good), then none until 2,048 steps on.
        expect(lengths.flatMap((length, step) => (length === 2 && lengths[step - 1] === 0 ? [step] : []))).toEqual([8, 24, 2072]);
    });

    it("rates a measured length by its measured time, an unmeasured one as its nearest measured neighbour was off", () => {
        const clock = testClock();
        const stepTimes = new MeasuredStepTimes(true, clock.read);
        const key = MeasuredStepTimes.key(1, 1);
        run(stepTimes, clock, key, {count: 40, chosen: 0, candidate: 2, milliseconds: (length) => (length === 2 ? 3 : 1)});
        const choice = {
            length: 2,
            rate: 1.5,
            rates: [1, 1.5, 1.5, 1.4],
            yields: [1, 2, 3, 3.5],
            times: [1, 4 / 3, 2, 2.5],
            resumeTimes: [0, 0, 0.5, 0.5]
        };
        const corrected = stepTimes.correct(key, choice);
        expect(corrected[0]).toBeCloseTo(1, 9);
        // Length 2: 3 tokens in 3 (its measured time) + 0.5 (catch-up).
        expect(corrected[2]).toBeCloseTo(3 / 3.5, 9);
        // Lengths 1 and 3: their predictions, off as length 2's was.
        expect(corrected[1]).toBeCloseTo((1.5 * (3 / 3.5)) / 1.5, 9);
        expect(corrected[3]).toBeCloseTo((1.4 * (3 / 3.5)) / 1.5, 9);
        // A measurement never raises a prediction.
        expect(stepTimes.correct(key, {...choice, rates: [1, 0.5, 0.5, 0.5]})).toEqual([1, 0.5, 0.5, 0.5]);
        expect(new MeasuredStepTimes(true, clock.read).correct(key, choice)).toEqual(choice.rates);
    });
});

describe("draftLength auto with measured step times", () => {
    /** Steps of one auto generation where a drafted step really takes `drafted` ms, one without a draft 1 ms. */
    function serve(drafted: number, count: number): number[] {
        const clock = testClock();
        const load = presetSpeculationLoad(0.1, new MeasuredStepTimes(true, clock.read));
        const auto = new AdaptiveDraftLength(load, {choose: true, maxLength: 8, initialLength: 4, tokensPerPosition: 1});
        const lengths: number[] = [];
        for (let step = 0; step < count; step++) {
            const length = auto.next(4);
            lengths.push(length);
            clock.now += length === 0 ? 1 : typeof drafted === "number" ? drafted : 1;
            auto.observe({proposed: length, accepted: Math.min(length, 2), draftMilliseconds: 0, stepMilliseconds: 0});
        }
        return lengths;
    }

    it("stops drafting where drafted steps are measured far slower than the model predicts, and keeps it where they are not", () => {
        // The model (a step of n tokens costs 1 + 0.1·(n − 1)) says drafts pay; measured, a drafted step takes 5 steps' time.
        const slow = serve(5, 400);
        expect(slow.slice(0, 8).every((length) => length > 0)).toBe(true);
        expect(slow.slice(-200).filter((length) => length === 0).length).toBeGreaterThan(180);
        // Measured about as predicted: drafting stays on.
        const fair = serve(1.3, 400);
        expect(fair.slice(-200).filter((length) => length > 0).length).toBeGreaterThan(180);
    });
});
