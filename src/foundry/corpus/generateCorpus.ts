import {InvalidInputError} from "../../errors.js";
import {Random} from "../../random/Random.js";
import {apportion} from "./apportion.js";
import type {CorpusMixture} from "./CorpusMixture.js";
import type {CorpusProblem} from "./CorpusProblem.js";
import {type CorpusLanguage, type CorpusSample, type CorpusSplit, type CorpusTask, corpusTasks} from "./CorpusSample.js";
import {corpusTaskGenerators} from "./corpusTaskGenerators.js";
import {derivedSeed} from "./derivedSeed.js";
import {checkCorpusMixture} from "./parseCorpusMixture.js";
import {splitOfProblem} from "./splitOfProblem.js";
import {surfaceVariant} from "./surfaceVariant.js";

export interface CorpusOptions {
    readonly seed: number;
    /** Train + validation documents; the test split comes on top. */
    readonly samples: number;
    readonly mixture: CorpusMixture;
    /** Distinct test problems per task, each rendered in every language of its task. Default 50. */
    readonly testProblemsPerTask?: number;
}

export type Corpus = Record<CorpusSplit, CorpusSample[]>;

/** After the train/validation quotas are met, give up looking for new distinct test problems after this many misses. */
const testSearchPatience = 20_000;

/**
 * The synthetic corpus for a seed and a mixture.
 *
 * Each task draws problems from its own stream (seeded by seed and task name), so problem `i` of a
 * task is the same whatever the mixture or sample count. A problem's split is a hash of its content
 * (splitOfProblem), so all its renderings share a split and the splits are disjoint. Train/validation
 * documents fill per-task × per-language quotas (mixture weights, apportioned exactly) in problem
 * order, which keeps the languages parallel: a less weighted language renders a prefix of the same
 * problems. The test split holds the first `testProblemsPerTask` distinct test problems of each task
 * in all its languages, independent of the mixture, so a whole model family shares one test set.
 * Train and validation are shuffled (seeded); test stays in problem order. With surfaceVariation,
 * train/validation answers vary in form (surfaceVariant) and the test split stays canonical.
 */
export function generateCorpus(options: CorpusOptions): Corpus {
    const testProblems = options.testProblemsPerTask ?? 50;
    if (!Number.isSafeInteger(options.seed) || options.seed < 0)
        throw new InvalidInputError(`must be an integer in [0, 2^53), got ${options.seed}`, "seed");
    if (!Number.isSafeInteger(options.samples) || options.samples < 0)
        throw new InvalidInputError(`must be a non-negative integer, got ${options.samples}`, "samples");
    if (!Number.isSafeInteger(testProblems) || testProblems < 0)
        throw new InvalidInputError(`must be a non-negative integer, got ${testProblems}`, "testProblemsPerTask");
    // A manifest written before a task existed (evaluateModel regenerates corpora from manifests) has no
    // weight for it: 0, filled in once here so every use below sees a complete mixture.
    const tasks = Object.fromEntries(corpusTasks.map((task) => [task, options.mixture.tasks[task] ?? 0])) as Record<CorpusTask, number>;
    const mixture: CorpusMixture = {
        tasks,
        languages: options.mixture.languages,
        ...(options.mixture.surfaceVariation === undefined ? {} : {surfaceVariation: options.mixture.surfaceVariation})
    };
    checkCorpusMixture(mixture);

    const corpus: Corpus = {train: [], validation: [], test: []};
    const variation = mixture.surfaceVariation ?? 0;
    const sample = (
        problem: CorpusProblem,
        problemId: string,
        task: CorpusTask,
        language: CorpusLanguage,
        split: CorpusSplit
    ): CorpusSample => {
        const rendering = problem.renderings[language];
        if (rendering === undefined) throw new Error(`${task} problem ${problem.key} has no ${language} rendering`);
        const id = `${problemId}-${language}`;
        // Each document's form comes from its own stream, so variation never shifts a problem draw.
        const answer =
            split === "test" || variation === 0
                ? rendering.answer
                : surfaceVariant(task, rendering.answer, new Random(derivedSeed(options.seed, `surface:${id}`)), variation);
        const text = rendering.prompt + answer;
        // A blank line separates documents in train.txt / validation.txt.
        if (text.includes("\n\n")) throw new Error(`${task} document ${problemId} contains a blank line`);
        return {id, problemId, task, language, split, text, ...rendering, answer};
    };
    const taskQuotas = apportion(
        options.samples,
        corpusTasks.map((task) => tasks[task])
    );
    corpusTasks.forEach((task, taskIndex) => {
        const {languages, generate} = corpusTaskGenerators[task];
        const quotas =
            taskQuotas[taskIndex] === 0
                ? languages.map(() => 0)
                : apportion(
                      taskQuotas[taskIndex],
                      languages.map((language) => mixture.languages[language])
                  );
        const filled = languages.map(() => 0);
        const testKeys = new Set<string>();
        const random = new Random(derivedSeed(options.seed, task));
        const quotaLimit = 100 * taskQuotas[taskIndex] + 10_000;
        let lastProgress = 0;
        for (let index = 0; ; index++) {
            const quotasMet = filled.every((count, languageIndex) => count >= quotas[languageIndex]);
            if (quotasMet && (testKeys.size >= testProblems || index - lastProgress > testSearchPatience)) break;
            if (!quotasMet && index > quotaLimit)
                throw new InvalidInputError(`task ${task} could not fill its quota of ${taskQuotas[taskIndex]} documents`, "samples");
            const problem = generate(random);
            const split = splitOfProblem(task, problem.key);
            const problemId = `${task}-${index}`;
            if (split === "test") {
                if (testKeys.size < testProblems && !testKeys.has(problem.key)) {
                    testKeys.add(problem.key);
                    lastProgress = index;
                    for (const language of languages) corpus.test.push(sample(problem, problemId, task, language, split));
                }
                continue;
            }
            languages.forEach((language, languageIndex) => {
                if (filled[languageIndex] < quotas[languageIndex]) {
                    filled[languageIndex]++;
                    corpus[split].push(sample(problem, problemId, task, language, split));
                    if (filled.every((count, i) => count >= quotas[i])) lastProgress = index;
                }
            });
        }
    });
    const shuffler = new Random(derivedSeed(options.seed, "shuffle"));
    shuffle(corpus.train, shuffler);
    shuffle(corpus.validation, shuffler);
    return corpus;
}

function shuffle<T>(items: T[], random: Random): void {
    for (let index = items.length - 1; index > 0; index--) {
        const other = Math.floor(random.nextDouble() * (index + 1));
        [items[index], items[other]] = [items[other], items[index]];
    }
}
