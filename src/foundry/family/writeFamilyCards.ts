import {access, readFile, stat} from "node:fs/promises";
import {join} from "node:path";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import {vocabularyIdentity} from "../../backend/vocabularyIdentity.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import {writeCorpus} from "../corpus/writeCorpus.js";
import {evaluateModel} from "../evaluateModel.js";
import type {FinetuneTrainingReport} from "../finetune/trainWithLlamaFinetune.js";
import {keepLlamaLayers} from "../model/keepLlamaLayers.js";
import {headDimension} from "../model/LlamaConfig.js";
import type {LlamaWeights} from "../model/LlamaWeights.js";
import {llamaParameterCount} from "../model/llamaTensorLayout.js";
import {readLlamaGguf} from "../model/readLlamaGguf.js";
import {corpusDirectory, memberModelPath, stageReportsPath} from "./buildFamily.js";
import {familyRecipe} from "./familyRecipe.js";
import type {FamilyReport, MemberReport} from "./FamilyReport.js";
import {renderFamilyReadme} from "./renderFamilyReadme.js";
import {renderModelCard} from "./renderModelCard.js";
import {initializeLlamaWeights} from "../model/initializeLlamaWeights.js";
import {tensorsLeftAtInitialisation} from "../model/tensorsLeftAtInitialisation.js";
import {parseModelShape, shapeConfig} from "../finetune/ModelShape.js";
import type {TrainedMemberRecipe} from "./familyRecipe.js";

export interface FamilyCardsOptions {
    readonly models: string;
    /** Where the balanced corpus lives (regenerated from the recipe when missing). */
    readonly work: string;
    readonly itemsPerCell?: number;
    readonly onMessage?: (line: string) => void;
}

/**
 * Evaluates every member present in `models` on the balanced corpus's test split (per task ×
 * language accuracy, validation loss) and every non-target member as a draft for the target
 * (greedy acceptance per language), then writes models/<name>/MODEL_CARD.md, models/README.md and
 * models/family.json.
 */
export async function writeFamilyCards(options: FamilyCardsOptions): Promise<FamilyReport> {
    const log = options.onMessage ?? (() => undefined);
    const corpus = corpusDirectory(options.work, "balanced");
    if (!(await exists(join(corpus, "test.jsonl")))) {
        const {seed, samples, testProblems} = familyRecipe.corpus;
        await writeCorpus(corpus, {seed, samples, mixture: corpusMixturePresets["balanced"], testProblemsPerTask: testProblems});
    }
    const target = await loadModelBackend(memberModelPath(options.models, "target"), {threads: 1});
    // Members other members draft for, loaded once each (the target is one of them).
    const verifiers = new Map<string, ModelBackend>([["target", target]]);
    const members: MemberReport[] = [];
    try {
        for (const recipe of familyRecipe.members) {
            const file = memberModelPath(options.models, recipe.name);
            if (!(await exists(file))) {
                log(`${recipe.name}: ${file} missing, skipped`);
                continue;
            }
            const backend = verifiers.get(recipe.name) ?? (await loadModelBackend(file, {threads: 1}));
            if (familyRecipe.members.some((member) => member.draftsFor === recipe.name)) verifiers.set(recipe.name, backend);
            const verifierName = recipe.name === "target" ? null : recipe.draftsFor === undefined ? "target" : recipe.draftsFor;
            const verifier = verifierName === null ? undefined : verifiers.get(verifierName);
            if (verifierName !== null && verifier === undefined) log(`${recipe.name}: ${verifierName} missing, acceptance skipped`);
            try {
                log(`${recipe.name}: evaluating`);
                const evaluation = await evaluateModel(backend, {corpus, itemsPerCell: options.itemsPerCell});
                let asDraft: MemberReport["asDraft"];
                if (verifier !== undefined) {
                    log(`${recipe.name}: measuring acceptance as a draft for ${verifierName}`);
                    const speculative = await evaluateModel(verifier, {
                        corpus,
                        draft: backend,
                        itemsPerCell: options.itemsPerCell,
                        validationDocumentsPerCell: 0
                    });
                    const rates = Object.values(speculative.acceptance!.byLanguage);
                    asDraft = {
                        verifier: verifierName!,
                        overall: speculative.acceptance!.overall,
                        byLanguage: speculative.acceptance!.byLanguage,
                        languageGapPoints: 100 * (Math.max(...rates) - Math.min(...rates)),
                        outputsMatchTarget: speculative.speculativeMatchesTarget ?? false
                    };
                }
                const untrainedTensors = recipe.kind === "trained" ? untrainedTensorsOf(options.models, recipe) : undefined;
                const training = await readJsonIfPresent<FinetuneTrainingReport>(`${file}.train.json`);
                const stages =
                    (await readJsonIfPresent<FinetuneTrainingReport[]>(stageReportsPath(file))) ??
                    (training === undefined ? undefined : [training]);
                members.push({...(await describeFile(file)), recipe, training, stages, untrainedTensors, evaluation, asDraft});
            } finally {
                if (![...verifiers.values()].includes(backend)) await backend.dispose();
            }
        }
    } finally {
        for (const verifier of verifiers.values()) await verifier.dispose();
    }
    const report: FamilyReport = {format: "specgate-family/1", corpus: familyRecipe.corpus, members};
    for (const member of members)
        await writeFileAtomic(join(options.models, member.recipe.name, "MODEL_CARD.md"), renderModelCard(member, report));
    await writeFileAtomic(join(options.models, "README.md"), renderFamilyReadme(report));
    await writeFileAtomic(join(options.models, "family.json"), `${JSON.stringify(report, null, 2)}\n`);
    return report;
}

async function describeFile(
    file: string
): Promise<Pick<MemberReport, "file" | "bytes" | "storage" | "parameters" | "shape" | "contextLength" | "vocabularyIdentity">> {
    const {config} = readLlamaGguf(file);
    const header = GgufReader.readHeader(file);
    const matrixType = header.tensor("blk.0.attn_q.weight").type;
    const storage = matrixType === GgmlTensorType.Q8_0 ? "Q8_0" : matrixType === GgmlTensorType.F16 ? "F16" : "F32";
    return {
        file: file.split("/").slice(-2).join("/"),
        bytes: (await stat(file)).size,
        storage,
        parameters: llamaParameterCount(config),
        shape: `d ${config.embeddingLength}, ${config.blockCount} layers, ${config.headCount} heads of ${headDimension(config)}, ff ${config.feedForwardLength}, vocabulary ${config.vocabularySize}${config.tiedOutput ? ", tied output" : ""}`,
        contextLength: config.contextLength,
        vocabularyIdentity: vocabularyIdentity(header.metadata)
    };
}

/** A JSON file written by this project beside a model (training reports), or undefined when absent. */
async function readJsonIfPresent<T>(path: string): Promise<T | undefined> {
    return (await exists(path)) ? (JSON.parse(await readFile(path, "utf8")) as T) : undefined;
}

async function exists(path: string): Promise<boolean> {
    try {
        await access(path);
        return true;
    } catch {
        return false;
    }
}

/**
 * The member's matrices still at the weights its first stage started from — the recipe's seeded
 * initialisation, or the member it continues (only the blocks it keeps): a trainer that silently
 * skips a tensor shows here.
 */
export function untrainedTensorsOf(models: string, recipe: TrainedMemberRecipe): string[] {
    return tensorsLeftAtInitialisation(startingWeights(models, recipe), readLlamaGguf(memberModelPath(models, recipe.name)).weights);
}

function startingWeights(models: string, recipe: TrainedMemberRecipe): LlamaWeights {
    if (recipe.from === undefined)
        return initializeLlamaWeights(shapeConfig(parseModelShape(recipe.shape), familyRecipe.contextLength), {seed: recipe.seed});
    const source = readLlamaGguf(memberModelPath(models, recipe.from));
    return recipe.layers === undefined ? source.weights : keepLlamaLayers(source.config, source.weights, recipe.layers).weights;
}
