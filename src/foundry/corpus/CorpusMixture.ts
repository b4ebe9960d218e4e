import type {CorpusLanguage, CorpusTask} from "./CorpusSample.js";

/**
 * Relative weights of tasks and languages in the train/validation documents (they need not sum to 1).
 * Language weights apply within each task among the languages it is rendered in, so "90% English"
 * means 90% of the multilingual tasks' documents; English-only tasks are English whatever the weights.
 * The test split ignores the mixture: every test problem is rendered in all its task's languages.
 */
export interface CorpusMixture {
    readonly tasks: Readonly<Record<CorpusTask, number>>;
    readonly languages: Readonly<Record<CorpusLanguage, number>>;
}

const defaultTaskWeights: Record<CorpusTask, number> = {
    "arithmetic": 0.35,
    "multiple-choice": 0.15,
    "tool-call": 0.25,
    "safety": 0.1,
    "story": 0.15,
    // Copy drills are for the copy-drill mixture (the copy probe, models/README.md); the shipped family saw none.
    "copy": 0
};

/** Named mixtures: "balanced" for the target and the draft, "english-heavy" for the skewed draft, "copy-drill" for copy warm-ups. */
export const corpusMixturePresets: Readonly<Record<string, CorpusMixture>> = {
    "balanced": {tasks: defaultTaskWeights, languages: {en: 0.25, es: 0.25, de: 0.25, ja: 0.25}},
    "english-heavy": {tasks: defaultTaskWeights, languages: {en: 0.9, es: 0.1 / 3, de: 0.1 / 3, ja: 0.1 / 3}},
    "copy-drill": {
        tasks: {"arithmetic": 0, "multiple-choice": 0, "tool-call": 0, "safety": 0, "story": 0, "copy": 1},
        languages: {en: 1, es: 0, de: 0, ja: 0}
    }
};
