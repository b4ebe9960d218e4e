import {mkdir, readFile} from "node:fs/promises";
import {join} from "node:path";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import {writeCorpus} from "../corpus/writeCorpus.js";
import {exportLlamaGguf} from "../exportLlamaGguf.js";
import {parseModelShape} from "../finetune/ModelShape.js";
import {type FinetuneTrainingReport, trainWithLlamaFinetune} from "../finetune/trainWithLlamaFinetune.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import {familyRecipe, type MemberRecipe, type TrainedMemberRecipe} from "./familyRecipe.js";

export interface BuildFamilyOptions {
    /** Where models/<name>/model.gguf go. */
    readonly out: string;
    /** Scratch folder for the corpora (regenerated, not shipped). */
    readonly work: string;
    /** Only these members (in recipe order); default all. A quantized member needs its source built, a member continued `from` another that one. */
    readonly only?: readonly string[];
    readonly threads?: number;
    readonly onMessage?: (line: string) => void;
}

export function corpusDirectory(work: string, mixture: string): string {
    return join(work, `corpus-${mixture}`);
}

/** Where the training reports of all a member's stages sit beside its model (the card reads them). */
export function stageReportsPath(model: string): string {
    return `${model}.stages.json`;
}

/** The model file of a member inside a models folder. */
export function memberModelPath(models: string, name: string): string {
    return join(models, name, "model.gguf");
}

/**
 * Regenerates the family from scratch: both corpora (fixed seed), every trained member with
 * llama-finetune, then the quantized members from their sources. Model cards are written
 * separately (writeFamilyCards), so they can be refreshed without retraining.
 */
export async function buildFamily(options: BuildFamilyOptions): Promise<void> {
    const log = options.onMessage ?? (() => undefined);
    const members = familyRecipe.members.filter((member) => options.only === undefined || options.only.includes(member.name));
    const mixtures = new Set(members.flatMap((member) => (member.kind === "trained" ? member.stages.map((stage) => stage.mixture) : [])));
    for (const mixture of mixtures) {
        const directory = corpusDirectory(options.work, mixture);
        const {seed, samples, testProblems} = familyRecipe.corpus;
        await writeCorpus(directory, {seed, samples, mixture: corpusMixturePresets[mixture], testProblemsPerTask: testProblems});
        log(`corpus ${mixture}: ${directory}`);
    }
    for (const member of members) {
        await mkdir(join(options.out, member.name), {recursive: true});
        await buildMember(member, options, log);
    }
}

async function buildMember(member: MemberRecipe, options: BuildFamilyOptions, log: (line: string) => void): Promise<void> {
    const out = memberModelPath(options.out, member.name);
    if (member.kind === "quantized") {
        await exportLlamaGguf(memberModelPath(options.out, member.source), out, member.type, `specgate-${member.name}`);
        log(`${member.name}: ${member.type} of ${member.source}`);
        return;
    }
    const reports: FinetuneTrainingReport[] = [];
    let previous = member.from === undefined ? undefined : memberModelPath(options.out, member.from);
    if (previous !== undefined && member.layers !== undefined) {
        const start = join(options.work, `${member.name}-layers.gguf`);
        await exportLlamaGguf(previous, start, "f32", `specgate-${member.name}`, member.layers);
        log(`${member.name}: blocks ${member.layers.join(", ")} of ${member.from} → ${start}`);
        previous = start;
    }
    // Once a stage is retrained, the later ones must be too: they continued from other weights.
    let retrained = false;
    for (let index = 0; index < member.stages.length; index++) {
        const last = index === member.stages.length - 1;
        const stageOut = last ? out : join(options.work, `${member.name}-stage-${index + 1}.gguf`);
        const key = stageKey(member, index);
        const done =
            last || retrained
                ? undefined
                : await readFile(`${stageOut}.stage.json`, "utf8").then(
                      (text) => JSON.parse(text) as unknown,
                      () => undefined
                  );
        // Both sides are plain JSON built the same way, so equal values stringify equally.
        if (JSON.stringify(done) === JSON.stringify(key)) {
            log(`${member.name}: reusing stage ${index + 1} ${stageOut}`);
        } else {
            await trainStage(member, index, previous, stageOut, options, log);
            retrained = true;
            if (!last) await writeFileAtomic(`${stageOut}.stage.json`, `${JSON.stringify(key, null, 2)}\n`);
        }
        reports.push(JSON.parse(await readFile(`${stageOut}.train.json`, "utf8")) as FinetuneTrainingReport);
        previous = stageOut;
    }
    await writeFileAtomic(stageReportsPath(out), `${JSON.stringify(reports, null, 2)}\n`);
}

async function trainStage(
    member: TrainedMemberRecipe,
    index: number,
    previous: string | undefined,
    out: string,
    options: BuildFamilyOptions,
    log: (line: string) => void
): Promise<void> {
    const stage = member.stages[index];
    const label = member.stages.length === 1 ? member.name : `${member.name} stage ${index + 1}/${member.stages.length}`;
    log(
        `${label}: training ${member.shape} on the ${stage.mixture} mixture for ${stage.steps} steps${previous === undefined ? "" : ` from ${previous}`}`
    );
    let lastLogged = 0;
    const report = await trainWithLlamaFinetune({
        corpus: corpusDirectory(options.work, stage.mixture),
        out,
        shape: parseModelShape(member.shape),
        contextLength: familyRecipe.contextLength,
        steps: stage.steps,
        epochs: stage.epochs,
        learningRate: stage.learningRate,
        minimumLearningRate: stage.minimumLearningRate,
        seed: member.seed,
        initialModel: previous,
        threads: options.threads,
        name: `specgate-${member.name}`,
        onMessage: (line) => log(`${label}: ${line}`),
        onProgress: (progress, epoch) => {
            const now = performance.now();
            if (progress.done !== progress.total && now - lastLogged < 30_000) return;
            lastLogged = now;
            log(`${label}: epoch ${epoch + 1} ${progress.phase} ${progress.done}/${progress.total} loss ${progress.loss.toFixed(4)}`);
        }
    });
    log(
        `${label}: ${report.steps} steps in ${report.wallSeconds.toFixed(0)} s, ${report.tokensPerSecond.toFixed(0)} tokens/s, validation loss ${report.finalValidationLoss?.toFixed(4)}`
    );
}

/**
 * What a finished intermediate stage was trained from: the shape, seed, corpus, every stage up to
 * it and, for a member continued `from` another, that member's whole recipe. An interrupted family build reuses a stage only when this matches the recipe exactly.
 */
export function stageKey(member: TrainedMemberRecipe, index: number): unknown {
    const source = member.from === undefined ? undefined : familyRecipe.members.find((candidate) => candidate.name === member.from);
    return {
        format: "specgate-stage/1",
        shape: member.shape,
        seed: member.seed,
        corpus: familyRecipe.corpus,
        contextLength: familyRecipe.contextLength,
        ...(source?.kind === "trained" ? {from: stageKey(source, source.stages.length - 1)} : {}),
        ...(member.layers === undefined ? {} : {layers: member.layers}),
        stages: member.stages.slice(0, index + 1)
    };
}
