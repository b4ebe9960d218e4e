import type {FamilyReport, MemberReport} from "./FamilyReport.js";

const percent = (value: number): string => `${(100 * value).toFixed(1)}%`;

function accuracy(member: MemberReport | undefined, task: string, language: string): number | null {
    return member?.evaluation.cells.find((cell) => cell.task === task && cell.language === language)?.accuracy ?? null;
}

function verdict(met: boolean | null): string {
    return met === null ? "not measured" : met ? "met" : "**not met**";
}

/** The range of a member's training tokens/s over its stages. */
function throughput(member: MemberReport): string {
    const rates = (member.stages ?? []).map((stage) => Math.round(stage.tokensPerSecond));
    const low = Math.min(...rates);
    const high = Math.max(...rates);
    return low === high ? low.toLocaleString("en-US") : `${low.toLocaleString("en-US")}–${high.toLocaleString("en-US")}`;
}

/** Why target-surface, draft-surface and draft-shallow exist, with what was measured on them; nothing when none is present. */
function surfaceSection(target: MemberReport | undefined, draft: MemberReport | undefined, shallow: MemberReport | undefined): string[] {
    if (target === undefined && draft === undefined && shallow === undefined) return [];
    const arithmetic = accuracy(target, "arithmetic", "en");
    const toolCall = accuracy(target, "tool-call", "en");
    return [
        "## Surface forms: target-surface, draft-surface and draft-shallow",
        "",
        "The family's answers are token-exact (a sum's digits, one JSON spelling), so a draft token the target would not have chosen almost always changes the answer, and lossy verification has nothing to gain ([BENCHMARKS.md](../BENCHMARKS.md#how-much-a-lossy-policy-could-gain-the-score-preserving-oracle)). " +
            'Real models differ in how they write the same answer — the Calibrated SD paper traces 65% of its rescued tokens to math formatting, punctuation and spacing. This pair is trained on the same tasks with each such choice a coin flip per document (`surfaceVariation` 0.5: "3 + 4 = 7" or "3+4=7", ", " or "; " between steps, "*" or "×", JSON with or without spaces after ":" and ","); every form scores the same (final number, parsed call), and the test split stays canonical. ' +
            `Measured: target-surface English arithmetic ${arithmetic === null ? "–" : percent(arithmetic)}, tool calls ${toolCall === null ? "–" : percent(toolCall)} (scored on canonical references, any form accepted)` +
            `${draft?.asDraft === undefined ? "" : `; draft-surface accepts ${percent(draft.asDraft.overall)} of its greedy drafts`}. Use them for \`specgate sweep\` / \`calibrate\` experiments; the targets above are the canonical family's.`,
        "",
        ...(shallow === undefined
            ? []
            : [
                  "draft-shallow is a second draft for target-surface, made the self-speculative way: blocks 0 and 3 of the canonical target (`specgate export --layers 0,3`), fine-tuned in three stages (its card). Half the target's parameters; alone it answers few sums right " +
                      `(English arithmetic ${percent(accuracy(shallow, "arithmetic", "en") ?? 0)}), but it starts from the target's own embeddings and writes the canonical forms that target-surface often does not` +
                      `${shallow.asDraft === undefined ? "" : `; it accepts ${percent(shallow.asDraft.overall)} of its greedy drafts for target-surface`}. With it, calibrated SD lengthens acceptance far beyond strict SD without losing accuracy ([BENCHMARKS.md](../BENCHMARKS.md#target-surface-with-draft-shallow-a-half-size-self-speculative-draft)).`,
                  ""
              ])
    ];
}

/** The EAGLE-3 head: what it is and where its figures are (its card is written by hand, not by family cards). */
const eagle3Section: readonly string[] = [
    "## EAGLE-3 head: eagle3",
    "",
    "An EAGLE-3 head for target, outside the table above because it is not a llama model: `eagle3/model.gguf` (llama.cpp's `eagle3` architecture) drafts from the target's own hidden states (the inputs of its layers 1, 2 and 3) rather than from tokens alone. It is trained by `specgate train-eagle3` on the target's own continuations of training-split prompts, over four unrolled drafting steps (docs/model-foundry.md), and loads in `llama-speculative-simple --spec-type draft-eagle3` and in specgate's eagle3 drafter. Its data, steps and acceptance against the d64 draft model on the family prompts are in [its card](eagle3/MODEL_CARD.md).",
    ""
];

/** models/README.md: the members, the family's targets against what was measured, how to rebuild. */
export function renderFamilyReadme(report: FamilyReport): string {
    const byName = new Map(report.members.map((member) => [member.recipe.name, member]));
    const target = byName.get("target");
    const draft = byName.get("draft");
    const skewed = byName.get("draft-skewed");
    const totalBytes = report.members.reduce((sum, member) => sum + member.bytes, 0);
    const arithmetic = accuracy(target, "arithmetic", "en");
    const toolCall = accuracy(target, "tool-call", "en");
    const targetSteps = (target?.stages ?? []).reduce((sum, stage) => sum + stage.steps, 0);
    const targetSeconds = (target?.stages ?? []).reduce((sum, stage) => sum + stage.wallSeconds, 0);
    const lines = [
        "# specgate reference model family",
        "",
        "Small llama-architecture GGUF models trained from scratch on specgate's synthetic corpus, so that acceptance rates, speed-ups and per-language disparity can be measured without downloading anything. They share one byte-level vocabulary, so any of them can draft for any other.",
        "",
        "| model | role | parameters | file | storage | validation loss | acceptance as a draft |",
        "|---|---|---|---|---|---|---|",
        ...report.members.map(
            (member) =>
                `| [${member.recipe.name}](${member.recipe.name}/MODEL_CARD.md) | ${member.recipe.role} | ${member.parameters.toLocaleString("en-US")} | ${(member.bytes / 1e6).toFixed(2)} MB | ${member.storage} | ${member.training?.finalValidationLoss?.toFixed(3) ?? "–"} | ${member.asDraft === undefined ? "–" : `${percent(member.asDraft.overall)} for ${member.asDraft.verifier ?? "target"} (gap ${member.asDraft.languageGapPoints.toFixed(1)} pts)`} |`
        ),
        "",
        `Total size: ${(totalBytes / 1e6).toFixed(1)} MB.`,
        "",
        "## What the family was built to reach",
        "",
        "| target | measured | status |",
        "|---|---|---|",
        `| target English arithmetic accuracy ≥ 90% | ${arithmetic === null ? "–" : percent(arithmetic)} | ${verdict(arithmetic === null ? null : arithmetic >= 0.9)} |`,
        `| target English tool-call accuracy ≥ 90% | ${toolCall === null ? "–" : percent(toolCall)} | ${verdict(toolCall === null ? null : toolCall >= 0.9)} |`,
        `| greedy acceptance target↔draft ≥ 0.6 | ${draft?.asDraft === undefined ? "–" : draft.asDraft.overall.toFixed(3)} | ${verdict(draft?.asDraft === undefined ? null : draft.asDraft.overall >= 0.6)} |`,
        `| draft-skewed language gap ≥ 5 points and larger than draft's | ${skewed?.asDraft === undefined || draft?.asDraft === undefined ? "–" : `${skewed.asDraft.languageGapPoints.toFixed(1)} vs ${draft.asDraft.languageGapPoints.toFixed(1)} points`} | ${verdict(skewed?.asDraft === undefined || draft?.asDraft === undefined ? null : skewed.asDraft.languageGapPoints >= 5 && skewed.asDraft.languageGapPoints > draft.asDraft.languageGapPoints)} |`,
        `| training throughput (reported) | ${report.members
            .filter((member) => member.stages !== undefined)
            .map((member) => `${member.recipe.name} ${throughput(member)}`)
            .join("; ")} tokens/s | reported |`,
        "",
        "Acceptance is accepted / drafted tokens with greedy verification at T = 0 and γ = 4 over the test prompts of the balanced corpus; per language it counts the tasks rendered in every language (arithmetic, tool calls: the same problems in each), and the gap is best minus worst language.",
        "",
        "Training uses llama.cpp's llama-finetune with two patches (scripts/buildLlamaCppTools.sh): gradient accumulators cleared between steps, and a training graph that lets gradients reach `attn_k` and `attn_v` (upstream they went through the KV cache) and `token_embd`. One plain SGD step of the patched tool moves every matrix by exactly −learning rate × the float64 reference gradient (`src/foundry/finetune/llamaFinetuneGradient.test.ts`): the trainer computes the true gradient.",
        "",
        "## Copying: why the target is 1.1M parameters and trained in stages",
        "",
        'A task answer copies numbers and strings from its request ("Set a timer for 56 minutes." → `"minutes":56`). The first families never learned to: trained on the task mixture alone, a 3.5M target almost never got an English tool call or a sum right — it copied words that recur within a question (names, items) but guessed every number. Copying a number needs a positional lookup (an induction head), which forms in a phase change that the task mixture alone did not reach in the time budget. ' +
            'Pure copy drills ("Repeat: 417 Paris 8\\nEcho: 417 Paris 8", `specgate corpus --mixture copy-drill`) reach it on a 1.1M model sooner than on the 3.5M shape, and a model warmed up so keeps and extends it when later stages mix the tasks with drills. ' +
            'So the target is the 1.1M shape: warmed up on drills, trained on the balanced mixture with 30% drills (numbers are copied first, sums are learnt later), then stages with tool calls weighted up, because their arguments were the last thing it copied: search terms and cities first, and last — in a second phase change, three stages later — the two currency codes of a conversion ("Convert 100 USD to JPY."), which must be bound to `from` and `to` by their order; a final stage at a lower rate brings the arithmetic back. Recipe: `src/foundry/family/familyRecipe.ts`; every stage is in the target\'s card; the probes behind it: [docs/history.md](../docs/history.md#the-copy-curriculum). ' +
            `Measured on this family: English arithmetic ${arithmetic === null ? "–" : percent(arithmetic)}, English tool calls ${toolCall === null ? "–" : percent(toolCall)}. ` +
            `The price in time: ${targetSteps.toLocaleString("en-US")} steps, ${(targetSeconds / 60).toFixed(0)} min as run on a 2-core machine, beyond the ≈ 90-minute training budget it was meant to fit; the stages are in the target's card. ` +
            "The price in speed: at 1.1M parameters a forward pass on this CPU costs little more than the per-call overhead, so a draft step is not much cheaper than a target step and speculation does not pay on a CPU (the figures, with llama.cpp's own speculative example beside them: [BENCHMARKS.md](../BENCHMARKS.md#npm-start-on-the-shipped-family)); `specgate bench` reports them against the analytic limit of the same run, which is the number that transfers to a compute-bound target.",
        "",
        ...surfaceSection(byName.get("target-surface"), byName.get("draft-surface"), byName.get("draft-shallow")),
        ...eagle3Section,
        "## Rebuild",
        "",
        "```sh",
        "scripts/trainFamily.sh   # builds llama.cpp's tools offline, the corpora, trains and evaluates everything",
        "```",
        "",
        "Steps: `scripts/buildLlamaCppTools.sh` (llama-finetune and llama-quantize from the llama.cpp bundled with node-llama-cpp, with two patches), `specgate family build --out models` (corpora with a fixed seed, `specgate train` for each trained member, `specgate export --type q8_0` for target-q8_0), `specgate family cards --models models` (evaluation, these cards, family.json).",
        ""
    ];
    return lines.join("\n");
}
