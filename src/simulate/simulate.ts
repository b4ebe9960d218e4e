import {InvalidInputError} from "../errors.js";
import type {PolicyResources} from "../policies/createPolicy.js";
import {simulateStep, type SimulationReport} from "./simulateStep.js";
import {parseStepInput, type StepInput} from "./StepInput.js";

/** How many times `simulate` runs the step, and from which seed. */
export interface SimulateOptions {
    /** Simulated steps; default 100,000. */
    readonly samples?: number;
    /** Seed of the generator (an integer in [0, 2^53)); default 0. The same seed gives the same report. */
    readonly seed?: number;
    /** Resources the policy needs (the `calibrated` policy's correction memory). */
    readonly resources?: PolicyResources;
}

/**
 * Runs one speculative verification step `samples` times on given target and draft distributions
 * (a step file's content, as `specgate simulate --input` reads it: `policy`, `targetProbs` or
 * `targetLogits`, `draftProbs` or `draftLogits`, `draftTokens`) and reports acceptance per
 * position, the emitted-length histogram and the first token's distance from the target row.
 * Throws InvalidInputError naming the field when the step is malformed.
 */
export function simulate(step: unknown, options: SimulateOptions = {}): SimulationReport {
    const samples = options.samples ?? 100_000;
    const seed = options.seed ?? 0;
    if (!Number.isInteger(samples) || samples < 1) throw new InvalidInputError(`must be a positive integer, got ${samples}`, "samples");
    if (!Number.isSafeInteger(seed) || seed < 0) throw new InvalidInputError(`must be an integer in [0, 2^53), got ${seed}`, "seed");
    const input: StepInput = parseStepInput(step);
    return simulateStep(input, {samples, seed, ...(options.resources !== undefined ? {resources: options.resources} : {})});
}
