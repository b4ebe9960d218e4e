import {describe, expect, it} from "vitest";
import {AdaptiveDraftLength} from "./AdaptiveDraftLength.js";
import {MeasuredStepTimes} from "./MeasuredStepTimes.js";
import {SpeculationLoad} from "./SpeculationLoad.js";
import {StepCostCurve} from "./StepCostCurve.js";
import {expectedTokensPerStep} from "../speedup/speedupModel.js";
import {presetSpeculationLoad} from "./testing/presetSpeculationLoad.js";

const options = {choose: true, maxLength: 8, initialLength: 4, tokensPerPosition: 1};

/** Runs `steps` steps in which the first `accepted(k)` of k drafted positions are accepted; returns the lengths chosen. */
function run(auto: AdaptiveDraftLength, steps: number, accepted: (length: number) => number): number[] {
    const lengths: number[] = [];
    for (let step = 0; step < steps; step++) {
        const length = auto.next(4);
        lengths.push(length);
        auto.observe({proposed: length, accepted: accepted(length), draftMilliseconds: 0, stepMilliseconds: 0});
    }
    return lengths;
}

describe("StepCostCurve", () => {
    it("fits a line through the measured sizes, exact on a linear cost", () => {
        const curve = new StepCostCurve();
        expect(curve.predict(3)).toBeNaN();
        curve.record(1, 10);
        expect(curve.predict(7)).toBe(10);
        curve.record(5, 14);
        curve.record(9, 18);
        expect(curve.predict(3)).toBeCloseTo(12, 9);
        expect(curve.predict(17)).toBeCloseTo(26, 9);
        expect(curve.sizes).toBe(3);
    });

    it("does not extrapolate a falling cost, and follows a size's later samples", () => {
        const curve = new StepCostCurve();
        curve.record(1, 10);
        curve.record(4, 8);
        expect(curve.predict(64)).toBeGreaterThanOrEqual(8);
        expect(curve.predict(64)).toBeLessThanOrEqual(10);
        for (let sample = 0; sample < 100; sample++) curve.record(1, 20);
        expect(curve.predict(1)).toBeGreaterThan(15);
    });

    it("follows a curve that is flat and then rises (a GPU turning compute-bound) where it is asked", () => {
        const curve = new StepCostCurve();
        for (const size of [1, 2, 4, 8, 16, 32]) curve.record(size, 10);
        for (const size of [128, 256, 512]) curve.record(size, 10 + (size - 64) / 8);
        expect(curve.predict(6) - curve.predict(3)).toBeLessThan(0.3);
        expect(curve.predict(400) - curve.predict(300)).toBeGreaterThan(10);
    });
});

describe("StepCostCurve at a size measured on steady steps", () => {
    it("predicts it by their median, not by a line through its neighbours", () => {
        const curve = new StepCostCurve();
        const measure = (): void => {
            curve.record(4, 2);
            curve.record(8, 6);
            curve.record(16, 8);
        };
        measure();
        // One sample each: the fit, bent up at 4 by the dearer sizes beside it.
        expect(curve.predict(4)).toBeGreaterThan(2.5);
        measure();
        measure();
        expect(curve.predict(4)).toBe(2);
        expect(curve.predict(8)).toBe(6);
    });
});

describe("AdaptiveDraftLength's samples of a shared step", () => {
    /** Four generations reporting one shared target's steps, whose counters the test advances. */
    function fourSharingOneTarget() {
        const load = new SpeculationLoad();
        const counters = {steps: 0, tokens: 0};
        const statistics = () => ({...sharedSteps().statistics(), ...counters});
        const generations = Array.from(
            {length: 4},
            () => new AdaptiveDraftLength(load, {...options, choose: false, batchStatistics: statistics})
        );
        return {load, counters, generations};
    }

    it("records a step that several generations share once, so a few dear steps do not become its size's cost", () => {
        const {load, counters, generations} = fourSharingOneTarget();
        const step = (milliseconds: number): void => {
            for (const generation of generations) generation.beforeTarget();
            counters.steps++;
            counters.tokens += 4;
            for (const generation of generations) generation.afterTarget(1, milliseconds, undefined);
        };
        for (let index = 0; index < 12; index++) step(2);
        for (let index = 0; index < 3; index++) step(6);
        // Four reports of each step would leave the last four steps' samples, three of them dear.
        expect(load.stepCost.predict(4)).toBe(2);
        for (const generation of generations) generation.dispose();
    });

    it("records a shared step's drafting once as well", () => {
        const {load, counters, generations} = fourSharingOneTarget();
        const step = (draftMilliseconds: number): void => {
            for (const generation of generations) generation.beforeTarget();
            counters.steps++;
            counters.tokens += 12;
            for (const generation of generations) generation.afterTarget(3, 4, undefined);
            for (const generation of generations) generation.observe({proposed: 2, accepted: 2, draftMilliseconds, stepMilliseconds: 8});
        };
        for (let index = 0; index < 12; index++) step(2);
        for (let index = 0; index < 3; index++) step(10);
        expect(load.draftTime).toBe(1);
        for (const generation of generations) generation.dispose();
    });
});

describe("AdaptiveDraftLength", () => {
    it("bootstraps the cost curve with steady steps without a draft and of the initial length", () => {
        const load = new SpeculationLoad();
        const auto = new AdaptiveDraftLength(load, options);
        const lengths: number[] = [];
        // The first step of each size follows a change of shape and counts as provisional: three steady ones follow.
        for (let step = 0; step < 8; step++) {
            const length = auto.next(4);
            lengths.push(length);
            auto.afterTarget(1 + length, length === 0 ? 10 : 11, undefined);
        }
        expect(lengths).toEqual([0, 0, 0, 0, 4, 4, 4, 4]);
        expect(load.stepCost.settledSizes(3)).toBe(2);
        expect(load.bootstrapping()).toBe(false);
    });

    it("does not let one dear step of a drafted size, right after a change of shape, stop speculation for good", () => {
        // Step times are the test's, not the clock's: the load times no steps of its own.
        const load = new SpeculationLoad(undefined, new MeasuredStepTimes(false));
        const auto = new AdaptiveDraftLength(load, options);
        // Steady 1-token steps cost 1; the first 5-token step pays a 20 ms rebuild, later ones 1.5.
        let previous = 0;
        const lengths: number[] = [];
        for (let step = 0; step < 40; step++) {
            const length = auto.next(4);
            lengths.push(length);
            auto.afterTarget(1 + length, length === 0 ? 1 : length === previous ? 1 + 0.1 * length : 20, undefined);
            auto.observe({proposed: length, accepted: length, draftMilliseconds: 0, stepMilliseconds: 0});
            previous = length;
        }
        expect(lengths.slice(-10).every((length) => length > 0)).toBe(true);
    });

    it("drafts long while every draft is accepted and stops drafting when none is, trying drafts at growing intervals", () => {
        const load = presetSpeculationLoad(0.3);
        const auto = new AdaptiveDraftLength(load, options);
        const accepting = run(auto, 30, (length) => length);
        // 7 and 8 are within the hysteresis of each other here (predicted rates under 1% apart).
        expect(Math.min(...accepting.slice(-5))).toBeGreaterThanOrEqual(7);
        const rejecting = run(auto, 300, () => 0);
        expect(rejecting.slice(-100).filter((length) => length === 0).length).toBeGreaterThanOrEqual(90);
        // Tries keep acceptance measured: a few drafted steps, further apart each time.
        const tries = rejecting.flatMap((length, step) => (length > 0 && rejecting[step - 1] === 0 ? [step] : []));
        expect(tries.length).toBeGreaterThanOrEqual(2);
        const gaps = tries.slice(1).map((step, index) => step - tries[index]);
        expect(gaps.every((gap, index) => index === 0 || gap > gaps[index - 1])).toBe(true);
        expect(auto.choice.skipped || auto.choice.probe).toBe(true);
        // Acceptance coming back brings speculation back, through the tries.
        const recovered = run(auto, 800, (length) => length);
        expect(Math.min(...recovered.slice(-5))).toBeGreaterThanOrEqual(7);
    });

    it("tries the draft rated best at the acceptance estimate, not the longest, where a drafted step costs many without one", () => {
        // Each target token costs 0.8 of a step without a draft (compute-bound): a draft pays only at high acceptance.
        const load = presetSpeculationLoad(0.8);
        const auto = new AdaptiveDraftLength(load, options);
        const probes: number[] = [];
        for (let step = 0; step < 300; step++) {
            const length = auto.next(4);
            if (auto.choice.probe) probes.push(length);
            // Every other position rejected: acceptance about one half.
            auto.observe({proposed: length, accepted: length > 0 ? 1 : 0, draftMilliseconds: 0, stepMilliseconds: 0});
        }
        expect(probes.length).toBeGreaterThan(0);
        // At perfect acceptance the longest draft would be best; tried, each of its steps would cost 7.4 without a draft.
        expect(Math.max(...probes)).toBeLessThanOrEqual(1);
    });

    it("does not turn speculation back on or off within a few steps of turning it at the same load", () => {
        const load = presetSpeculationLoad(0.3);
        const auto = new AdaptiveDraftLength(load, options);
        expect(Math.min(...run(auto, 30, (length) => length).slice(-5))).toBeGreaterThan(0);
        // Every draft rejected: speculation turns off...
        let steps = 0;
        while (auto.next(4) > 0 && steps++ < 100)
            auto.observe({proposed: auto.choice.length, accepted: 0, draftMilliseconds: 0, stepMilliseconds: 0});
        expect(auto.choice.skipped).toBe(true);
        auto.observe({proposed: 0, accepted: 0, draftMilliseconds: 0, stepMilliseconds: 0});
        // ...and stays off for 16 settled choices though every draft is accepted again (tries still draft), then turns back on.
        const after: Array<{length: number; probe: boolean}> = [];
        for (let step = 0; step < 40; step++) {
            const length = auto.next(4);
            after.push({length, probe: auto.choice.probe});
            auto.observe({proposed: length, accepted: length, draftMilliseconds: 0, stepMilliseconds: 0});
        }
        const settled = after.filter((choice) => !choice.probe);
        expect(settled.slice(0, 15).every((choice) => choice.length === 0)).toBe(true);
        expect(after.some((choice) => choice.probe && choice.length > 0)).toBe(true);
        expect(settled.at(-1)!.length).toBeGreaterThan(0);
    });

    it("stops drafting when the other sequences fill the step, and drafts again when they leave", () => {
        const load = presetSpeculationLoad(0.5);
        const auto = new AdaptiveDraftLength(load, options);
        const alone = run(auto, 20, (length) => Math.min(length, 3));
        expect(alone[alone.length - 1]).toBeGreaterThan(0);
        const others = Array.from({length: 31}, () => new AdaptiveDraftLength(load, {...options, choose: false}));
        for (const other of others) other.next(0);
        expect(load.liveGenerations).toBe(32);
        expect(run(auto, 5, (length) => Math.min(length, 3)).slice(-3)).toEqual([0, 0, 0]);
        for (const other of others) other.dispose();
        expect(run(auto, 5, (length) => Math.min(length, 3)).slice(-1)[0]).toBeGreaterThan(0);
    });

    it("takes its prior from the load's running acceptance, and reports its share of the next step", () => {
        const load = presetSpeculationLoad(0.3);
        load.recordAcceptance(90, 10);
        const auto = new AdaptiveDraftLength(load, options);
        expect(auto.alpha).toBeCloseTo(91 / 102, 12);
        const length = auto.next(4);
        expect(length).toBeGreaterThan(0);
        const passive = new AdaptiveDraftLength(load, {...options, choose: false});
        expect(passive.next(2)).toBe(2);
        const others = load.others(load.join());
        // The auto generation is counted as one choosing alike; the other by its share.
        expect(others.adaptive).toBe(1);
        expect(others.tokens).toBe(3);
        expect(others.expectedYield).toBeCloseTo(expectedTokensPerStep(passive.alpha, 2), 12);
    });

    it("gives a new generation its tenant's acceptance as its prior (priorKey), the load's running estimate before the tenant is seen", () => {
        const load = presetSpeculationLoad(0.3);
        const poor = new AdaptiveDraftLength(load, {...options, priorKey: "tenant-a"});
        run(poor, 40, () => 0);
        poor.dispose();
        const good = new AdaptiveDraftLength(load, {...options, priorKey: "tenant-b"});
        run(good, 40, (length) => length);
        good.dispose();
        const overall = load.acceptancePrior;
        expect(load.priorFor()).toBe(overall);
        expect(load.priorFor("tenant-c")).toBe(overall);
        expect(load.priorFor("tenant-a")).toBeLessThan(overall);
        expect(load.priorFor("tenant-b")).toBeGreaterThan(overall);
        expect(new AdaptiveDraftLength(load, {...options, priorKey: "tenant-a"}).alpha).toBeCloseTo(load.priorFor("tenant-a"), 12);
        expect(new AdaptiveDraftLength(load, {...options, priorKey: "tenant-b"}).alpha).toBeCloseTo(load.priorFor("tenant-b"), 12);
    });

    it("remembers at most 1,024 tenants' priors, dropping the least recently used", () => {
        const load = new SpeculationLoad();
        for (let tenant = 0; tenant <= 1024; tenant++) load.recordAcceptance(0, 5, `t${tenant}`);
        expect(load.priorFor("t0")).toBe(load.acceptancePrior);
        expect(load.priorFor("t1024")).toBeLessThan(load.acceptancePrior);
        expect(load.priorFor("t1")).toBeLessThan(load.acceptancePrior);
    });
});

/** A shared target's step counter, advanced by the test between steps (BatchStatistics.steps). */
function sharedSteps() {
    const counters = {steps: 0};
    const statistics = () => ({
        steps: counters.steps,
        tokens: 0,
        submissions: 0,
        largestStep: 0,
        gatherMilliseconds: 0,
        decodeMilliseconds: 0,
        deferredRemovals: 0
    });
    return {counters, statistics};
}

describe("AdaptiveDraftLength resuming after steps without a draft", () => {
    it("learns what a drafter's catch-up costs per missed token, and does not resume where it would not pay for itself", () => {
        const curve = new StepCostCurve();
        for (let sample = 0; sample < 3; sample++) for (const size of [1, 65]) curve.record(size, 1 + (size - 1) * 0.3);
        const load = new SpeculationLoad(curve);
        const auto = new AdaptiveDraftLength(load, options);
        const step = (limit: number, lag: number, catchUp: number): number => {
            const length = auto.next(4, limit, lag);
            auto.observe({proposed: length, accepted: length, draftMilliseconds: 0.1 * length + catchUp, stepMilliseconds: 0});
            return length;
        };
        for (let index = 0; index < 5; index++) expect(step(Infinity, 2, 0)).toBeGreaterThan(0);
        expect(load.draftTime).toBeCloseTo(0.1, 12);
        expect(load.catchUpTime).toBe(0);
        // A step without a draft (no tokens left to draft for), then one that reads 40 missed tokens in 8 ms more.
        expect(step(0, 2, 0)).toBe(0);
        expect(step(Infinity, 40, 8)).toBeGreaterThan(0);
        expect(load.catchUpTime).toBeCloseTo(0.2, 12);
        // After another pause, nothing to catch up is worth it for the last 10 tokens, and 1,000 missed tokens (200 ms) are not.
        expect(step(0, 2, 0)).toBe(0);
        expect(auto.next(4, 10, 0)).toBeGreaterThan(0);
        expect(auto.next(4, 10, 1000)).toBe(0);
    });
});

describe("AdaptiveDraftLength with a dear catch-up", () => {
    it("keeps probing, so one dear measurement of the catch-up cannot keep speculation off for good", () => {
        const load = presetSpeculationLoad(0.3);
        for (let sample = 0; sample < 15; sample++) load.recordCatchUp(1000, 1);
        const auto = new AdaptiveDraftLength(load, options);
        const lengths: number[] = [];
        for (let step = 0; step < 200; step++) {
            const length = auto.next(4, Infinity, 50);
            lengths.push(length);
            auto.observe({proposed: length, accepted: 0, draftMilliseconds: 0, stepMilliseconds: 0});
        }
        expect(lengths.slice(10).filter((length) => length === 0).length).toBeGreaterThan(150);
        expect(lengths.slice(10).filter((length) => length > 0).length).toBeGreaterThan(0);
    });
});

describe("AdaptiveDraftLength resuming in a shared step", () => {
    it("measures a batched catch-up per token of every generation that caught up, not per token of each", () => {
        const curve = new StepCostCurve();
        for (let sample = 0; sample < 3; sample++) for (const size of [2, 130]) curve.record(size, 1 + (size - 2) * 0.15);
        const load = new SpeculationLoad(curve);
        const {counters, statistics} = sharedSteps();
        const pair = [0, 1].map(() => new AdaptiveDraftLength(load, {...options, batchStatistics: statistics}));
        const step = (limit: number, lag: number, catchUp: number): number[] => {
            const lengths = pair.map((auto) => auto.next(4, limit, lag));
            pair.forEach((auto, index) =>
                auto.observe({
                    proposed: lengths[index]!,
                    accepted: lengths[index]!,
                    draftMilliseconds: 0.1 * lengths[index]! + catchUp,
                    stepMilliseconds: 0
                })
            );
            counters.steps++;
            return lengths;
        };
        for (let index = 0; index < 5; index++) expect(Math.min(...step(Infinity, 2, 0))).toBeGreaterThan(0);
        // A step without a draft (39 tokens behind), then both read 40 missed tokens in one batched call of 8 ms, which each waited for.
        expect(step(0, 39, 0)).toEqual([0, 0]);
        expect(Math.min(...step(Infinity, 40, 8))).toBeGreaterThan(0);
        expect(load.catchUpTime).toBeCloseTo(0.1, 12);
    });
});

describe("AdaptiveDraftLength's cost of a step outside drafting and the target", () => {
    it("counts the caller's time between steps when the generation runs alone, and not beside others", () => {
        const load = new SpeculationLoad();
        const auto = new AdaptiveDraftLength(load, options);
        const step = (caller: number): void => {
            auto.next(4);
            auto.afterTarget(1, 1, undefined);
            auto.observe({proposed: 0, accepted: 0, draftMilliseconds: 0, stepMilliseconds: 1.25, callerMilliseconds: caller});
        };
        for (let index = 0; index < 5; index++) step(0.5);
        expect(load.overheadTime).toBeCloseTo(0.75, 12);
        const other = new AdaptiveDraftLength(load, {...options, choose: false});
        for (let index = 0; index < 20; index++) step(5);
        expect(load.overheadTime).toBeCloseTo(0.25, 12);
        other.dispose();
    });
});

describe("AdaptiveDraftLength in a shared step", () => {
    it("gives every auto generation of one target step the same length, chosen again for the next step", () => {
        const load = presetSpeculationLoad(0.3);
        const {counters, statistics} = sharedSteps();
        const good = new AdaptiveDraftLength(load, {...options, batchStatistics: statistics});
        const poor = new AdaptiveDraftLength(load, {...options, batchStatistics: statistics});
        const lengths: Array<[number, number]> = [];
        for (let step = 0; step < 40; step++) {
            const [a, b] = [good.next(4), poor.next(4)];
            lengths.push([a, b]);
            good.observe({proposed: a, accepted: a, draftMilliseconds: 0, stepMilliseconds: 0});
            poor.observe({proposed: b, accepted: Math.min(b, 1), draftMilliseconds: 0, stepMilliseconds: 0});
            counters.steps++;
        }
        // One shape per step, although the two would choose differently alone.
        expect(lengths.every(([a, b]) => a === b)).toBe(true);
        expect(good.alpha).toBeGreaterThan(poor.alpha + 0.2);
        // Each step is chosen anew: the poor generation's acceptance pulls the shared length below the good one's own choice.
        const alone = new AdaptiveDraftLength(presetSpeculationLoad(0.3), options);
        const aloneLengths = run(alone, 40, (length) => length);
        expect(lengths[39][0]).toBeLessThan(aloneLengths[39]);
        expect(lengths[39][0]).toBeGreaterThan(0);
        // A step cut short by the tokens still wanted drafts fewer, and leaves the shared choice to the others.
        expect(poor.next(4, 1)).toBeLessThanOrEqual(1);
        expect(good.next(4)).toBe(lengths[39][0]);
        // A generation of a smaller maximum (auto:MAX) in the same step drafts at most its maximum.
        const short = new AdaptiveDraftLength(load, {...options, maxLength: 1, batchStatistics: statistics});
        expect(short.next(1)).toBe(1);
    });

    it("spends no probe where even perfect acceptance would not pay, and probes where it would", () => {
        // A target step of n tokens costs n: a verified token costs as much as a generated one.
        const flat = presetSpeculationLoad(1);
        const hopeless = new AdaptiveDraftLength(flat, options);
        const lengths = run(hopeless, 200, () => 0);
        expect(lengths.slice(10).every((length) => length === 0)).toBe(true);
        expect(hopeless.choice.skipped).toBe(true);
        const cheap = new AdaptiveDraftLength(presetSpeculationLoad(0.3), options);
        const probed = run(cheap, 200, () => 0);
        expect(probed.slice(10).filter((length) => length > 0).length).toBeGreaterThan(0);
    });

    it("weighs a new generation's prior by how alike finished generations were, so one rejection does not swing it", () => {
        const alike = presetSpeculationLoad(0.3);
        for (let generation = 0; generation < 8; generation++) {
            const finished = new AdaptiveDraftLength(alike, options);
            run(finished, 40, (length) => (length > 3 ? 3 : length));
            finished.dispose();
        }
        expect(alike.priorWeight).toBeGreaterThan(32);
        const fresh = new AdaptiveDraftLength(alike, options);
        const before = fresh.alpha;
        fresh.observe({proposed: 4, accepted: 0, draftMilliseconds: 0, stepMilliseconds: 0});
        expect(before - fresh.alpha).toBeLessThan(0.03);
        // Without finished generations the prior is worth 8 observations, and the same rejection moves α by ~0.1.
        const cold = new AdaptiveDraftLength(presetSpeculationLoad(0.3), options);
        const coldBefore = cold.alpha;
        cold.observe({proposed: 4, accepted: 0, draftMilliseconds: 0, stepMilliseconds: 0});
        expect(coldBefore - cold.alpha).toBeGreaterThan(0.05);
    });
});

describe("StepCostCurve after a change of shape", () => {
    it("lets a size measured only right after a change (a graph rebuild) stand in until a steady sample, without outweighing steady sizes", () => {
        const curve = new StepCostCurve();
        for (const size of [64, 96, 128]) for (let sample = 0; sample < 8; sample++) curve.record(size, size);
        // Size 32 seen once, right after a change of shape: its rebuild tripled the cost.
        curve.recordAfterChange(32, 96);
        expect(curve.has(32)).toBe(true);
        expect(curve.sizes).toBe(4);
        expect(curve.predict(32)).toBeLessThan(40);
        // A later steady sample replaces it, and provisional samples no longer count for that size.
        curve.record(32, 33);
        curve.recordAfterChange(32, 200);
        expect(curve.predict(32)).toBeCloseTo(32.2, 0);
    });

    it("keeps the least of a size's samples after changes while it has no other", () => {
        const curve = new StepCostCurve();
        curve.recordAfterChange(5, 30);
        curve.recordAfterChange(5, 12);
        curve.recordAfterChange(5, 20);
        expect(curve.predict(5)).toBe(12);
    });
});

describe("StepCostCurve after a busy spell", () => {
    it("lets steps after a change that cost less than a size's steady median bring that median down", () => {
        const curve = new StepCostCurve();
        // Size 2 measured steadily while the machine was busy; now its steps come only right after a change, and cheaper.
        for (let sample = 0; sample < 15; sample++) curve.record(2, 10);
        for (let sample = 0; sample < 15; sample++) curve.record(1, 1);
        for (let sample = 0; sample < 8; sample++) curve.recordAfterChange(2, 1.5);
        expect(curve.predict(2)).toBeLessThan(2);
        // Dearer steps after a change still measure the rebuild, not the size.
        curve.recordAfterChange(2, 40);
        expect(curve.predict(2)).toBeLessThan(2);
    });
});

describe("StepCostCurve's rebuild estimate", () => {
    it("measures what a change of shape adds and takes it off a size seen only after changes", () => {
        const curve = new StepCostCurve();
        for (const size of [10, 20]) for (let sample = 0; sample < 4; sample++) curve.record(size, size);
        expect(curve.rebuildMilliseconds).toBe(0);
        // Steps right after a change cost 6 more than steady ones of their size.
        for (let change = 0; change < 5; change++) curve.recordAfterChange(change % 2 === 0 ? 10 : 20, (change % 2 === 0 ? 10 : 20) + 6);
        expect(curve.rebuildMilliseconds).toBe(6);
        curve.recordAfterChange(40, 46);
        expect(curve.predict(40)).toBeCloseTo(40, 6);
    });
});
