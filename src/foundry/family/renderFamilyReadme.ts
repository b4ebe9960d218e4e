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
        "Training uses llama.cpp's llama-finetune with two patches (scripts/buildLlamaCppTools.sh): gradient accumulators cleared between steps, and a training graph that lets gradients reach `attn_k` and `attn_v` (upstream they went through the KV cache) and `token_embd` (that half of the patch came after this family was trained).", "",
        `Why the accuracy targets fail (open): the target learns every document format (validation loss ${target?.training?.finalValidationLoss?.toFixed(3) ?? "–"} nats/token) but does not copy numbers or arguments from its prompt (greedy: "Tom has 12 candies. He gives 7 to a friend." → " 11 - 12 = 1"; "Set a timer for 56 minutes." → \`"minutes":34\`); its arithmetic loss per token is what guessing the numbers costs. `
            + "The first family blamed the frozen attn_k/attn_v; this one trained them (relative change 2–6 from the initialisation) and its accuracy did not improve, so that was not the cause. "
            + "A 0.27M model trained on tool calls alone (4,000 steps, validation next-token accuracy 93.5%) copied 0 of 20 numbers either, while it sometimes reproduced query words from the small closed set it had memorised: no copy mechanism forms in these runs. "
            + "The TypeScript trainer (batch 8 × 128 tokens, warm-up + cosine, every matrix trained including token_embd, 1,500 steps) failed the same probe, so neither llama-finetune's one-window steps, its once-per-epoch learning rate nor the frozen embedding explains it: copying has not emerged at these sizes and step counts. Next: a copy curriculum and longer runs, checked on the probe before a retrain. "
            + "Acceptance, the language gap and everything measured on the family's speed stand; accuracy-based measurements on this family (tune) sit at the floor.", "",
        "## Rebuild", "",
        "```sh",
        "scripts/trainFamily.sh   # builds llama.cpp's tools offline, the corpora, trains and evaluates everything",
        "```", "",
        "Steps: `scripts/buildLlamaCppTools.sh` (llama-finetune and llama-quantize from the llama.cpp bundled with node-llama-cpp, with two patches), `specgate family build --out models` (corpora with a fixed seed, `specgate train` for each trained member, `specgate export --type q8_0` for target-q8_0), `specgate family cards --models models` (evaluation, these cards, family.json).", ""
    ];
    return lines.join("\n");
}
