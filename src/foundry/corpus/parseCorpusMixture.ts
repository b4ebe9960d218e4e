import {InvalidInputError} from "../../errors.js";
import type {CorpusMixture} from "./CorpusMixture.js";
import {corpusMixturePresets} from "./CorpusMixture.js";
import {corpusLanguages, corpusTasks} from "./CorpusSample.js";
import {corpusTaskGenerators} from "./corpusTaskGenerators.js";

/**
 * A preset name ("balanced", "english-heavy") or JSON `{"tasks": {...}, "languages": {...}, "surfaceVariation"?: p}`.
 * In JSON, a task or language left out has weight 0; weights are finite and ≥ 0; some task must
 * have weight, and every weighted task needs a weighted language to be rendered in.
 */
export function parseCorpusMixture(text: string, field = "mixture"): CorpusMixture {
    const preset = corpusMixturePresets[text];
    if (preset !== undefined) return preset;
    if (!text.trimStart().startsWith("{"))
        throw new InvalidInputError(`expected ${Object.keys(corpusMixturePresets).join(", ")} or a JSON object, got "${text}"`, field);
    let parsed: unknown;
    try {
        parsed = JSON.parse(text);
    } catch (error) {
        throw new InvalidInputError(`not valid JSON: ${(error as Error).message}`, field);
    }
    if (!isRecord(parsed)) throw new InvalidInputError("expected a JSON object", field);
    for (const key of Object.keys(parsed))
        if (key !== "tasks" && key !== "languages" && key !== "surfaceVariation")
            throw new InvalidInputError(`unknown key "${key}" (expected "tasks", "languages" and optionally "surfaceVariation")`, field);
    const mixture: CorpusMixture = {
        tasks: weights(parsed.tasks, corpusTasks, `${field}.tasks`),
        languages: weights(parsed.languages, corpusLanguages, `${field}.languages`),
        ...(parsed.surfaceVariation === undefined ? {} : {surfaceVariation: parsed.surfaceVariation as number})
    };
    checkCorpusMixture(mixture, field);
    return mixture;
}

/** Throws unless some task has weight, each weighted task has a weighted language and surfaceVariation is in [0, 1]. */
export function checkCorpusMixture(mixture: CorpusMixture, field = "mixture"): void {
    const variation = mixture.surfaceVariation;
    if (variation !== undefined && (typeof variation !== "number" || !(variation >= 0 && variation <= 1)))
        throw new InvalidInputError(`expected a number in [0, 1], got ${JSON.stringify(variation)}`, `${field}.surfaceVariation`);
    const weighted = corpusTasks.filter((task) => mixture.tasks[task] > 0);
    if (weighted.length === 0) throw new InvalidInputError("at least one task needs a positive weight", `${field}.tasks`);
    for (const task of weighted)
        if (!corpusTaskGenerators[task].languages.some((language) => mixture.languages[language] > 0))
            throw new InvalidInputError(
                `task ${task} is rendered in ${corpusTaskGenerators[task].languages.join(", ")}, none of which has a positive weight`,
                `${field}.languages`
            );
}

function weights<K extends string>(value: unknown, keys: readonly K[], field: string): Record<K, number> {
    if (value === undefined) throw new InvalidInputError(`missing; expected an object with weights for ${keys.join(", ")}`, field);
    if (!isRecord(value)) throw new InvalidInputError("expected an object of weights", field);
    const result = Object.fromEntries(keys.map((key) => [key, 0])) as Record<K, number>;
    for (const [key, weight] of Object.entries(value)) {
        if (!(keys as readonly string[]).includes(key))
            throw new InvalidInputError(`unknown name (expected one of ${keys.join(", ")})`, `${field}.${key}`);
        if (typeof weight !== "number" || !Number.isFinite(weight) || weight < 0)
            throw new InvalidInputError(`expected a finite number >= 0, got ${JSON.stringify(weight)}`, `${field}.${key}`);
        result[key as K] = weight;
    }
    return result;
}

function isRecord(value: unknown): value is Record<string, unknown> {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
