import {type FileHandle, open, readFile, truncate} from "node:fs/promises";
import {OperationQueue} from "../../backend/OperationQueue.js";
import {LedgerMismatchError, MalformedRowError} from "../../errors.js";
import {canonicalJson} from "../../fingerprint/canonicalJson.js";
import {LedgerLock} from "./LedgerLock.js";

const LEDGER_FORMAT = "specgate-sample-ledger";

/** Every ledger row names the sample it records; the rest of the row is the caller's. */
export interface LedgerRow {
    readonly sampleId: string;
}

/**
 * An append-only JSONL ledger of per-sample results, one line per sample, each written with one
 * write call and fsync'd before `append` resolves, so a crash loses at most the row being written.
 * The first line records the run configuration (`header`); reopening with a different one is a
 * LedgerMismatchError, because resuming would mix two runs in one ledger.
 *
 * Resuming: `open` reads the rows already there, cuts off a torn last line (a crash mid-write
 * leaves a line without its newline), and `has` tells the caller which samples are done, so a
 * resumed run neither loses nor duplicates rows. A malformed line anywhere else is corruption, not
 * a crash, and is a MalformedRowError naming the line.
 *
 * One writer at a time: `open` takes an exclusive lock (LedgerLock, `<path>.lock`) before reading,
 * so a second run on the same ledger fails with LedgerLockedError naming the holder instead of
 * appending the same samples again; `close` releases it.
 */
export class SampleLedger<Row extends LedgerRow> {
    private readonly queue = new OperationQueue();
    private readonly done: Set<string>;

    private constructor(
        public readonly path: string,
        private readonly lock: LedgerLock,
        private readonly handle: FileHandle,
        private readonly existing: Row[],
        /** Bytes cut from a torn last line when the ledger was opened (0 when none). */
        public readonly discardedBytes: number
    ) {
        this.done = new Set(existing.map((row) => row.sampleId));
    }

    public static async open<Row extends LedgerRow>(path: string, header: unknown, field = "ledger"): Promise<SampleLedger<Row>> {
        const lock = await LedgerLock.acquire(path, field);
        try {
            return await SampleLedger.openLocked<Row>(path, header, lock);
        } catch (error) {
            await lock.release();
            throw error;
        }
    }

    private static async openLocked<Row extends LedgerRow>(path: string, header: unknown, lock: LedgerLock): Promise<SampleLedger<Row>> {
        let text = "";
        try {
            text = await readFile(path, "utf8");
        } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        }
        const completeLength = text.lastIndexOf("\n") + 1;
        const discardedBytes = Buffer.byteLength(text.slice(completeLength));
        if (discardedBytes > 0) await truncate(path, Buffer.byteLength(text.slice(0, completeLength)));
        const lines = text.slice(0, completeLength).split("\n").slice(0, -1);
        const rows: Row[] = [];
        if (lines.length > 0) {
            const first = parseLine<{format?: string; header?: unknown}>(lines[0], path, 1);
            if (first.format !== LEDGER_FORMAT)
                throw new MalformedRowError(path, 1, `not a specgate ledger (format is ${String(first.format)})`);
            if (canonicalJson(first.header) !== canonicalJson(header))
                throw new LedgerMismatchError(
                    `${path} was written by a run with a different configuration; use a new ledger file`,
                    "ledger"
                );
            const seen = new Map<string, number>();
            lines.slice(1).forEach((line, index) => {
                const row = parseLine<Row>(line, path, index + 2);
                if (typeof row.sampleId !== "string") throw new MalformedRowError(path, index + 2, "row has no string sampleId");
                const previous = seen.get(row.sampleId);
                if (previous !== undefined)
                    throw new MalformedRowError(path, index + 2, `sample ${row.sampleId} already recorded on line ${previous}`);
                seen.set(row.sampleId, index + 2);
                rows.push(row);
            });
        }
        const handle = await open(path, "a");
        const ledger = new SampleLedger<Row>(path, lock, handle, rows, discardedBytes);
        if (lines.length === 0) await ledger.writeLine({format: LEDGER_FORMAT, version: 1, header});
        return ledger;
    }

    /** Rows recorded so far (read at open plus appended since), in file order. */
    public get rows(): readonly Row[] {
        return this.existing;
    }

    public has(sampleId: string): boolean {
        return this.done.has(sampleId);
    }

    /** Appends one row durably; appending a sample twice is an error rather than a silent duplicate. */
    public append(row: Row): Promise<void> {
        return this.queue.run(async () => {
            if (this.done.has(row.sampleId)) throw new LedgerMismatchError(`sample ${row.sampleId} is already in ${this.path}`, "sampleId");
            await this.writeLine(row);
            this.done.add(row.sampleId);
            this.existing.push(row);
        });
    }

    public async close(): Promise<void> {
        try {
            await this.queue.run(() => this.handle.close());
        } finally {
            await this.lock.release();
        }
    }

    private async writeLine(value: unknown): Promise<void> {
        await this.handle.write(`${JSON.stringify(value)}\n`);
        await this.handle.datasync();
    }
}

function parseLine<T>(line: string, path: string, lineNumber: number): T {
    try {
        return JSON.parse(line) as T;
    } catch (error) {
        throw new MalformedRowError(path, lineNumber, `not valid JSON (${(error as Error).message})`);
    }
}
