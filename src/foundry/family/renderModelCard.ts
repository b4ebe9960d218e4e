import {corpusLanguages, corpusTasks} from "../corpus/CorpusSample.js";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import type {CellEvaluation} from "../evaluateModel.js";
import type {FamilyReport, MemberReport} from "./FamilyReport.js";
import type {TrainedMemberRecipe} from "./familyRecipe.js";

const percent = (value: number): string => `${(100 * value).toFixed(1)}%`;

/** Accuracy and validation loss per task (rows) × language (columns); "–" where a task has no such language. */
export function renderEvaluationTables(cells: readonly CellEvaluation[]): string {
    const languages = corpusLanguages.filter((language) => cells.some((cell) => cell.language === language));
    const header = `| task | ${languages.join(" | ")} |\n|---|${languages.map(() => "---").join("|")}|`;
    const row = (render: (cell: CellEvaluation) => string) =>
        corpusTasks
            .filter((task) => cells.some((cell) => cell.task === task))
            .map(
                (task) =>
                    `| ${task} | ${languages
                        .map((language) => {
                            const cell = cells.find((candidate) => candidate.task === task && candidate.language === language);
                            return cell === undefined ? "–" : render(cell);
                        })
                        .join(" | ")} |`
            )
            .join("\n");
    return [
        "Accuracy on the test split (greedy, T = 0; stories are not scored):",
        "",
        header,
        row((cell) => (cell.accuracy === null ? "n/a" : `${percent(cell.accuracy)} (${cell.correct}/${cell.items})`)),
        "",
        "Validation loss (nats/token, documents read after the separator as in training):",
        "",
        header,
        row((cell) => (cell.validationLoss === null ? "n/a" : cell.validationLoss.toFixed(3)))
    ].join("\n");
}

/** A prompt without its answer label (its last line), on one line, shortened for a list. */
function promptLines(prompt: string): string {
    const lines = prompt.split("\n").filter((line) => line.trim() !== "");
    const text = (lines.length > 1 ? lines.slice(0, -1) : lines).join(" ⏎ ").replaceAll("`", "'");
    return text.length > 140 ? `${text.slice(0, 139)}…` : text;
}

/** models/<name>/MODEL_CARD.md. */
/** Where a trained member's first stage started: random weights, or (some blocks of) another member. */
function startingPoint(recipe: TrainedMemberRecipe): string {
    if (recipe.from === undefined)
        return `From random weights (seed ${recipe.seed}, N(0, 0.02²), residual projections scaled by 1/√(2·layers))`;
    if (recipe.layers === undefined) return `From ${recipe.from}'s final weights (\`${recipe.from}/model.gguf\`)`;
    return `From block${recipe.layers.length > 1 ? "s" : ""} ${recipe.layers.join(" and ")} (with the embeddings, final norm and output head) of ${recipe.from}'s final weights (\`${recipe.from}/model.gguf\`; \`specgate export --layers\`, a self-speculative draft)`;
}

export function renderModelCard(member: MemberReport, family: FamilyReport): string {
    const recipe = member.recipe;
    const lines: string[] = [
        `# ${recipe.name}`,
        "",
        `${recipe.role}. Part of the specgate reference family ([models/README.md](../README.md)).`,
        ""
    ];
    lines.push(
        "## Model",
        "",
        `- File: \`${member.file}\`, ${(member.bytes / 1e6).toFixed(2)} MB, matrices ${member.storage} (norm gains F32)`,
        `- Architecture: llama (RMSNorm, RoPE, multi-head attention, SwiGLU, untied output); ${member.shape}`,
        `- Parameters: ${member.parameters.toLocaleString("en-US")}`,
        `- Context length: ${member.contextLength} tokens (the training window; longer inputs were never seen)`,
        "- Tokenizer: specgate's byte-level SentencePiece vocabulary (260 tokens: 3 specials, 256 bytes, the space piece); every string tokenizes",
        `- Vocabulary identity: \`${member.vocabularyIdentity.slice(0, 16)}…\` (shared by the whole family)`,
        ""
    );
    if (recipe.kind === "trained" && member.training !== undefined) {
        const training = member.training;
        const stages = member.stages ?? [training];
        const mixtures = [...new Set(recipe.stages.map((stage) => stage.mixture))];
        const minutes = (seconds: number): string => `${(seconds / 60).toFixed(1)} min`;
        const totalSeconds = stages.reduce((sum, stage) => sum + stage.wallSeconds, 0);
        const totalSteps = stages.reduce((sum, stage) => sum + stage.steps, 0);
        lines.push(
            "## Data",
            "",
            ...mixtures.map((name) => {
                const mixture = corpusMixturePresets[name];
                return `- \`specgate corpus --seed ${family.corpus.seed} --samples ${family.corpus.samples} --mixture ${name} --test-problems ${family.corpus.testProblems}\`: tasks ${Object.entries(
                    mixture.tasks
                )
                    .map(([task, weight]) => `${task} ${weight}`)
                    .join(", ")}; languages ${Object.entries(mixture.languages)
                    .map(([language, weight]) => `${language} ${(100 * weight).toFixed(1)}%`)
                    .join(
                        ", "
                    )}${mixture.surfaceVariation === undefined ? "" : `; answers in equivalent forms, each choice the alternative with probability ${mixture.surfaceVariation} (surfaceVariation)`}`;
            }),
            '- Multilingual tasks: arithmetic and tool calls; copy drills are "Repeat: 417 Paris 8\\nEcho: 417 Paris 8" with random content',
            `- Each stage reads the first documents of its shuffled train.txt, in file order (the last stage: ${training.trainDocuments.toLocaleString("en-US")} training documents per epoch, ${training.validationDocuments} validation documents)`,
            ""
        );
        lines.push(
            "## Training",
            "",
            "- Trainer: llama.cpp's llama-finetune (bundled release, built by scripts/buildLlamaCppTools.sh with two patches: gradients cleared between steps, and a training graph in which attn_k, attn_v and token_embd receive gradients), driven by `specgate train`; one plain SGD step of the patched tool equals the float64 reference gradient of every matrix (src/foundry/finetune/llamaFinetuneGradient.test.ts)",
            "- Why llama-finetune: ≈ 15–17× the throughput of the TypeScript trainer on this 2-core machine; it trains on hard labels only, which is all pre-training needs (the TS trainer stays for tiny CI runs and s-CDF fine-tuning)",
            `- ${startingPoint(recipe)}${stages.length > 1 ? "; each later stage continues from the previous one's weights (`specgate train --from`), with a fresh optimizer state" : ""}`,
            `- AdamW, weight decay ${training.weightDecay}, the learning rate decaying once per epoch from the first to the last value; one optimizer step per window of ${training.contextLength} tokens (windows overlap by half)`,
            `- ${totalSteps.toLocaleString("en-US")} steps, ${stages.reduce((sum, stage) => sum + stage.tokensProcessed, 0).toLocaleString("en-US")} tokens processed, wall time ${minutes(totalSeconds)} (validation included) at ${[...new Set(stages.map((stage) => stage.threads))].join(" or ")} thread(s), ${training.tokensPerSecond.toFixed(0)} tokens/s in the last stage`,
            "",
            "| stage | mixture | epochs × steps | learning rate | wall time | validation loss (its corpus) | why |",
            "|---|---|---|---|---|---|---|",
            ...stages.map((stage, index) => {
                const planned = recipe.stages[index];
                return `| ${index + 1} | ${planned?.mixture ?? "?"} | ${stage.epochs} × ${(stage.steps / stage.epochs).toLocaleString("en-US")} | ${stage.learningRate}${stage.minimumLearningRate === stage.learningRate ? "" : ` → ${stage.minimumLearningRate}`} | ${minutes(stage.wallSeconds)} | ${stage.finalValidationLoss?.toFixed(4) ?? "n/a"} | ${planned?.purpose ?? ""} |`;
            }),
            "",
            "Last stage, per epoch:",
            "",
            "| epoch | train loss | validation loss | validation next-token accuracy |",
            "|---|---|---|---|",
            ...training.history.map(
                (entry) =>
                    `| ${entry.epoch + 1} | ${entry.trainLoss.toFixed(4)} | ${entry.validationLoss?.toFixed(4) ?? "n/a"} | ${entry.validationAccuracy === undefined ? "n/a" : percent(entry.validationAccuracy)} |`
            ),
            "",
            member.untrainedTensors === undefined
                ? ""
                : member.untrainedTensors.length === 0
                  ? `Every matrix moved from its initialisation (checked by \`tensorsLeftAtInitialisation\` against ${recipe.from === undefined ? "the recipe's seed" : "the weights it started from"}).`
                  : `Matrices still at their initialisation (up to weight-decay scaling): ${member.untrainedTensors.map((name) => `\`${name}\``).join(", ")}. ` +
                    (member.untrainedTensors.includes("token_embd.weight")
                        ? "This member was trained before scripts/llama-finetune-training-graph.patch also unfroze token_embd (a rebuild trains it): its token embedding is a fixed random projection that the first block learnt to read."
                        : "The trainer skipped them: check the llama.cpp patches in scripts/."),
            "",
            "Train loss is llama-finetune's mean over the epoch; validation is measured after it. Both are per token over 256-token windows of the training text (prompts and answers alike).",
            ""
        );
    } else if (recipe.kind === "quantized") {
        lines.push(
            "## Making",
            "",
            `Re-encoded from \`${recipe.source}/model.gguf\` with \`specgate export --type ${recipe.type}\` (the project's Q8_0 encoder: blocks of 32 values, one fp16 scale each); no training.`,
            ""
        );
    }
    lines.push(
        "## Evaluation",
        "",
        `Test split of the balanced corpus (seed ${family.corpus.seed}, ${family.corpus.testProblems} problems per task, every problem in each of its task's languages); \`src/foundry/evaluateModel.ts\`.`,
        "",
        renderEvaluationTables(member.evaluation.cells),
        ""
    );
    const englishErrors = member.evaluation.cells.filter((cell) => cell.language === "en" && (cell.errors ?? []).length > 0);
    if (englishErrors.length > 0)
        lines.push(
            "Wrong answers (English, the first three of each task in test order: prompt → output | expected):",
            "",
            ...englishErrors.flatMap((cell) =>
                (cell.errors ?? []).map(
                    (error) =>
                        `- ${cell.task}: \`${promptLines(error.prompt)}\` → \`${error.output.trim().replaceAll("`", "'").replaceAll("\n", "⏎")}\` | \`${error.reference}\``
                )
            ),
            ""
        );
    if (member.asDraft !== undefined) {
        const draft = member.asDraft;
        const verifier = draft.verifier ?? "target";
        lines.push(
            `## As a draft for ${verifier}`,
            "",
            `Greedy acceptance (accepted / drafted tokens, γ = 4, T = 0) over the same test prompts: **${percent(draft.overall)}** overall; per language over the tasks rendered in every language (arithmetic, tool calls), ` +
                Object.entries(draft.byLanguage)
                    .map(([language, rate]) => `${language} ${percent(rate)}`)
                    .join(", ") +
                `; best − worst language ${draft.languageGapPoints.toFixed(1)} points. Speculative output ${draft.outputsMatchTarget ? "equalled" : "did NOT equal"} ${verifier}-only output on every prompt.`,
            ""
        );
    }
    lines.push(
        "## Regenerate",
        "",
        "```sh",
        "scripts/trainFamily.sh            # the whole family, from scratch (see models/README.md for the time)",
        `node dist/cli/main.js family build --out models --only ${recipe.name}${recipe.kind === "quantized" ? "   # needs models/" + recipe.source : recipe.from !== undefined ? "   # needs models/" + recipe.from : ""}`,
        "node dist/cli/main.js family cards --models models   # re-evaluate and rewrite the cards",
        "```",
        "",
        "Training is not bit-reproducible across machines (thread scheduling in llama.cpp's reductions); the recipe, data and seeds are.",
        ""
    );
    return lines.join("\n");
}
