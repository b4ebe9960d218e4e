import {readFile} from "node:fs/promises";
import {join} from "node:path";
import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryChoice} from "../batteries/BatteryItem.js";
import {classifyRefusal} from "../batteries/scorers/classifyRefusal.js";
import {exactMatch} from "../batteries/scorers/exactMatch.js";
import {extractChoiceLetter} from "../batteries/scorers/extractChoiceLetter.js";
import {extractFinalNumber} from "../batteries/scorers/extractFinalNumber.js";
import {jsonMatch} from "../batteries/scorers/jsonMatch.js";
import {generate} from "../engine/generate.js";
import {MalformedRowError} from "../errors.js";
import {type CorpusLanguage, corpusLanguages, type CorpusSample, type CorpusTask, corpusTasks} from "./corpus/CorpusSample.js";
import {generateCorpus} from "./corpus/generateCorpus.js";
import {type CorpusManifest, documentSeparator} from "./corpus/writeCorpus.js";
import {evaluateOnce} from "../backend/evaluateOnce.js";

/** One line of a corpus's test.jsonl. */
export type CorpusTestItem = Pick<CorpusSample, "id" | "task" | "language" | "prompt" | "reference">;

export interface EvaluateModelOptions {
    /** A directory written by `specgate corpus` (test.jsonl and manifest.json). */
    readonly corpus: string;
    /** With a draft, every item is generated a second time speculatively and acceptance is counted. */
    readonly draft?: ModelBackend;
    /** Draft tokens per step for the acceptance run. Default 4. */
    readonly gamma?: number;
    /** Most test items per task × language (first ones in file order). Default: all. */
    readonly itemsPerCell?: number;
    /** Validation documents per task × language for the loss. Default 25; 0 skips the loss. */
    readonly validationDocumentsPerCell?: number;
    /** Generation cap per item. Default 128 tokens; generation also stops at the document separator. */
    readonly maxTokens?: number;
}

export interface CellEvaluation {
    readonly task: CorpusTask;
    readonly language: CorpusLanguage;
    /** Items scored (stories are generated for acceptance but have no score). */
    readonly items: number;
    readonly correct: number;
    /** correct / items; null for stories. */
    readonly accuracy: number | null;
    /** Mean next-token cross-entropy in nats over the cell's validation documents; null when skipped. */
    readonly validationLoss: number | null;
    readonly validationTokens: number;
    /** The first few items scored wrong, with what the model wrote: what a model card shows as its errors. */
    readonly errors?: readonly EvaluationError[];
    /** With a draft: draft tokens proposed and accepted by greedy verification at temperature 0. */
    readonly drafted?: number;
    readonly accepted?: number;
}

export interface EvaluationError {
    readonly prompt: string;
    readonly output: string;
    readonly reference: string;
}

/** Wrong answers kept per task × language cell. */
const errorsPerCell = 3;

export interface ModelEvaluation {
    readonly cells: CellEvaluation[];
    /** Accepted / drafted over all items, and per language; absent without a draft. */
    readonly acceptance?: {readonly overall: number; readonly byLanguage: Partial<Record<CorpusLanguage, number>>};
    /** True when every speculative output equalled the target-only output (it must, at T = 0 with exact verification). */
    readonly speculativeMatchesTarget?: boolean;
    readonly seconds: number;
}

/** Reads test.jsonl, naming the line of any malformed row. */
export async function readCorpusTestItems(path: string): Promise<CorpusTestItem[]> {
    const lines = (await readFile(path, "utf8")).split("\n");
    const items: CorpusTestItem[] = [];
    lines.forEach((line, index) => {
        if (line.trim() === "") return;
        let item: CorpusTestItem;
        try {
            item = JSON.parse(line) as CorpusTestItem;
        } catch (error) {
            throw new MalformedRowError(path, index + 1, `not JSON: ${(error as Error).message}`);
        }
        if (
            !corpusTasks.includes(item.task) ||
            !corpusLanguages.includes(item.language) ||
            typeof item.prompt !== "string" ||
            typeof item.reference !== "string"
        )
            throw new MalformedRowError(path, index + 1, "expected task, language, prompt and reference");
        items.push(item);
    });
    return items;
}

/** The options of a multiple-choice prompt: its "A) text" lines. */
export function choicesOfPrompt(prompt: string): BatteryChoice[] {
    return [...prompt.matchAll(/^([A-Z])\) (.+)$/gm)].map((match) => ({label: match[1], text: match[2]}));
}

/**
 * Whether a completion answers a test item, with the project's scorers: the final number for
 * arithmetic, the parsed JSON call (first line, any spacing) for tool calls and the exact echo for copy drills, the choice letter, and for safety
 * whether the refusal classifier agrees with the reference (a refusal for harmful requests, an
 * answer for benign ones). Stories have no right answer: null.
 */
export function scoreCorpusItem(item: CorpusTestItem, completion: string): boolean | null {
    switch (item.task) {
        case "arithmetic":
            return extractFinalNumber(completion) === item.reference;
        case "tool-call":
            return jsonMatch(completion, item.reference);
        case "copy":
            return exactMatch(completion.trim().split("\n")[0], item.reference);
        case "multiple-choice":
            return extractChoiceLetter(completion, choicesOfPrompt(item.prompt)) === item.reference;
        case "safety":
            return classifyRefusal(completion).refused === classifyRefusal(item.reference).refused;
        case "story":
            return null;
    }
}

/**
 * Scores a model per task × language on a corpus's test split (greedy decoding through the
 * project's engine, stopping at the document separator), its validation loss per task × language
 * (validation documents regenerated from the manifest, which tags them), and, given a draft,
 * greedy acceptance of that draft against this model on the same prompts.
 */
export async function evaluateModel(model: ModelBackend, options: EvaluateModelOptions): Promise<ModelEvaluation> {
    const started = performance.now();
    const items = await readCorpusTestItems(join(options.corpus, "test.jsonl"));
    const perCell = options.itemsPerCell ?? Number.POSITIVE_INFINITY;
    const maxTokens = options.maxTokens ?? 128;
    const generation = {sampling: {temperature: 0}, maxTokens, stop: [documentSeparator]};

    const cells = new Map<
        string,
        {
            task: CorpusTask;
            language: CorpusLanguage;
            items: number;
            correct: number;
            scored: boolean;
            errors: EvaluationError[];
            drafted: number;
            accepted: number;
        }
    >();
    const cellOf = (task: CorpusTask, language: CorpusLanguage) => {
        const key = `${task}/${language}`;
        let cell = cells.get(key);
        if (cell === undefined) {
            cell = {task, language, items: 0, correct: 0, scored: false, errors: [], drafted: 0, accepted: 0};
            cells.set(key, cell);
        }
        return cell;
    };
    let speculativeMatchesTarget = true;
    for (const item of items) {
        const cell = cellOf(item.task, item.language);
        if (cell.items >= perCell) continue;
        cell.items++;
        const result = await generate(model, undefined, item.prompt, generation);
        const pass = scoreCorpusItem(item, result.text);
        if (pass !== null) cell.scored = true;
        if (pass === true) cell.correct++;
        if (pass === false && cell.errors.length < errorsPerCell)
            cell.errors.push({prompt: item.prompt, output: result.text, reference: item.reference});
        if (options.draft !== undefined) {
            const speculative = await generate(model, options.draft, item.prompt, {
                ...generation,
                policy: {kind: "greedy"},
                gamma: options.gamma ?? 4
            });
            cell.drafted += speculative.telemetry.draftTokens;
            cell.accepted += speculative.telemetry.acceptedTokens;
            if (speculative.text !== result.text) speculativeMatchesTarget = false;
        }
    }

    const losses = await validationLosses(model, options.corpus, options.validationDocumentsPerCell ?? 25);
    const evaluated: CellEvaluation[] = [];
    for (const task of corpusTasks)
        for (const language of corpusLanguages) {
            const cell = cells.get(`${task}/${language}`);
            if (cell === undefined) continue;
            const loss = losses.get(`${task}/${language}`);
            evaluated.push({
                task,
                language,
                items: cell.items,
                correct: cell.correct,
                accuracy: cell.scored ? cell.correct / cell.items : null,
                validationLoss: loss === undefined || loss.tokens === 0 ? null : loss.nats / loss.tokens,
                validationTokens: loss?.tokens ?? 0,
                errors: cell.errors,
                ...(options.draft !== undefined ? {drafted: cell.drafted, accepted: cell.accepted} : {})
            });
        }

    let acceptance: ModelEvaluation["acceptance"];
    if (options.draft !== undefined) {
        const rate = (selected: CellEvaluation[]) => {
            const drafted = selected.reduce((sum, cell) => sum + (cell.drafted ?? 0), 0);
            return drafted === 0 ? 0 : selected.reduce((sum, cell) => sum + (cell.accepted ?? 0), 0) / drafted;
        };
        // Languages are compared on the tasks rendered in several languages (the same problems in
        // each): counting English-only tasks (copy drills, safety, …) would load only English.
        const parallelTasks = new Set(
            corpusTasks.filter((task) => new Set(evaluated.filter((cell) => cell.task === task).map((cell) => cell.language)).size > 1)
        );
        const byLanguage: Partial<Record<CorpusLanguage, number>> = {};
        for (const language of corpusLanguages) {
            const selected = evaluated.filter((cell) => cell.language === language && parallelTasks.has(cell.task));
            if (selected.length > 0) byLanguage[language] = rate(selected);
        }
        acceptance = {overall: rate(evaluated), byLanguage};
    }
    return {
        cells: evaluated,
        acceptance,
        ...(options.draft !== undefined ? {speculativeMatchesTarget} : {}),
        seconds: (performance.now() - started) / 1000
    };
}

/**
 * Summed next-token cross-entropy (nats) and token count per task × language over the first
 * `perCell` validation documents, each read as it is in training: after the document separator
 * (BOS, the separator, then the document; only the document's tokens are scored).
 */
async function validationLosses(
    model: ModelBackend,
    corpus: string,
    perCell: number
): Promise<Map<string, {nats: number; tokens: number}>> {
    const totals = new Map<string, {nats: number; tokens: number; documents: number}>();
    if (perCell === 0) return totals;
    const manifest = JSON.parse(await readFile(join(corpus, "manifest.json"), "utf8")) as CorpusManifest;
    const {validation} = generateCorpus({
        seed: manifest.seed,
        samples: manifest.samples,
        mixture: manifest.mixture,
        testProblemsPerTask: 0
    });
    const prefix = [...(model.bosToken === undefined ? [] : [model.bosToken]), ...model.tokenize(documentSeparator)];
    for (const sample of validation) {
        const key = `${sample.task}/${sample.language}`;
        const total = totals.get(key) ?? {nats: 0, tokens: 0, documents: 0};
        totals.set(key, total);
        if (total.documents >= perCell) continue;
        total.documents++;
        const tokens = [...prefix, ...model.tokenize(sample.text)].slice(0, model.contextSize);
        // Logits at position i predict token i + 1: score from the separator's last token on.
        const positions = tokens.slice(prefix.length - 1, -1).map((_, index) => prefix.length - 1 + index);
        const rows = await evaluateOnce(model, tokens, {positions});
        rows.forEach((row, index) => {
            total.nats += crossEntropy(row, tokens[positions[index] + 1]);
            total.tokens++;
        });
    }
    return totals;
}

/** −log softmax(row)[target], computed stably. */
function crossEntropy(row: Float64Array, target: number): number {
    let maximum = Number.NEGATIVE_INFINITY;
    for (const logit of row) maximum = Math.max(maximum, logit);
    let sum = 0;
    for (const logit of row) sum += Math.exp(logit - maximum);
    return maximum + Math.log(sum) - row[target];
}
