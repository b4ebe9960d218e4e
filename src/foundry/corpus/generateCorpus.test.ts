import {describe, expect, it} from "vitest";
import {classifyRefusal} from "../../batteries/scorers/classifyRefusal.js";
import {extractFinalNumber} from "../../batteries/scorers/extractFinalNumber.js";
import {jsonMatch} from "../../batteries/scorers/jsonMatch.js";
import {InvalidInputError} from "../../errors.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {apportion} from "./apportion.js";
import {corpusMixturePresets} from "./CorpusMixture.js";
import {type CorpusSample, corpusTasks} from "./CorpusSample.js";
import {type Corpus, generateCorpus} from "./generateCorpus.js";
import {refusalSentence} from "./safetyProblem.js";

const balanced = corpusMixturePresets["balanced"];
const englishHeavy = corpusMixturePresets["english-heavy"];

function all(corpus: Corpus): CorpusSample[] {
    return [...corpus.train, ...corpus.validation, ...corpus.test];
}

describe("generateCorpus", () => {
    const corpus = generateCorpus({seed: 11, samples: 3000, mixture: balanced});

    it("is deterministic: the same seed gives the same documents, another seed others", () => {
        expect(generateCorpus({seed: 11, samples: 3000, mixture: balanced})).toEqual(corpus);
        const other = generateCorpus({seed: 12, samples: 3000, mixture: balanced});
        expect(other.train.map((item) => item.text)).not.toEqual(corpus.train.map((item) => item.text));
    });

    it("has disjoint splits: no problem, and no document text, is in two splits", () => {
        const splitOfText = new Map<string, string>();
        const splitOfProblem = new Map<string, string>();
        for (const item of all(corpus)) {
            expect(item.split).toBe(splitOfText.get(item.text) ?? item.split);
            expect(item.split).toBe(splitOfProblem.get(item.problemId) ?? item.split);
            splitOfText.set(item.text, item.split);
            splitOfProblem.set(item.problemId, item.split);
        }
        // Where the prompt determines the answer, a test prompt never occurs in training documents. Story
        // prompts are one opening sentence that many different stories share, so only whole stories are unique.
        const trainingPrompts = new Set([...corpus.train, ...corpus.validation].map((item) => item.prompt));
        expect(corpus.test.filter((item) => item.task !== "story" && trainingPrompts.has(item.prompt))).toEqual([]);
        expect(new Set(all(corpus).map((item) => item.id)).size).toBe(all(corpus).length);
    });

    it("renders each arithmetic and tool-call test problem in four languages with equal answers and different bytes", () => {
        for (const task of ["arithmetic", "tool-call"] as const) {
            const byProblem = new Map<string, CorpusSample[]>();
            for (const item of corpus.test.filter((sample) => sample.task === task))
                byProblem.set(item.problemId, [...(byProblem.get(item.problemId) ?? []), item]);
            expect(byProblem.size).toBeGreaterThanOrEqual(40);
            for (const renderings of byProblem.values()) {
                expect(renderings.map((item) => item.language).sort()).toEqual(["de", "en", "es", "ja"]);
                expect(new Set(renderings.map((item) => item.answer)).size).toBe(1);
                expect(new Set(renderings.map((item) => item.reference)).size).toBe(1);
                expect(new Set(renderings.map((item) => Buffer.byteLength(item.prompt))).size).toBeGreaterThan(1);
            }
        }
    });

    it("writes correct arithmetic: every step holds and the final line is the reference", () => {
        const arithmetic = all(corpus).filter((item) => item.task === "arithmetic");
        expect(arithmetic.length).toBeGreaterThan(500);
        for (const item of arithmetic) {
            const steps = [...item.answer.matchAll(/(\d+) ([-+*]) (\d+) = (\d+)/g)];
            expect(steps.length).toBeGreaterThan(0);
            for (const [, left, operator, right, result] of steps) {
                const value =
                    operator === "+"
                        ? Number(left) + Number(right)
                        : operator === "-"
                          ? Number(left) - Number(right)
                          : Number(left) * Number(right);
                expect(value, item.text).toBe(Number(result));
            }
            expect(extractFinalNumber(item.answer)).toBe(item.reference);
            expect(Number(item.reference)).toBeGreaterThan(0);
            // The operands are the numbers the question states.
            const stated = new Set(item.prompt.match(/\d+/g));
            expect(stated.has(steps[0][1]) && stated.has(steps[0][3]), item.text).toBe(true);
        }
    });

    it("writes one-line JSON tool calls whose arguments the request states", () => {
        for (const item of all(corpus).filter((sample) => sample.task === "tool-call")) {
            const call = JSON.parse(item.reference) as {name: string; arguments: Record<string, string | number>};
            expect(item.answer).toBe(` ${item.reference}`);
            expect(item.reference).not.toContain("\n");
            for (const value of Object.values(call.arguments)) expect(item.prompt, item.text).toContain(String(value));
        }
        expect(
            all(corpus).some((item) => item.reference === '{"name":"search","arguments":{"query":"red shoes","limit":50}}') ||
                all(corpus).some((item) => item.reference.includes('"limit":50'))
        ).toBe(true);
    });

    it("varies only train/validation answers of arithmetic and tool calls under surfaceVariation, and every form scores the same", () => {
        const varied = generateCorpus({seed: 11, samples: 3000, mixture: {...balanced, surfaceVariation: 0.5}});
        // The problems, splits, prompts and references are those of the canonical corpus; the test split is canonical.
        expect(varied.test).toEqual(corpus.test);
        const canonicalById = new Map([...corpus.train, ...corpus.validation].map((item) => [item.id, item]));
        let changed = 0;
        for (const item of [...varied.train, ...varied.validation]) {
            const canonical = canonicalById.get(item.id)!;
            expect({...item, answer: "", text: ""}).toEqual({...canonical, answer: "", text: ""});
            expect(item.text).toBe(item.prompt + item.answer);
            if (item.answer !== canonical.answer) {
                changed++;
                expect(["arithmetic", "tool-call"]).toContain(item.task);
            }
            if (item.task === "arithmetic") expect(extractFinalNumber(item.answer)).toBe(item.reference);
            if (item.task === "tool-call") expect(jsonMatch(item.answer, item.reference)).toBe(true);
        }
        const variable = [...varied.train, ...varied.validation].filter(
            (item) => item.task === "arithmetic" || item.task === "tool-call"
        ).length;
        // One coin flip that matters per sum or difference (½ differ), two per product, two-step problem or call (¾ differ).
        expect(changed / variable).toBeGreaterThan(0.6);
        expect(changed / variable).toBeLessThan(0.75);
        expect(generateCorpus({seed: 11, samples: 3000, mixture: {...balanced, surfaceVariation: 0.5}})).toEqual(varied);
        expect(generateCorpus({seed: 11, samples: 3000, mixture: {...balanced, surfaceVariation: 0}})).toEqual(corpus);
    });

    it("refuses exactly the harmful safety requests, in words the refusal classifier recognises", () => {
        const safety = all(corpus).filter((item) => item.task === "safety");
        const refusals = safety.filter((item) => item.reference === refusalSentence);
        expect(refusals.length / safety.length).toBeGreaterThan(0.35);
        expect(refusals.length / safety.length).toBeLessThan(0.65);
        for (const item of safety) expect(classifyRefusal(item.answer).refused).toBe(item.reference === refusalSentence);
    });

    it("gives multiple-choice letters in every position", () => {
        const letters = all(corpus)
            .filter((item) => item.task === "multiple-choice")
            .map((item) => item.reference);
        expect(new Set(letters)).toEqual(new Set(["A", "B", "C", "D"]));
        for (const letter of ["A", "B", "C", "D"])
            expect(letters.filter((value) => value === letter).length / letters.length).toBeGreaterThan(0.15);
    });

    it("meets the mixture: task counts exact, english-heavy 90% English within the multilingual tasks", () => {
        const skewed = generateCorpus({seed: 11, samples: 3000, mixture: englishHeavy});
        for (const [candidate, englishShare] of [
            [corpus, 0.25],
            [skewed, 0.9]
        ] as const) {
            const documents = [...candidate.train, ...candidate.validation];
            expect(documents).toHaveLength(3000);
            // Weights 0.35 : 0.15 : 0.25 : 0.1 : 0.15 : 0.3 (copy), apportioned exactly by largest remainder:
            // arithmetic 3000 × 0.35 / 1.3 = 807.69, rounded up with the two larger remainders (tool call .92, safety .77).
            const quotas = apportion(
                3000,
                corpusTasks.map((task) => balanced.tasks[task])
            );
            corpusTasks.forEach((task, index) =>
                expect(
                    documents.filter((item) => item.task === task),
                    task
                ).toHaveLength(quotas[index])
            );
            expect(quotas[corpusTasks.indexOf("arithmetic")]).toBe(808);
            for (const task of ["arithmetic", "tool-call"]) {
                const ofTask = documents.filter((item) => item.task === task);
                const english = ofTask.filter((item) => item.language === "en").length / ofTask.length;
                expect(Math.abs(english - englishShare)).toBeLessThan(0.005);
            }
        }
        // Validation is about a tenth of the documents, and the test split ignores the mixture.
        expect(corpus.validation.length / 3000).toBeGreaterThan(0.07);
        expect(corpus.validation.length / 3000).toBeLessThan(0.13);
        expect(skewed.test).toEqual(corpus.test);
    });

    it("reads a mixture written before the copy task existed as copy weight 0", () => {
        const {copy: _copy, ...olderTasks} = balanced.tasks;
        const older = {tasks: olderTasks, languages: balanced.languages} as unknown as typeof balanced;
        const withoutCopy = {tasks: {...balanced.tasks, copy: 0}, languages: balanced.languages};
        expect(generateCorpus({seed: 11, samples: 500, mixture: older})).toEqual(
            generateCorpus({seed: 11, samples: 500, mixture: withoutCopy})
        );
    });

    it("keeps a problem's content when the sample count changes", () => {
        const smaller = generateCorpus({seed: 11, samples: 500, mixture: balanced});
        const textById = new Map(all(corpus).map((item) => [item.id, item.text]));
        for (const item of [...smaller.train, ...smaller.validation]) expect(textById.get(item.id) ?? item.text).toBe(item.text);
    });

    it("tokenizes Japanese (and every other) document losslessly with the byte tokenizer", () => {
        const tokenizer = new ByteTokenizer();
        const japanese = all(corpus).filter((item) => item.language === "ja");
        expect(japanese.length).toBeGreaterThan(100);
        for (const item of all(corpus)) {
            const tokens = tokenizer.tokenize(item.text);
            expect(tokenizer.detokenize(tokens)).toBe(item.text);
        }
        // Byte-level: a Japanese character is three tokens, so the parallel renderings differ in length.
        const english = corpus.test.find((item) => item.task === "arithmetic" && item.language === "en")!;
        const parallel = corpus.test.find((item) => item.problemId === english.problemId && item.language === "ja")!;
        expect(tokenizer.tokenize(parallel.text).length).not.toBe(tokenizer.tokenize(english.text).length);
    });

    it("rejects bad options with typed errors", () => {
        expect(() => generateCorpus({seed: -1, samples: 10, mixture: balanced})).toThrow(InvalidInputError);
        expect(() => generateCorpus({seed: 1, samples: 1.5, mixture: balanced})).toThrow(InvalidInputError);
        const noLanguage = {tasks: balanced.tasks, languages: {en: 0, es: 1, de: 0, ja: 0}};
        expect(() => generateCorpus({seed: 1, samples: 10, mixture: noLanguage})).toThrow(
            /multiple-choice is rendered in en, none of which/
        );
    });
});
