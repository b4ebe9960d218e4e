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
    /**
     * Probability in [0, 1] that each surface dimension of a train/validation arithmetic or tool-call
     * answer takes its alternative, equivalent form (surfaceVariant); absent or 0: one canonical form.
     * The test split is always canonical.
     */
    readonly surfaceVariation?: number;
}

const defaultTaskWeights: Record<CorpusTask, number> = {
    arithmetic: 0.35,
    "multiple-choice": 0.15,
    "tool-call": 0.25,
    safety: 0.1,
    story: 0.15,
    // Copy drills keep the copying mechanism the target's warm-up builds (models/README.md): without
    // them in the later stages the model never learned to copy a request's numbers.
    copy: 0.3
};

const balanced: CorpusMixture = {tasks: defaultTaskWeights, languages: {en: 0.25, es: 0.25, de: 0.25, ja: 0.25}};
// 90% English and Japanese almost absent, like an English-centric drafter's data: with the other
// 10% spread evenly the 0.11M draft learnt every language's templates and its gap stayed < 4 points.
const englishHeavy: CorpusMixture = {tasks: defaultTaskWeights, languages: {en: 0.9, es: 0.049, de: 0.049, ja: 0.002}};
const toolHeavy: CorpusMixture = {
    tasks: {arithmetic: 0.35, "multiple-choice": 0.05, "tool-call": 1.2, safety: 0.05, story: 0.05, copy: 0.3},
    languages: {en: 0.25, es: 0.25, de: 0.25, ja: 0.25}
};

/**
 * Named mixtures: "balanced" for the target and the draft, "english-heavy" for the skewed draft,
 * "copy-drill" for copy warm-ups, "tool-focus" and "tool-heavy" for the target's last stages (tool
 * calls weighted up: their string arguments are the last thing a small model learns to copy), and
 * "-surface" mixtures whose answers vary in form (surfaceVariation 0.5) for target-surface and draft-surface,
 * and "arithmetic-focus" for draft-shallow.
 */
export const corpusMixturePresets: Readonly<Record<string, CorpusMixture>> = {
    balanced: balanced,
    "english-heavy": englishHeavy,
    "copy-drill": {
        tasks: {arithmetic: 0, "multiple-choice": 0, "tool-call": 0, safety: 0, story: 0, copy: 1},
        languages: {en: 1, es: 0, de: 0, ja: 0}
    },
    "tool-focus": {
        tasks: {arithmetic: 0.35, "multiple-choice": 0.05, "tool-call": 0.6, safety: 0.05, story: 0.05, copy: 0.3},
        languages: {en: 0.25, es: 0.25, de: 0.25, ja: 0.25}
    },
    "tool-heavy": toolHeavy,
    // Mixtures with every surface dimension a coin flip (surfaceVariant): answers with several
    // equivalent spellings, the neutral divergence lossy verification is meant to exploit.
    "balanced-surface": {...balanced, surfaceVariation: 0.5},
    "tool-heavy-surface": {...toolHeavy, surfaceVariation: 0.5},
    // Arithmetic weighted up beside the tool calls: a new written form cost the target sums it had known.
    "arithmetic-tool-surface": {tasks: {...toolHeavy.tasks, arithmetic: 0.8}, languages: toolHeavy.languages, surfaceVariation: 0.5},
    // Half the documents sums, English weighted up, canonical forms: a smaller draft's capacity spent
    // on what the tune battery asks of it (English sums and tool calls).
    "arithmetic-focus": {
        tasks: {arithmetic: 1.2, "multiple-choice": 0.05, "tool-call": 0.6, safety: 0.05, story: 0.05, copy: 0.3},
        languages: {en: 0.4, es: 0.2, de: 0.2, ja: 0.2}
    }
};
