import type {ModelBackend} from "../backend/ModelBackend.js";
import type {SamplingOptionsInput} from "../distributions/SamplingOptions.js";
import {generate} from "../engine/generate.js";
import {PromptExceedsContextError} from "../errors.js";
import {CorrectionMemory} from "../policies/CorrectionMemory.js";

export interface CorrectionMemoryCalibration {
    memory: CorrectionMemory;
    /** Prompts decoded. */
    prompts: number;
    /** 0-based positions of prompts skipped because they are longer than the context. */
    skipped: number[];
    steps: number;
    /** Rejected draft positions recorded as (draft, target) divergences. */
    divergences: number;
}

/**
 * The Calibrated SD paper §4.2, phase 1 (prior calibration): standard speculative decoding over unlabelled text,
 * recording every (draft token, verified target token) divergence, with no parameter updates.
 * Implemented as the `calibrated` policy with an unreachable frequency threshold — it never rescues,
 * so decoding is exactly `strict` (lossless), while its online update fills the memory. The memory
 * can start from an earlier file (`initial`) to extend a calibration. A prompt longer than the
 * context is skipped (and listed), not the end of the pass. `stop` ends each generation
 * where the traffic's answers end: without it the pass records what the two models invent after an
 * answer (on the family the commonest pair was "p"→"q": the next document's "Repeat" drafted where the target began "Request").
 */
export async function buildCorrectionMemory(
    target: ModelBackend,
    draft: ModelBackend,
    prompts: readonly string[],
    options: {
        gamma?: number;
        sampling?: SamplingOptionsInput;
        maxTokens?: number;
        stop?: readonly string[];
        seed?: number;
        initial?: CorrectionMemory;
    } = {}
): Promise<CorrectionMemoryCalibration> {
    const memory = options.initial ?? new CorrectionMemory(target.vocabularySize, target.vocabularyIdentity());
    let steps = 0;
    let divergences = 0;
    const skipped: number[] = [];
    for (const [index, prompt] of prompts.entries()) {
        const before = totalCount(memory);
        let result: Awaited<ReturnType<typeof generate>>;
        try {
            result = await generate(
                target,
                draft,
                prompt,
                {
                    policy: {kind: "calibrated", frequencyThreshold: Number.MAX_SAFE_INTEGER, onlineUpdate: true},
                    gamma: options.gamma ?? 6,
                    sampling: options.sampling ?? {temperature: 0},
                    maxTokens: options.maxTokens ?? 128,
                    stop: options.stop,
                    seed: (options.seed ?? 0) + index
                },
                {correctionMemory: memory}
            );
        } catch (error) {
            if (!(error instanceof PromptExceedsContextError)) throw error;
            skipped.push(index);
            continue;
        }
        steps += result.telemetry.steps;
        divergences += totalCount(memory) - before;
    }
    if (skipped.length === prompts.length && prompts.length > 0) {
        const shortest = Math.min(...prompts.map((prompt) => target.tokenize(prompt).length));
        throw new PromptExceedsContextError(
            shortest,
            target.contextSize,
            "prompts",
            `every prompt exceeds the context: the shortest has ${shortest} tokens; the context holds ${target.contextSize}`
        );
    }
    return {memory, prompts: prompts.length - skipped.length, skipped, steps, divergences};
}

function totalCount(memory: CorrectionMemory): number {
    return memory.entries().reduce((sum, [, , count]) => sum + count, 0);
}
