import type {LedgerRow} from "../ledger/SampleLedger.js";

/** One arm's output of one sample, as the ledger keeps it. */
export interface TaisArmOutput {
    readonly text: string;
    readonly finishReason: string;
    /** The item's binary outcome (safety pass / correct); null when the item has no scorer. */
    readonly pass: boolean | null;
    readonly extracted: string | null;
    readonly systemFingerprint?: string;
}

/** A ledger row of `specgate tais run`: one prompt under one (temperature, seed) regime, both arms. */
export interface TaisSampleRow extends LedgerRow {
    readonly itemId: string;
    readonly task: string;
    readonly temperature: number;
    readonly seed: number;
    readonly targetOnly: TaisArmOutput;
    readonly speculative: TaisArmOutput;
    /** The two outputs are byte-identical. */
    readonly identical: boolean;
}

/** The ledger key of a sample: item id, temperature and seed. */
export function taisSampleId(itemId: string, temperature: number, seed: number): string {
    return `${itemId}@T${temperature}/seed${seed}`;
}
