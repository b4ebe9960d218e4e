import type {ModelBackend} from "../backend/ModelBackend.js";
import type {SamplingOptionsInput} from "../distributions/SamplingOptions.js";
import {generate} from "../engine/generate.js";
import {CorrectionMemory} from "../policies/CorrectionMemory.js";

export interface CorrectionMemoryCalibration {
    memory: CorrectionMemory;
    prompts: number;
    steps: number;
    /** Rejected draft positions recorded as (draft, target) divergences. */
    divergences: number;
}

/**
 * Seed 004 §4.2, phase 1 (prior calibration): standard speculative decoding over unlabelled text,
 * recording every (draft token, verified target token) divergence, with no parameter updates.
 * Implemented as the `calibrated` policy with an unreachable frequency threshold — it never rescues,
 * so decoding is exactly `strict` (lossless), while its online update fills the memory. The memory
 * can start from an earlier file (`initial`) to extend a calibration. `stop` ends each generation
 * where the traffic's answers end: without it the pass records what the two models invent after an
 * answer (on the family the commonest pair was "p"→"q": the next document's "Repeat" drafted where the target began "Request").
 */
export async function buildCorrectionMemory(
    target: ModelBackend,
    draft: ModelBackend,
    prompts: readonly string[],
    options: {gamma?: number; sampling?: SamplingOptionsInput; maxTokens?: number; stop?: readonly string[]; seed?: number; initial?: CorrectionMemory} = {}
): Promise<CorrectionMemoryCalibration> {
    const memory = options.initial ?? new CorrectionMemory(target.vocabularySize, target.vocabularyIdentity());
    let steps = 0;
    let divergences = 0;
    for (const [index, prompt] of prompts.entries()) {
        const before = totalCount(memory);
        const result = await generate(target, draft, prompt, {
            policy: {kind: "calibrated", frequencyThreshold: Number.MAX_SAFE_INTEGER, onlineUpdate: true},
            gamma: options.gamma ?? 6,
            sampling: options.sampling ?? {temperature: 0},
            maxTokens: options.maxTokens ?? 128,
            stop: options.stop,
            seed: (options.seed ?? 0) + index
        }, {correctionMemory: memory});
        steps += result.telemetry.steps;
        divergences += totalCount(memory) - before;
    }
    return {memory, prompts: prompts.length, steps, divergences};
}

function totalCount(memory: CorrectionMemory): number {
    return memory.entries().reduce((sum, [, , count]) => sum + count, 0);
}
