import type {Command} from "commander";
import {InvalidInputError} from "../../errors.js";
import {buildFamily} from "../../foundry/family/buildFamily.js";
import {familyRecipe} from "../../foundry/family/familyRecipe.js";
import {writeFamilyCards} from "../../foundry/family/writeFamilyCards.js";
import {checkOutputFolder} from "../checkOutputPath.js";
import {requiredText} from "../textOptions.js";
import {reportOnInterrupt} from "../interrupts.js";

export interface FamilyBuildCommandOptions {
    readonly out?: string;
    readonly work?: string;
    readonly only?: string;
    readonly threads?: string;
    readonly cards?: boolean;
}

export interface FamilyCardsCommandOptions {
    readonly models?: string;
    readonly work?: string;
}

/** The member names of `--only`, checked against the recipe. */
export function parseMemberNames(text: string | undefined): string[] | undefined {
    if (text === undefined) return undefined;
    const names = text
        .split(",")
        .map((name) => name.trim())
        .filter((name) => name !== "");
    const known = familyRecipe.members.map((member) => member.name);
    const unknown = names.filter((name) => !known.includes(name));
    if (names.length === 0 || unknown.length > 0)
        throw new InvalidInputError(`expected names among ${known.join(", ")}, got "${text}"`, "--only");
    return names;
}

const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
};

/** `specgate family build|cards`: regenerate the reference family in models/, and its model cards. */
export function registerFamilyCommand(program: Command): void {
    const family = program
        .command("family")
        .description("the reference model family (models/): rebuild it from scratch, or re-evaluate it and rewrite its cards");
    family
        .command("build")
        .description(
            "write the corpora, train every member with llama-finetune (the target's nine stages ≈ 2 h 15 min at 2 threads on an idle 2-core machine, target-surface's two ≈ 25 min more, draft-shallow's three ≈ 50 min, each other draft ≈ 8–10 min at 1 thread; finished intermediate stages are reused after an interruption), make the Q8_0 member, then the cards"
        )
        .option("--out <DIR>", "models folder", "models")
        .option("--work <DIR>", "scratch folder for the corpora", ".tmp/family")
        .option("--only <NAMES>", "comma-separated members to (re)build")
        .option("--threads <N>", "llama-finetune threads (default 2)")
        .option("--no-cards", "skip evaluation and model cards")
        .action(async (options: FamilyBuildCommandOptions) => {
            const out = requiredText(options.out, "--out");
            const work = requiredText(options.work, "--work");
            const threads = options.threads === undefined ? undefined : Number(options.threads);
            if (threads !== undefined && (!Number.isSafeInteger(threads) || threads < 1))
                throw new InvalidInputError(`expected a positive integer, got "${options.threads}"`, "--threads");
            await checkOutputFolder(out, "--out");
            await checkOutputFolder(work, "--work");
            // Ctrl-C: finished stages stay where they are and a rerun starts after them.
            reportOnInterrupt(() => `finished training stages are kept under ${work} and ${out}; rerun the same command to continue`);
            await buildFamily({out, work, only: parseMemberNames(options.only), threads, onMessage: log});
            if (options.cards !== false) await writeFamilyCards({models: out, work, onMessage: log});
        });
    family
        .command("cards")
        .description("evaluate the members in a models folder and rewrite MODEL_CARD.md, README.md and family.json")
        .option("--models <DIR>", "models folder", "models")
        .option("--work <DIR>", "where the balanced corpus is (regenerated when missing)", ".tmp/family")
        .action(async (options: FamilyCardsCommandOptions) => {
            const models = requiredText(options.models, "--models");
            const work = requiredText(options.work, "--work");
            await checkOutputFolder(models, "--models");
            await checkOutputFolder(work, "--work");
            const report = await writeFamilyCards({models, work, onMessage: log});
            process.stdout.write(`${report.members.map((member) => member.recipe.name).join(", ")}: cards written\n`);
        });
}
