import {adamWUpdate} from "../../foundry/training/adamWUpdate.js";
import {clipGradientNorm} from "../../foundry/training/clipGradientNorm.js";
import {learningRateAt} from "../../foundry/training/learningRateAt.js";
import type {Random} from "../../random/Random.js";
import type {DistillationGroup, DistillationSequence} from "./buildDistillationSet.js";
import {fairnessWeightedGradient} from "./fairnessWeightedGradient.js";
import type {MitigationState} from "./MitigationState.js";

export interface MitigationStepRecord {
    /** 1-based. */
    readonly step: number;
    /** The groups trained this step (indices into the distillation set): all, or groupsPerStep drawn at random. */
    readonly groups: number[];
    /** D̂_T of each trained group's mini-batch before the update, in the order of `groups`. */
    readonly divergences: number[];
    readonly weights: number[];
    /** Û on this step's mini-batches. */
    readonly objective: number;
    readonly gradientNorm: number;
    readonly learningRate: number;
    /** Tokens run forward and backward this step (prompts included). */
    readonly tokens: number;
}

/**
 * One step of Algorithm 1: per group `gradientAccumulation` mini-batches (one unless accumulating),
 * D̂_T and ∇D̂_T with the target's rows as soft targets, the method's weights, the combined gradient
 * clipped, one AdamW update of the drafter.
 */
export function mitigationStep(state: MitigationState, allGroups: readonly DistillationGroup[]): MitigationStepRecord {
    const chosen = chooseGroups(state.random, allGroups.length, state.options.groupsPerStep);
    const groups = chosen.map((index) => allGroups[index]);
    const groupBatches = groups.map((group) =>
        Array.from({length: state.options.gradientAccumulation}, () =>
            sampleGroupBatch(state.random, group.sequences, state.options.batchPerTask)
        )
    );
    const batches = groupBatches.flat();
    const weighted = fairnessWeightedGradient(state.config, state.weights, state.rope, groupBatches, state.options.method);
    const gradientNorm = clipGradientNorm(weighted.gradients, state.schedule.gradientClip);
    const learningRate = learningRateAt(state.step, state.schedule);
    state.step++;
    adamWUpdate(
        state.weights,
        weighted.gradients,
        state.moments,
        state.step,
        learningRate,
        state.schedule,
        (name) => !name.includes("_norm.")
    );
    return {
        step: state.step,
        groups: chosen,
        divergences: weighted.divergences,
        weights: weighted.weights,
        objective: weighted.objective,
        gradientNorm,
        learningRate,
        tokens: batches.reduce((sum, batch) => sum + batch.reduce((inner, sequence) => inner + sequence.tokens.length - 1, 0), 0)
    };
}

/**
 * The groups of one step, in distillation-set order: every group when groupsPerStep is null or at
 * least the number of groups, else that many drawn uniformly without replacement (at least two, so
 * s-CDF has a best group to measure the others against).
 */
export function chooseGroups(random: Random, groupCount: number, groupsPerStep: number | null): number[] {
    const all = Array.from({length: groupCount}, (_value, index) => index);
    if (groupsPerStep === null || groupsPerStep >= groupCount) return all;
    const size = Math.max(2, groupsPerStep);
    for (let i = 0; i < size; i++) {
        const j = i + Math.floor(random.nextDouble() * (groupCount - i));
        [all[i], all[j]] = [all[j], all[i]];
    }
    return all.slice(0, size).sort((left, right) => left - right);
}

/** `size` distinct sequences drawn uniformly (a partial Fisher–Yates shuffle), or all of a smaller group. */
export function sampleGroupBatch(random: Random, sequences: readonly DistillationSequence[], size: number): DistillationSequence[] {
    if (sequences.length <= size) return [...sequences];
    const order = sequences.map((_sequence, index) => index);
    for (let i = 0; i < size; i++) {
        const j = i + Math.floor(random.nextDouble() * (order.length - i));
        [order[i], order[j]] = [order[j], order[i]];
    }
    return order.slice(0, size).map((index) => sequences[index]);
}
