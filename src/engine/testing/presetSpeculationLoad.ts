import {MeasuredStepTimes} from "../MeasuredStepTimes.js";
import {settledSamples, SpeculationLoad} from "../SpeculationLoad.js";
import {StepCostCurve} from "../StepCostCurve.js";

/** A step cost curve that keeps what it was given and ignores measurements. */
class PresetCostCurve extends StepCostCurve {
    private frozen = false;

    public freeze(): this {
        this.frozen = true;
        return this;
    }

    public override record(tokens: number, milliseconds: number): void {
        if (!this.frozen) super.record(tokens, milliseconds);
    }

    public override recordAfterChange(tokens: number, milliseconds: number): void {
        if (!this.frozen) super.recordAfterChange(tokens, milliseconds);
    }
}

/**
 * A SpeculationLoad whose costs are preset, not measured: a target step of n tokens costs
 * 1 + slope·(n − 1), drafting and overhead nothing. Draft lengths chosen on it depend on acceptance
 * alone (no step is timed), so tests of `draftLength: "auto"` are independent of the machine's
 * timing. Acceptance is still learnt, so the prior moves from generation to generation.
 * `stepTimes`: one that times steps (on a test clock), to test the measured step times on top of
 * the preset model.
 */
export function presetSpeculationLoad(slope: number, stepTimes = new MeasuredStepTimes(false)): SpeculationLoad {
    const curve = new PresetCostCurve();
    for (let sample = 0; sample < settledSamples; sample++) {
        curve.record(1, 1);
        curve.record(65, 1 + 64 * slope);
    }
    const load = new SpeculationLoad(curve.freeze(), stepTimes);
    load.recordDraft = () => undefined;
    load.recordOverhead = () => undefined;
    return load;
}
