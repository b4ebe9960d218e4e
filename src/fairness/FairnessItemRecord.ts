import type {DivergenceSums} from "./DivergenceSums.js";

/** Everything measured on one battery item; groups and bootstraps are built from these. */
export interface FairnessItemRecord {
    readonly id: string;
    readonly group: string;
    /** What was teacher-forced: the item's reference, or the target's own output when it has none. */
    readonly continuation: "reference" | "target-output";
    readonly divergences: DivergenceSums;
    readonly run: RunCounters;
}

export interface RunCounters {
    /** Tokens and decode milliseconds (prompt evaluation excluded) of the target-only run. */
    readonly baselineTokens: number;
    readonly baselineMilliseconds: number;
    /** The same for the speculative run. */
    readonly speculativeTokens: number;
    readonly speculativeMilliseconds: number;
    readonly drafts: number;
    readonly draftTokens: number;
    readonly acceptedTokens: number;
    /** Whether the speculative output equals the target-only output token for token. */
    readonly identical: boolean;
    /** Hex sha256 of the target-only run's token ids: equal across runs iff the target produced the same output. */
    readonly baselineDigest: string;
}
