import {resolve} from "node:path";
import {InvalidInputError} from "../errors.js";
import {CorrectionMemory} from "../policies/CorrectionMemory.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";
import {loadCorrectionMemory} from "./correctionMemoryFile.js";

/**
 * The correction memory a `calibrated` policy starts from: its `memory` file (resolved against
 * `baseDirectory`, checked against the vocabulary) or an empty one; undefined for other policies.
 * Every caller (simulate, generate, bench, serve) goes through here, so a memory file is never
 * silently ignored.
 */
export async function resolveCorrectionMemory(
    policy: PolicyConfig,
    vocabulary: {size: number; identity?: string},
    baseDirectory = process.cwd()
): Promise<CorrectionMemory | undefined> {
    if (policy.kind !== "calibrated") return undefined;
    if (policy.memory == null) return new CorrectionMemory(vocabulary.size, vocabulary.identity);
    const memory = await loadCorrectionMemory(resolve(baseDirectory, policy.memory), vocabulary.identity);
    if (memory.vocabularySize !== vocabulary.size)
        throw new InvalidInputError(
            `memory is for a vocabulary of ${memory.vocabularySize}, the model has ${vocabulary.size}`,
            "policy.memory"
        );
    return memory;
}
