import {mkdir} from "node:fs/promises";
import {join} from "node:path";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import {writeCorpus} from "../corpus/writeCorpus.js";
import {exportLlamaGguf} from "../exportLlamaGguf.js";
import {parseModelShape} from "../finetune/ModelShape.js";
import {trainWithLlamaFinetune} from "../finetune/trainWithLlamaFinetune.js";
import {familyRecipe, type MemberRecipe} from "./familyRecipe.js";

export interface BuildFamilyOptions {
    /** Where models/<name>/model.gguf go. */
    readonly out: string;
    /** Scratch folder for the corpora (regenerated, not shipped). */
    readonly work: string;
    /** Only these members (in recipe order); default all. A quantized member needs its source built. */
    readonly only?: readonly string[];
    readonly threads?: number;
    readonly onMessage?: (line: string) => void;
}

export function corpusDirectory(work: string, mixture: string): string {
    return join(work, `corpus-${mixture}`);
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
    const mixtures = new Set(members.flatMap((member) => member.kind === "trained" ? [member.mixture] : []));
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
    log(`${member.name}: training ${member.shape} on the ${member.mixture} mixture for ${member.steps === undefined ? `${member.seconds} s` : `${member.steps} steps`}`);
    let lastLogged = 0;
    const report = await trainWithLlamaFinetune({
        corpus: corpusDirectory(options.work, member.mixture),
        out,
        shape: parseModelShape(member.shape),
        contextLength: familyRecipe.contextLength,
        seconds: member.seconds,
        steps: member.steps,
        epochs: member.epochs,
        learningRate: member.learningRate,
        minimumLearningRate: member.minimumLearningRate,
        seed: member.seed,
        threads: options.threads,
        name: `specgate-${member.name}`,
        onMessage: (line) => log(`${member.name}: ${line}`),
        onProgress: (progress, epoch) => {
            const now = performance.now();
            if (progress.done !== progress.total && now - lastLogged < 30_000) return;
            lastLogged = now;
            log(`${member.name}: epoch ${epoch + 1} ${progress.phase} ${progress.done}/${progress.total} loss ${progress.loss.toFixed(4)}`);
        }
    });
    log(`${member.name}: ${report.steps} steps in ${report.wallSeconds.toFixed(0)} s, ${report.tokensPerSecond.toFixed(0)} tokens/s, validation loss ${report.finalValidationLoss?.toFixed(4)}`);
}
