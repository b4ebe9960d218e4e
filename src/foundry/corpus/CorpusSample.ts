/** The kinds of document the synthetic corpus contains. */
/** "copy" (a drill: repeat random content) is last, so adding it left every other task's problem stream unchanged. */
export const corpusTasks = ["arithmetic", "multiple-choice", "tool-call", "safety", "story", "copy"] as const;
export type CorpusTask = (typeof corpusTasks)[number];

/** English, Spanish, German and Japanese: three Latin-script languages of different byte lengths and one non-Latin script. */
export const corpusLanguages = ["en", "es", "de", "ja"] as const;
export type CorpusLanguage = (typeof corpusLanguages)[number];

export const corpusSplits = ["train", "validation", "test"] as const;
export type CorpusSplit = (typeof corpusSplits)[number];

/** One document of the corpus: `text` is `prompt + answer`, the form a language model trains on. */
export interface CorpusSample {
    /** `${problemId}-${language}`: unique within a corpus. */
    readonly id: string;
    /** Shared by every language rendering of one underlying problem. */
    readonly problemId: string;
    readonly task: CorpusTask;
    readonly language: CorpusLanguage;
    readonly split: CorpusSplit;
    readonly text: string;
    readonly prompt: string;
    readonly answer: string;
    /** What a scorer compares a completion against: the final number, the choice letter, the JSON call, the expected reply. */
    readonly reference: string;
}
