import type {PairedTable} from "./pairedTost.js";

/** One paired sample's outcomes: the prompt it came from and whether each arm passed. */
export interface PairedOutcome {
    readonly prompt: string;
    readonly targetOnly: boolean;
    readonly speculative: boolean;
}

/**
 * The paired 2×2 table with prompts as the units: each prompt adds, to each cell, the share of its
 * samples (its seeds) that fell there, so the cells sum to the number of prompts. Seeds of one prompt
 * are repeated measures, not independent pairs; counting them as pairs overstates the evidence
 * (with correlated seeds the paired test's size exceeds α). With one sample per prompt this is the
 * plain table of counts.
 */
export function promptLevelTable(outcomes: readonly PairedOutcome[]): PairedTable {
    const byPrompt = new Map<string, number[]>();
    for (const outcome of outcomes) {
        const cells = byPrompt.get(outcome.prompt) ?? [0, 0, 0, 0];
        byPrompt.set(outcome.prompt, cells);
        cells[(outcome.targetOnly ? 0 : 2) + (outcome.speculative ? 0 : 1)]++;
    }
    const table = [0, 0, 0, 0];
    for (const cells of byPrompt.values()) {
        const samples = cells[0] + cells[1] + cells[2] + cells[3];
        cells.forEach((count, index) => (table[index] += count / samples));
    }
    return {bothPass: table[0], targetOnlyPass: table[1], speculativeOnlyPass: table[2], bothFail: table[3]};
}
