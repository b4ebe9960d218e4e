import {mkdtemp, readFile, rm, stat, truncate, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {spawnSync} from "node:child_process";
import {hostname} from "node:os";
import {LedgerLockedError, LedgerMismatchError, MalformedRowError} from "../../errors.js";
import {SampleLedger} from "./SampleLedger.js";

interface Row {
    readonly sampleId: string;
    readonly text: string;
}

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-ledger-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

const header = {battery: "advbench@5", a: "embedded:target=t.gguf", b: "embedded:target=t.gguf,draft=d.gguf"};
const ids = ["s1", "s2", "s3", "s4", "s5"];

/** The resumable loop a run uses: skip what the ledger has, append the rest. */
async function runAll(ledger: SampleLedger<Row>, stopAfter = Infinity): Promise<number> {
    let written = 0;
    for (const id of ids) {
        if (ledger.has(id)) continue;
        if (written === stopAfter) break;
        await ledger.append({sampleId: id, text: `output of ${id} — ünïcode`});
        written++;
    }
    return written;
}

describe("SampleLedger", () => {
    it("resumes after a crash mid-write with no lost or duplicated rows", async () => {
        const path = join(directory, "crash.jsonl");
        const first = await SampleLedger.open<Row>(path, header);
        expect(await runAll(first, 4)).toBe(4);
        await first.close();
        // Simulate a crash while writing row s4: only part of its line reached the disk.
        const size = (await stat(path)).size;
        const lastLine = `${JSON.stringify({sampleId: "s4", text: "output of s4 — ünïcode"})}\n`;
        await truncate(path, size - Math.floor(Buffer.byteLength(lastLine) / 2));

        const resumed = await SampleLedger.open<Row>(path, header);
        expect(resumed.discardedBytes).toBeGreaterThan(0);
        expect(resumed.rows.map((row) => row.sampleId)).toEqual(["s1", "s2", "s3"]);
        expect(await runAll(resumed)).toBe(2);
        await resumed.close();

        const lines = (await readFile(path, "utf8")).split("\n");
        expect(lines.at(-1)).toBe("");
        const rows = lines.slice(1, -1).map((line) => JSON.parse(line) as Row);
        expect(rows.map((row) => row.sampleId)).toEqual(ids);
        expect(rows[3].text).toBe("output of s4 — ünïcode");

        const again = await SampleLedger.open<Row>(path, header);
        expect(again.discardedBytes).toBe(0);
        expect(await runAll(again)).toBe(0);
        await again.close();
    });

    it("survives a crash while the header itself was being written", async () => {
        const path = join(directory, "torn-header.jsonl");
        await writeFile(path, '{"format":"specgate-sample-le');
        const ledger = await SampleLedger.open<Row>(path, header);
        expect(ledger.rows).toEqual([]);
        await ledger.append({sampleId: "s1", text: "x"});
        await ledger.close();
        expect((await readFile(path, "utf8")).split("\n")).toHaveLength(3);
    });

    it("refuses a different configuration, a duplicate append and a corrupt middle line", async () => {
        const path = join(directory, "checks.jsonl");
        const ledger = await SampleLedger.open<Row>(path, header);
        await ledger.append({sampleId: "s1", text: "x"});
        await expect(ledger.append({sampleId: "s1", text: "y"})).rejects.toThrow(LedgerMismatchError);
        await ledger.close();
        await expect(SampleLedger.open<Row>(path, {...header, b: "other"})).rejects.toThrow(LedgerMismatchError);
        const text = await readFile(path, "utf8");
        await writeFile(path, `${text}not json\n${JSON.stringify({sampleId: "s2", text: "z"})}\n`);
        const error = await SampleLedger.open<Row>(path, header).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(MalformedRowError);
        expect(error).toMatchObject({line: 3});
    });

    it("lets one process at a time hold a ledger: a second open names the holder, close releases it", async () => {
        const path = join(directory, "locked.jsonl");
        const first = await SampleLedger.open<Row>(path, header);
        await expect(SampleLedger.open<Row>(path, header)).rejects.toThrow(LedgerLockedError);
        await expect(SampleLedger.open<Row>(path, header)).rejects.toThrow(`${path} is in use by process ${process.pid} (since `);
        await first.append({sampleId: "s1", text: "one"});
        await first.close();
        await expect(stat(`${path}.lock`)).rejects.toMatchObject({code: "ENOENT"});
        const second = await SampleLedger.open<Row>(path, header);
        expect(second.rows.map((row) => row.sampleId)).toEqual(["s1"]);
        await second.close();
    });

    it("takes over a lock left by a process that no longer runs, or cut short before it was written", async () => {
        const path = join(directory, "stale.jsonl");
        const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
        for (const content of [JSON.stringify({pid: dead, host: hostname(), since: "2026-01-01T00:00:00.000Z"}), ""]) {
            await writeFile(`${path}.lock`, content);
            const ledger = await SampleLedger.open<Row>(path, header);
            expect(JSON.parse(await readFile(`${path}.lock`, "utf8"))).toMatchObject({pid: process.pid, host: hostname()});
            await ledger.close();
        }
    });

    it("does not guess about a lock held on another host", async () => {
        const path = join(directory, "remote.jsonl");
        await writeFile(`${path}.lock`, JSON.stringify({pid: 1, host: "other-host.example", since: "2026-01-01T00:00:00.000Z"}));
        await expect(SampleLedger.open<Row>(path, header)).rejects.toThrow(
            `${path} is in use by process 1 on host other-host.example (since 2026-01-01T00:00:00.000Z); wait for that run to finish, or delete ${path}.lock if it is gone`
        );
        await expect(stat(path)).rejects.toMatchObject({code: "ENOENT"});
    });
});
