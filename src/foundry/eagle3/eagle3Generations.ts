import {readFile} from "node:fs/promises";
import {isDeepStrictEqual} from "node:util";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidInputError} from "../../errors.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import {generateCorpus} from "../corpus/generateCorpus.js";
import {collectTargetGenerations, type TargetGeneration} from "./collectTargetGenerations.js";

/** Where the head's training sequences come from: prompts of a `specgate corpus` train split, continued by the target. */
export interface Eagle3DataRecipe {
    /** The corpus generator's seed and mixture preset (the family's: 7, balanced). */
    readonly corpusSeed: number;
    readonly mixture: string;
    /** Training-split prompts used (the first ones in the corpus's shuffled order). */
    readonly prompts: number;
    readonly temperatures: readonly number[];
    readonly maxTokens: number;
    readonly seed: number;
}

const format = "specgate-eagle3-generations/1";

/** The corpus's first `count` training prompts; the test split (which the family prompts come from) is never used. */
export function eagle3TrainingPrompts(recipe: Eagle3DataRecipe): string[] {
    const mixture = corpusMixturePresets[recipe.mixture];
    if (mixture === undefined)
        throw new InvalidInputError(
            `unknown mixture "${recipe.mixture}"; one of ${Object.keys(corpusMixturePresets).join(", ")}`,
            "mixture"
        );
    const corpus = generateCorpus({
        seed: recipe.corpusSeed,
        samples: Math.ceil(recipe.prompts * 1.2) + 50,
        mixture,
        testProblemsPerTask: 50
    });
    if (corpus.train.length < recipe.prompts)
        throw new InvalidInputError(`the corpus has ${corpus.train.length} training prompts, fewer than ${recipe.prompts}`, "prompts");
    return corpus.train.slice(0, recipe.prompts).map((sample) => sample.prompt);
}

/**
 * The target's generations for `recipe`, read from `cachePath` when it holds this recipe's (a JSON
 * header line, then one generation per line), else generated and written there.
 */
export async function eagle3Generations(
    target: () => Promise<ModelBackend>,
    recipe: Eagle3DataRecipe,
    cachePath: string,
    onProgress?: (done: number, total: number) => void
): Promise<{generations: TargetGeneration[]; seconds: number; cached: boolean}> {
    const cached = await readCached(cachePath, recipe);
    if (cached !== undefined) return {generations: cached, seconds: 0, cached: true};
    const started = performance.now();
    const backend = await target();
    try {
        const generations = await collectTargetGenerations(backend, eagle3TrainingPrompts(recipe), {
            temperatures: recipe.temperatures,
            maxTokens: recipe.maxTokens,
            seed: recipe.seed,
            onProgress
        });
        const lines = [JSON.stringify({format, recipe}), ...generations.map((generation) => JSON.stringify(generation))];
        await writeFileAtomic(cachePath, `${lines.join("\n")}\n`);
        return {generations, seconds: (performance.now() - started) / 1000, cached: false};
    } finally {
        await backend.dispose();
    }
}

async function readCached(path: string, recipe: Eagle3DataRecipe): Promise<TargetGeneration[] | undefined> {
    let text: string;
    try {
        text = await readFile(path, "utf8");
    } catch {
        return undefined;
    }
    const lines = text.split("\n").filter((line) => line !== "");
    try {
        const header = JSON.parse(lines[0]) as {format?: string; recipe?: unknown};
        if (header.format !== format || !isDeepStrictEqual(header.recipe, JSON.parse(JSON.stringify(recipe)))) return undefined;
        return lines.slice(1).map((line) => JSON.parse(line) as TargetGeneration);
    } catch {
        return undefined;
    }
}
