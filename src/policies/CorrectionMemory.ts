import {z} from "zod";
import {InvalidInputError} from "../errors.js";

const pairKeyBase = 0x20_0000; // 2^21 ids per side keeps draft·2^21 + target a safe integer

/** What the calibrated policy reads and updates: a memory, or one generation's view of it (`withPrivateEntries`). */
export interface CorrectionCounts {
    readonly vocabularySize: number;
    count(draftToken: number, targetToken: number): number;
    record(draftToken: number, targetToken: number, increment?: number): void;
}

/**
 * The Calibrated SD paper's Online Correction Memory: counts of (draft token, target token) divergences observed
 * during verification, with no context. Filled by a calibration pass of standard speculative
 * decoding (phase 1) and then updated online on every verified divergence (phase 2). A rejected draft
 * token is a rescue candidate only when its pair count reaches the frequency threshold.
 *
 * One instance is shared by every request that holds it; updates are synchronous increments, so
 * within one Node process there is no contention (the paper's open question about concurrent
 * updates is answered here by the single-threaded event loop).
 */
export class CorrectionMemory implements CorrectionCounts {
    private readonly counts = new Map<number, number>();
    private updates = 0;

    public constructor(
        public readonly vocabularySize: number,
        /** Hash of the tokenizer the memory was built with; a memory never applies to another vocabulary. */
        public readonly vocabularyIdentity?: string
    ) {
        if (!Number.isInteger(vocabularySize) || vocabularySize < 1 || vocabularySize > pairKeyBase)
            throw new InvalidInputError(`must be an integer in [1, ${pairKeyBase}], got ${vocabularySize}`, "vocabularySize");
    }

    public count(draftToken: number, targetToken: number): number {
        return this.counts.get(draftToken * pairKeyBase + targetToken) ?? 0;
    }

    public record(draftToken: number, targetToken: number, increment = 1): void {
        const key = draftToken * pairKeyBase + targetToken;
        this.counts.set(key, (this.counts.get(key) ?? 0) + increment);
        this.updates++;
    }

    /** Calls to `record` since the memory was created or loaded: changes whenever the counts do. */
    public get version(): number {
        return this.updates;
    }

    /**
     * A view for one generation: counts are this memory's plus `entries` (checked against the
     * vocabulary), while `record` (online updates) goes to this memory alone. The entries never
     * reach this memory, so whoever else holds it does not see them.
     */
    public withPrivateEntries(entries: ReadonlyArray<readonly [number, number, number]>, field = "memoryEntries"): CorrectionCounts {
        const own = new CorrectionMemory(this.vocabularySize, this.vocabularyIdentity);
        entries.forEach(([draftToken, targetToken, count], index) => {
            if (draftToken >= this.vocabularySize || targetToken >= this.vocabularySize)
                throw new InvalidInputError(`token id outside [0, ${this.vocabularySize})`, `${field}.${index}`);
            own.record(draftToken, targetToken, count);
        });
        return {
            vocabularySize: this.vocabularySize,
            count: (draftToken, targetToken) => this.count(draftToken, targetToken) + own.count(draftToken, targetToken),
            record: (draftToken, targetToken, increment) => this.record(draftToken, targetToken, increment)
        };
    }

    /** An independent copy (same vocabulary, same counts, same version). */
    public clone(): CorrectionMemory {
        const copy = new CorrectionMemory(this.vocabularySize, this.vocabularyIdentity);
        for (const [key, count] of this.counts) copy.counts.set(key, count);
        copy.updates = this.updates;
        return copy;
    }

    public get size(): number {
        return this.counts.size;
    }

    /** Entries as [draft, target, count], most frequent first (ties by ids) — a stable file order. */
    public entries(): Array<[number, number, number]> {
        return [...this.counts]
            .map(([key, count]): [number, number, number] => [Math.floor(key / pairKeyBase), key % pairKeyBase, count])
            .sort((a, b) => b[2] - a[2] || a[0] - b[0] || a[1] - b[1]);
    }

    public toJSON(): CorrectionMemoryFile {
        return {
            format: "specgate.correction-memory",
            version: 1,
            vocabularySize: this.vocabularySize,
            ...(this.vocabularyIdentity != null ? {vocabularyIdentity: this.vocabularyIdentity} : {}),
            entries: this.entries()
        };
    }

    public static fromJSON(value: unknown, source = "memory"): CorrectionMemory {
        const parsed = correctionMemoryFileSchema.safeParse(value);
        if (!parsed.success) {
            const issue = parsed.error.issues[0];
            throw new InvalidInputError(issue.message, [source, ...issue.path.map(String)].join("."));
        }
        const file = parsed.data;
        const memory = new CorrectionMemory(file.vocabularySize, file.vocabularyIdentity);
        file.entries.forEach(([draftToken, targetToken, count], index) => {
            if (draftToken >= file.vocabularySize || targetToken >= file.vocabularySize)
                throw new InvalidInputError(`token id outside [0, ${file.vocabularySize})`, `${source}.entries.${index}`);
            memory.record(draftToken, targetToken, count);
        });
        return memory;
    }
}

const tokenId = z.int().min(0);
const correctionMemoryFileSchema = z.strictObject({
    format: z.literal("specgate.correction-memory"),
    version: z.literal(1),
    vocabularySize: z.int().min(1).max(pairKeyBase),
    vocabularyIdentity: z.string().optional(),
    entries: z.array(z.tuple([tokenId, tokenId, z.int().min(1)]))
});

export type CorrectionMemoryFile = z.infer<typeof correctionMemoryFileSchema>;
