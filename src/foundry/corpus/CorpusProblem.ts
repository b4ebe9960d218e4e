import type {CorpusLanguage} from "./CorpusSample.js";

/** One language's rendering of a problem. */
export interface ProblemRendering {
    readonly prompt: string;
    readonly answer: string;
    readonly reference: string;
}

/** An underlying problem, before a language and a split are chosen for it. */
export interface CorpusProblem {
    /**
     * Canonical content, the same in every language. Splits are assigned by a hash of it, so equal
     * problems (and all renderings of one problem) always land in the same split.
     */
    readonly key: string;
    readonly renderings: Partial<Record<CorpusLanguage, ProblemRendering>>;
}
