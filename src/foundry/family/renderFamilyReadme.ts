import type {FamilyReport, MemberReport} from "./FamilyReport.js";

const percent = (value: number): string => `${(100 * value).toFixed(1)}%`;

function accuracy(member: MemberReport | undefined, task: string, language: string): number | null {
    return member?.evaluation.cells.find((cell) => cell.task === task && cell.language === language)?.accuracy ?? null;
}

function verdict(met: boolean | null): string {
    return met === null ? "not measured" : met ? "met" : "**not met**";
}

/** models/README.md: the members, the issue's targets against what was measured, how to rebuild. */
export function renderFamilyReadme(report: FamilyReport): string {
    const byName = new Map(report.members.map((member) => [member.recipe.name, member]));
    const target = byName.get("target");
    const draft = byName.get("draft");
    const skewed = byName.get("draft-skewed");
    const totalBytes = report.members.reduce((sum, member) => sum + member.bytes, 0);
    const arithmetic = accuracy(target, "arithmetic", "en");
    const toolCall = accuracy(target, "tool-call", "en");
    const lines = [
        "# specgate reference model family", "",
        "Small llama-architecture GGUF models trained from scratch on specgate's synthetic corpus, so that acceptance rates, speed-ups and per-language disparity can be measured without downloading anything. They share one byte-level vocabulary, so any of them can draft for any other.", "",
        "| model | role | parameters | file | storage | validation loss | acceptance as draft for target |", "|---|---|---|---|---|---|---|",
        ...report.members.map((member) => `| [${member.recipe.name}](${member.recipe.name}/MODEL_CARD.md) | ${member.recipe.role} | ${member.parameters.toLocaleString("en-US")} | ${(member.bytes / 1e6).toFixed(2)} MB | ${member.storage} | ${member.training?.finalValidationLoss?.toFixed(3) ?? "–"} | ${member.asDraft === undefined ? "–" : `${percent(member.asDraft.overall)} (gap ${member.asDraft.languageGapPoints.toFixed(1)} pts)`} |`),
        "", `Total size: ${(totalBytes / 1e6).toFixed(1)} MB.`, "",
        "## Targets of issue 4", "",
        "| target | measured | status |", "|---|---|---|",
        `| target English arithmetic accuracy ≥ 90% | ${arithmetic === null ? "–" : percent(arithmetic)} | ${verdict(arithmetic === null ? null : arithmetic >= 0.9)} |`,
        `| target English tool-call accuracy ≥ 90% | ${toolCall === null ? "–" : percent(toolCall)} | ${verdict(toolCall === null ? null : toolCall >= 0.9)} |`,
        `| greedy acceptance target↔draft ≥ 0.6 | ${draft?.asDraft === undefined ? "–" : draft.asDraft.overall.toFixed(3)} | ${verdict(draft?.asDraft === undefined ? null : draft.asDraft.overall >= 0.6)} |`,
        `| draft-skewed language gap ≥ 5 points and larger than draft's | ${skewed?.asDraft === undefined || draft?.asDraft === undefined ? "–" : `${skewed.asDraft.languageGapPoints.toFixed(1)} vs ${draft.asDraft.languageGapPoints.toFixed(1)} points`} | ${verdict(skewed?.asDraft === undefined || draft?.asDraft === undefined ? null : skewed.asDraft.languageGapPoints >= 5 && skewed.asDraft.languageGapPoints > draft.asDraft.languageGapPoints)} |`,
        "", "Acceptance is accepted / drafted tokens with greedy verification at T = 0 and γ = 4 over the test prompts of the balanced corpus; the gap is best minus worst language.", "",
        "Training uses llama.cpp's llama-finetune with two patches (scripts/buildLlamaCppTools.sh): gradient accumulators cleared between steps, and a training graph that lets gradients reach `attn_k` and `attn_v` (upstream they went through the KV cache) and `token_embd` (that half of the patch came after this family was trained). One plain SGD step of the patched tool moves every matrix by exactly −learning rate × the float64 reference gradient (`src/foundry/finetune/llamaFinetuneGradient.test.ts`): the trainer computes the true gradient.", "",
        "## Why the accuracy targets fail: copying (open)", "",
        `The target learns every document format (validation loss ${target?.training?.finalValidationLoss?.toFixed(3) ?? "–"} nats/token) but does not copy numbers or arguments from its prompt (greedy: "Set a timer for 56 minutes." → \`"minutes":34\`; "Tom has 12 candies. He gives 7…" → " 11 - 12 = 1"); a 0.27M probe did not even on its own training documents. With the gradient proven exact, the cause is optimisation: copying needs an induction mechanism (a previous-token head feeding a matching head), and the task corpus gives it little signal — a few digits per document, and small closed sets of arguments that can be partly memorised instead. `
            + "Probes (BENCHMARKS.md, \"the copy curriculum\"): on the 0.27M draft shape, tool calls alone or mixed 1:1 with copy drills (\"Repeat: 417 Paris 8\\nEcho:\", random content; `specgate corpus --mixture copy-drill`) copied nothing in 4,000–10,000 steps; drills alone made it copy after ≈ 8,000–16,000 steps (a phase change). "
            + "A retrain with a copy-drill warm-up failed: the 3.5M target, 19,000 warm-up steps (≈ 37 min, still echoing only words) and then 2 × 11,621 steps of the task mixture with 9% drills (48 min), scored English arithmetic 3/30, tool calls 0/30 and copy drills 0/30 at validation loss 0.246 — no better than this family, so it was not shipped. "
            + "A smaller target gets through it: a 1.1M model (128,4,4,512) copies drills after 16,000 drill steps (18 min), and continued on English tasks mixed with drills it scored 45/46 tool calls and 13/50 arithmetic (operands copied, sums still wrong). A whole family on that recipe (warm-up, then 36,000 steps of the balanced mixture with 30% drills, 0.11M drafts) copied numbers but not yet string arguments — English arithmetic 7/50, tool calls 6/46; continued to 108,000 steps (84 min of training) 40/50 and 3/46 — and at 1.1M the target is so cheap that speculation no longer pays on this CPU (strict γ = 4 0.89× target-only); it was not shipped (BENCHMARKS.md, \"what the models copy\"). "
            + "What is left: a target large enough for speculation to pay, given the warm-up and a main stage several times longer than the 90-minute budget here (a GPU run), or a narrower mixture for the target. Acceptance, the language gap and every speed measurement stand on their own; accuracy-based measurements on this family (tune) sit at the floor.", "",
        "## Rebuild", "",
        "```sh",
        "scripts/trainFamily.sh   # builds llama.cpp's tools offline, the corpora, trains and evaluates everything",
        "```", "",
        "Steps: `scripts/buildLlamaCppTools.sh` (llama-finetune and llama-quantize from the llama.cpp bundled with node-llama-cpp, with two patches), `specgate family build --out models` (corpora with a fixed seed, `specgate train` for each trained member, `specgate export --type q8_0` for target-q8_0), `specgate family cards --models models` (evaluation, these cards, family.json).", ""
    ];
    return lines.join("\n");
}
