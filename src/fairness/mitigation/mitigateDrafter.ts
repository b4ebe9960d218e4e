import {InvalidInputError} from "../../errors.js";
import {unfairness} from "../unfairness.js";
import type {DistillationGroup} from "./buildDistillationSet.js";
import {groupDivergences} from "./groupDivergences.js";
import {createMitigationState, type MitigationOptions} from "./MitigationState.js";
import {mitigationStep, type MitigationStepRecord} from "./mitigationStep.js";
import {readTrainableDrafter} from "./readTrainableDrafter.js";
import {writeDrafterGguf} from "./writeDrafterGguf.js";

export interface DrafterMitigationInput {
    readonly drafterPath: string;
    readonly outputPath: string;
    /** Vocabulary size of the target the rows came from. */
    readonly targetVocabularySize: number;
    readonly groups: readonly DistillationGroup[];
    readonly options: MitigationOptions;
    readonly onStep?: (record: MitigationStepRecord) => void;
}

export interface DistillationGroupSummary {
    readonly name: string;
    readonly sequences: number;
    readonly positions: number;
    /** D_T over the whole distillation set before and after the run. */
    readonly divergenceBefore: number;
    readonly divergenceAfter: number;
}

export interface DrafterMitigationResult {
    readonly options: MitigationOptions;
    readonly outputPath: string;
    readonly groups: readonly DistillationGroupSummary[];
    /** U = (1/m) Σ (D_T − D_min)² over the whole distillation set, before and after. */
    readonly objectiveBefore: number;
    readonly objectiveAfter: number;
    readonly steps: readonly MitigationStepRecord[];
    /** Training time alone (no full-set evaluation, no writing). */
    readonly trainingSeconds: number;
    readonly stepsPerSecond: number;
    /** Tokens run forward and backward per second. */
    readonly tokensPerSecond: number;
}

/**
 * Corrective fine-tuning of a drafter file: reads it into the reference model, runs the method's
 * steps on the distillation set (built once from the frozen target), measures D_T per group on the
 * whole set before and after, and writes the new drafter as an F32 GGUF with the input's metadata.
 */
export async function mitigateDrafter(input: DrafterMitigationInput): Promise<DrafterMitigationResult> {
    if (input.groups.length < 2) throw new InvalidInputError(`needs at least two groups, got ${input.groups.length}`, "groups");
    const {config, weights} = readTrainableDrafter(input.drafterPath, input.targetVocabularySize);
    const state = createMitigationState(config, weights, input.options);
    const sequences = input.groups.map((group) => group.sequences);
    const before = groupDivergences(config, state.weights, state.rope, sequences);
    const records: MitigationStepRecord[] = [];
    const start = performance.now();
    for (let step = 0; step < input.options.steps; step++) {
        const record = mitigationStep(state, input.groups);
        records.push(record);
        input.onStep?.(record);
    }
    const trainingSeconds = (performance.now() - start) / 1000;
    const after = groupDivergences(config, state.weights, state.rope, sequences);
    await writeDrafterGguf(input.drafterPath, input.outputPath, config, state.weights);
    const tokens = records.reduce((sum, record) => sum + record.tokens, 0);
    return {
        options: input.options,
        outputPath: input.outputPath,
        groups: input.groups.map((group, index) => ({
            name: group.name,
            sequences: group.sequences.length,
            positions: group.sequences.reduce((sum, sequence) => sum + sequence.positions, 0),
            divergenceBefore: before[index],
            divergenceAfter: after[index]
        })),
        objectiveBefore: unfairness(before),
        objectiveAfter: unfairness(after),
        steps: records,
        trainingSeconds,
        stepsPerSecond: trainingSeconds > 0 ? records.length / trainingSeconds : 0,
        tokensPerSecond: trainingSeconds > 0 ? tokens / trainingSeconds : 0
    };
}
