import {corpusLanguages, corpusTasks} from "../corpus/CorpusSample.js";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import type {CellEvaluation} from "../evaluateModel.js";
import type {FamilyReport, MemberReport} from "./FamilyReport.js";

const percent = (value: number): string => `${(100 * value).toFixed(1)}%`;

/** Accuracy and validation loss per task (rows) × language (columns); "–" where a task has no such language. */
export function renderEvaluationTables(cells: readonly CellEvaluation[]): string {
    const languages = corpusLanguages.filter((language) => cells.some((cell) => cell.language === language));
    const header = `| task | ${languages.join(" | ")} |\n|---|${languages.map(() => "---").join("|")}|`;
    const row = (render: (cell: CellEvaluation) => string) => corpusTasks
        .filter((task) => cells.some((cell) => cell.task === task))
        .map((task) => `| ${task} | ${languages.map((language) => {
            const cell = cells.find((candidate) => candidate.task === task && candidate.language === language);
            return cell === undefined ? "–" : render(cell);
        }).join(" | ")} |`).join("\n");
    return [
        "Accuracy on the test split (greedy, T = 0; stories are not scored):", "", header,
        row((cell) => cell.accuracy === null ? "n/a" : `${percent(cell.accuracy)} (${cell.correct}/${cell.items})`), "",
        "Validation loss (nats/token, documents read after the separator as in training):", "", header,
        row((cell) => cell.validationLoss === null ? "n/a" : cell.validationLoss.toFixed(3))
    ].join("\n");
}

/** models/<name>/MODEL_CARD.md. */
export function renderModelCard(member: MemberReport, family: FamilyReport): string {
    const recipe = member.recipe;
    const lines: string[] = [`# ${recipe.name}`, "", `${recipe.role}. Part of the specgate reference family (models/README.md).`, ""];
    lines.push("## Model", "",
        `- File: \`${member.file}\`, ${(member.bytes / 1e6).toFixed(2)} MB, matrices ${member.storage} (norm gains F32)`,
        `- Architecture: llama (RMSNorm, RoPE, multi-head attention, SwiGLU, untied output); ${member.shape}`,
        `- Parameters: ${member.parameters.toLocaleString("en-US")}`,
        `- Context length: ${member.contextLength} tokens (the training window; longer inputs were never seen)`,
        "- Tokenizer: specgate's byte-level SentencePiece vocabulary (260 tokens: 3 specials, 256 bytes, the space piece); every string tokenizes",
        `- Vocabulary identity: \`${member.vocabularyIdentity.slice(0, 16)}…\` (shared by the whole family)`, "");
    if (recipe.kind === "trained" && member.training !== undefined) {
        const training = member.training;
        const mixture = corpusMixturePresets[recipe.mixture];
        lines.push("## Data", "",
            `- \`specgate corpus --seed ${family.corpus.seed} --samples ${family.corpus.samples} --mixture ${recipe.mixture} --test-problems ${family.corpus.testProblems}\``,
            `- Mixture "${recipe.mixture}": tasks ${Object.entries(mixture.tasks).map(([task, weight]) => `${task} ${weight}`).join(", ")}; languages ${Object.entries(mixture.languages).map(([language, weight]) => `${language} ${(100 * weight).toFixed(1)}%`).join(", ")} (multilingual tasks: arithmetic, tool calls)`,
            `- Used: ${training.trainDocuments.toLocaleString("en-US")} training documents per epoch (the first of the shuffled train.txt), ${training.validationDocuments} validation documents`, "");
        lines.push("## Training", "",
            "- Trainer: llama.cpp's llama-finetune (bundled release, built by scripts/buildLlamaCppTools.sh with two patches: gradients cleared between steps, and a training graph in which attn_k and attn_v receive gradients, and token_embd in rebuilds after this family), driven by `specgate train`; one plain SGD step of the patched tool equals the float64 reference gradient of every matrix (src/foundry/finetune/llamaFinetuneGradient.test.ts)",
            "- Why llama-finetune: ≈ 15–17× the throughput of the TypeScript trainer on this 2-core machine; it trains on hard labels only, which is all pre-training needs (the TS trainer stays for tiny CI runs and s-CDF fine-tuning)",
            `- From random weights (seed ${training.seed}, N(0, 0.02²), residual projections scaled by 1/√(2·layers))`,
            `- AdamW, learning rate ${training.learningRate} decaying once per epoch towards ${training.minimumLearningRate}, weight decay ${training.weightDecay}; one optimizer step per window of ${training.contextLength} tokens (windows overlap by half)`,
            `- ${training.epochs} epochs × ${training.steps / training.epochs} steps = ${training.steps.toLocaleString("en-US")} steps, ${training.tokensProcessed.toLocaleString("en-US")} tokens processed`,
            `- Wall time ${(training.wallSeconds / 60).toFixed(1)} min (${recipe.steps === undefined ? `budget ${recipe.seconds} s, including a calibration run and validation` : `a fixed plan of ${recipe.steps} steps, validation included`}), ${training.tokensPerSecond.toFixed(0)} tokens/s while training, ${training.threads} threads`,
            "", "| epoch | train loss | validation loss | validation next-token accuracy |", "|---|---|---|---|",
            ...training.history.map((entry) => `| ${entry.epoch + 1} | ${entry.trainLoss.toFixed(4)} | ${entry.validationLoss?.toFixed(4) ?? "n/a"} | ${entry.validationAccuracy === undefined ? "n/a" : percent(entry.validationAccuracy)} |`),
            "", member.untrainedTensors === undefined ? "" : member.untrainedTensors.length === 0
                ? "Every matrix moved from its initialisation (checked by `tensorsLeftAtInitialisation` against the recipe's seed)."
                : `Matrices still at their initialisation (up to weight-decay scaling): ${member.untrainedTensors.map((name) => `\`${name}\``).join(", ")}. `
                    + (member.untrainedTensors.includes("token_embd.weight") ? "This member was trained before scripts/llama-finetune-training-graph.patch also unfroze token_embd (a rebuild trains it): its token embedding is a fixed random projection that the first block learnt to read." : "The trainer skipped them: check the llama.cpp patches in scripts/."),
            "", "Train loss is llama-finetune's mean over the epoch; validation is measured after it. Both are per token over 256-token windows of the training text (prompts and answers alike).", "");
    } else if (recipe.kind === "quantized") {
        lines.push("## Making", "", `Re-encoded from \`${recipe.source}/model.gguf\` with \`specgate export --type ${recipe.type}\` (the project's Q8_0 encoder: blocks of 32 values, one fp16 scale each); no training.`, "");
    }
    lines.push("## Evaluation", "", `Test split of the balanced corpus (seed ${family.corpus.seed}, ${family.corpus.testProblems} problems per task, every problem in each of its task's languages); \`src/foundry/evaluateModel.ts\`.`, "",
        renderEvaluationTables(member.evaluation.cells), "");
    if (member.asDraft !== undefined) {
        const draft = member.asDraft;
        lines.push("## As a draft for target", "",
            `Greedy acceptance (accepted / drafted tokens, γ = 4, T = 0) over the same test prompts: **${percent(draft.overall)}** overall; ` +
            Object.entries(draft.byLanguage).map(([language, rate]) => `${language} ${percent(rate)}`).join(", ") +
            `; best − worst language ${draft.languageGapPoints.toFixed(1)} points. Speculative output ${draft.outputsMatchTarget ? "equalled" : "did NOT equal"} target-only output on every prompt.`, "");
    }
    lines.push("## Regenerate", "", "```sh", "scripts/trainFamily.sh            # the whole family, from scratch (≈ 1 h 50 min at 1 thread)",
        `node dist/cli/main.js family build --out models --only ${recipe.name}${recipe.kind === "quantized" ? "   # needs models/" + recipe.source : ""}`,
        "node dist/cli/main.js family cards --models models   # re-evaluate and rewrite the cards", "```", "",
        "Training is not bit-reproducible across machines (thread scheduling in llama.cpp's reductions); the recipe, data and seeds are.", "");
    return lines.join("\n");
}
