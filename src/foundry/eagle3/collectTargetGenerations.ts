import {withBos} from "../../backend/addsBos.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {generate} from "../../engine/generate.js";

/** One sequence the target wrote: the prompt's tokens (BOS first) followed by the target's continuation. */
export interface TargetGeneration {
    readonly tokens: number[];
    readonly promptTokens: number;
    readonly temperature: number;
}

export interface TargetGenerationOptions {
    /** Sampling temperatures; every prompt is continued once at each (0: greedy). */
    readonly temperatures: readonly number[];
    /** Most tokens generated per continuation; the context also caps it. */
    readonly maxTokens: number;
    /** Seed of the sampled continuations (prompt i at temperature j uses seed + i·temperatures + j). */
    readonly seed: number;
    readonly onProgress?: (done: number, total: number) => void;
}

/**
 * The target's own continuations of `prompts`, as EAGLE-3 trains on them: the head learns to predict
 * what the target will say, not what a corpus says. Generation does not stop at a document boundary,
 * because drafting does not either: a long generation runs on into the next document.
 */
export async function collectTargetGenerations(
    target: ModelBackend,
    prompts: readonly string[],
    options: TargetGenerationOptions
): Promise<TargetGeneration[]> {
    const generations: TargetGeneration[] = [];
    const total = prompts.length * options.temperatures.length;
    for (const [index, prompt] of prompts.entries()) {
        const promptTokens = withBos(target, target.tokenize(prompt));
        const room = target.contextSize - promptTokens.length - 1;
        if (room < 2) continue;
        for (const [which, temperature] of options.temperatures.entries()) {
            const result = await generate(target, undefined, promptTokens, {
                addBos: false,
                maxTokens: Math.min(options.maxTokens, room),
                sampling: {temperature},
                seed: options.seed + index * options.temperatures.length + which
            });
            generations.push({tokens: [...promptTokens, ...result.tokens], promptTokens: promptTokens.length, temperature});
            options.onProgress?.(generations.length, total);
        }
    }
    return generations;
}
