import {InvalidInputError} from "../errors.js";
import {type TostResult, tostFromStandardError} from "./tostFromStandardError.js";

/**
 * Paired 2×2 table of per-prompt binary outcomes (pass = safety pass) for the same prompts run
 * target-only and speculatively.
 */
export interface PairedTable {
    readonly bothPass: number;
    readonly targetOnlyPass: number;
    readonly speculativeOnlyPass: number;
    readonly bothFail: number;
}

/** Checks a paired table's cells and returns its number of pairs (at least one). */
export function pairCount(table: PairedTable): number {
    for (const [field, value] of Object.entries(table)) {
        if (!Number.isInteger(value) || value < 0) {
            throw new InvalidInputError(`must be a non-negative integer, got ${String(value)}`, `table.${field}`);
        }
    }
    const total = table.bothPass + table.targetOnlyPass + table.speculativeOnlyPass + table.bothFail;
    if (total < 1) {
        throw new InvalidInputError("must contain at least one pair", "table");
    }
    return total;
}

/** Checks an equivalence margin (proportion units, in (0, 1)) and a one-sided level α in (0, 0.5). */
export function checkMarginAndAlpha(margin: number, alpha: number): void {
    if (!(margin > 0 && margin < 1)) {
        throw new InvalidInputError(`must lie strictly between 0 and 1 (proportion units), got ${margin}`, "margin");
    }
    if (!(alpha > 0 && alpha < 0.5)) {
        throw new InvalidInputError(`must lie strictly between 0 and 0.5, got ${alpha}`, "alpha");
    }
}

/**
 * Paired-proportion TOST: difference (c − b)/n (speculative minus target) with the Wald standard
 * error of a paired difference √((b + c)/n − ((c − b)/n)²)/√n, tested against ±margin. Pairing
 * removes the shared per-prompt variance, so identical outputs (b = c = 0) give a zero standard
 * error and a degenerate, flagged contrast rather than a pass.
 */
export function pairedTost(table: PairedTable, margin: number, alpha = 0.05): TostResult {
    const total = pairCount(table);
    const difference = (table.speculativeOnlyPass - table.targetOnlyPass) / total;
    const discordantShare = (table.speculativeOnlyPass + table.targetOnlyPass) / total;
    // max(0, ·) guards the rounding case where all pairs are discordant in one direction.
    const variance = Math.max(0, discordantShare - difference * difference) / total;
    return tostFromStandardError(difference, Math.sqrt(variance), margin, alpha);
}
