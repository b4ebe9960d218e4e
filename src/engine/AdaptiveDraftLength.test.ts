import {describe, expect, it} from "vitest";
import {AdaptiveDraftLength} from "./AdaptiveDraftLength.js";
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

describe("AdaptiveDraftLength", () => {
    it("bootstraps the cost curve with a step without a draft and one of the initial length", () => {
        const load = new SpeculationLoad();
        const auto = new AdaptiveDraftLength(load, options);
        expect(auto.next(4)).toBe(0);
        auto.afterTarget(1, 10, undefined);
        expect(auto.next(4)).toBe(4);
        auto.afterTarget(5, 11, undefined);
        expect(load.stepCost.sizes).toBe(2);
    });

    it("drafts long while every draft is accepted and stops drafting when none is, probing at growing intervals", () => {
        const load = presetSpeculationLoad(0.3);
        const auto = new AdaptiveDraftLength(load, options);
        const accepting = run(auto, 30, (length) => length);
        expect(accepting.slice(-5)).toEqual([8, 8, 8, 8, 8]);
        const rejecting = run(auto, 300, () => 0);
        expect(rejecting.slice(-100).filter((length) => length === 0).length).toBeGreaterThan(95);
        // Probes keep acceptance measured: single tokens, further apart each time.
        const probes = rejecting.flatMap((length, step) => (length === 1 && rejecting[step - 1] === 0 ? [step] : []));
        expect(probes.length).toBeGreaterThanOrEqual(4);
        const gaps = probes.slice(1).map((step, index) => step - probes[index]);
        expect(gaps[gaps.length - 1]).toBeGreaterThan(gaps[0]);
        expect(auto.choice.skipped || auto.choice.probe).toBe(true);
        // Acceptance coming back brings speculation back, through the probes.
        const recovered = run(auto, 400, (length) => length);
        expect(recovered.slice(-5)).toEqual([8, 8, 8, 8, 8]);
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
