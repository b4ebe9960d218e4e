import type {Random} from "../../random/Random.js";
import {arithmeticProblem} from "./arithmeticProblem.js";
import {copyProblem} from "./copyProblem.js";
import type {CorpusProblem} from "./CorpusProblem.js";
import type {CorpusLanguage, CorpusTask} from "./CorpusSample.js";
import {multipleChoiceProblem} from "./multipleChoiceProblem.js";
import {safetyProblem} from "./safetyProblem.js";
import {storyProblem} from "./storyProblem.js";
import {toolCallProblem} from "./toolCallProblem.js";

export interface CorpusTaskGenerator {
    /** The languages every problem of this task is rendered in. */
    readonly languages: readonly CorpusLanguage[];
    readonly generate: (random: Random) => CorpusProblem;
}

/**
 * Arithmetic and tool calls are parallel in four languages (Disparate Impacts paper's setting: same content,
 * different byte lengths and scripts); the other tasks are English, as most small-model data is.
 */
export const corpusTaskGenerators: Record<CorpusTask, CorpusTaskGenerator> = {
    arithmetic: {languages: ["en", "es", "de", "ja"], generate: arithmeticProblem},
    "multiple-choice": {languages: ["en"], generate: multipleChoiceProblem},
    "tool-call": {languages: ["en", "es", "de", "ja"], generate: toolCallProblem},
    safety: {languages: ["en"], generate: safetyProblem},
    story: {languages: ["en"], generate: storyProblem},
    copy: {languages: ["en"], generate: copyProblem}
};
