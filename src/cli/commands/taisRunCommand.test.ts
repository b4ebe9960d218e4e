import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {parse} from "yaml";
import {parseCountsCsv} from "../../audits/tais/parseCountsCsv.js";
import type {TaisSampleRow} from "../../audits/tais/TaisSampleRow.js";
import type {Completion, CompletionRequest, DecodePath} from "../../decodePaths/DecodePath.js";
import {DecodePathError, PromptExceedsContextError} from "../../errors.js";
import type {TaisCard} from "../../audits/tais/taisCard.js";
import type {VerdictRule} from "../../audits/tais/computeTais.js";
import {runTaisRunCommand} from "./taisRunCommand.js";

const REFUSAL = "I'm sorry, but I can't help with that.";
const COMPLIANCE = "Sure, here is how.";
let directory: string;
let battery: string;

/** A scripted decode path: complies on the listed prompt numbers, refuses otherwise; can fail after a budget of calls. */
function scriptedPath(name: string, complyOn: Set<number>, options: {failAfter?: number} = {}): DecodePath & {calls: number} {
    const path = {
        name,
        calls: 0,
        describe: () => ({kind: "openai" as const, parameters: {name, complyOn: [...complyOn]}, files: {}}),
        complete: async (request: CompletionRequest): Promise<Completion> => {
            path.calls++;
            if (options.failAfter !== undefined && path.calls > options.failAfter) throw new DecodePathError("network", "connection reset");
            const number = Number(/goal (\d+)/.exec(request.prompt ?? "")![1]);
            return {text: complyOn.has(number) ? COMPLIANCE : REFUSAL, finishReason: "stop"};
        },
        dispose: async () => {}
    };
    return path;
}

const range = (from: number, to: number) => new Set(Array.from({length: to - from}, (_value, index) => from + index));

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-tais-run-"));
    battery = join(directory, "battery.jsonl");
    await writeFile(
        battery,
        Array.from({length: 200}, (_value, index) =>
            JSON.stringify({id: `adv-${index}`, task: "advbench", prompt: `goal ${index}`, scorer: "refusal"})
        ).join("\n")
    );
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("specgate tais run", () => {
    it("finds identical arms equivalent with strong byte identity and writes the counts CSV", async () => {
        const counts = join(directory, "counts.csv");
        const outcome = await runTaisRunCommand({battery, a: "A", b: "B", counts, ledger: join(directory, "same.jsonl")}, async (spec) =>
            scriptedPath(spec, range(0, 4))
        );
        expect(outcome.stderr).toBe("");
        expect(outcome.exitCode).toBe(0);
        const card = parse(outcome.stdout) as {tais_card: TaisCard["tais_card"]; tais_run: {cells: {tasks: {bothFail: number}[]}[]}};
        expect(card.tais_card.overall_classification).toBe("equivalent");
        const [cell] = card.tais_card.cells;
        // The paired verdict: 200 identical pairs, no discordant pair, p = 0.00666 (the unpaired Wald TOST fails these counts).
        expect(card.tais_card.equivalence_test).toMatch(/^paired TOST: exact unconditional test/);
        expect(cell.validity_gate).toMatchObject({
            byte_identity_rate: 1,
            byte_identity: "200 / 200 paired prompts",
            byte_identity_flag: "strong"
        });
        expect(cell.scalar_summary).toMatchObject({classification: "equivalent", grade: "strong null", max_abs_h: 0});
        expect(cell.per_task_results[0]).toMatchObject({
            tost_p: 0.00666,
            mcnemar_exact_p: 1,
            discordant_pairs: {target_only_pass: 0, speculative_only_pass: 0}
        });
        expect(cell.cell_identity).toMatchObject({temperature: 0, safety_battery: ["advbench"]});
        expect(card.tais_run.cells[0].tasks[0]).toMatchObject({bothFail: 4});
        // The paired form keeps the pairing, so `tais compute` on it reaches this verdict.
        expect(await readFile(counts, "utf8")).toBe(
            "cell_id,task,n_pairs,n_both_pass,n_target_only_pass,n_speculative_only_pass\nT=0,advbench,200,196,0,0\n"
        );
        const [countsCell] = parseCountsCsv(await readFile(counts, "utf8"));
        expect(countsCell.tasks[0].paired).toEqual({bothPass: 196, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 4});
    });

    it("finds a speculative arm that complies more often divergent, with a small McNemar p", async () => {
        const outcome = await runTaisRunCommand({battery, a: "A", b: "B", format: "json"}, async (spec) =>
            scriptedPath(spec, spec === "A" ? range(0, 4) : range(0, 34))
        );
        expect(outcome.exitCode).toBe(1);
        const card = JSON.parse(outcome.stdout) as {tais_card: TaisCard["tais_card"]};
        expect(card.tais_card.overall_classification).toBe("divergent");
        const [cell] = card.tais_card.cells;
        expect(cell.validity_gate.byte_identity_flag).toBe("moderate");
        expect(cell.scalar_summary.grade).toBe("not null-consistent");
        expect(cell.per_task_results[0].discordant_pairs?.target_only_pass).toBe(30);
        expect(cell.per_task_results[0].mcnemar_exact_p).toBeLessThan(1e-8);
    });

    it("calls 40 byte-identical pairs inconclusive (exit 3) with the pairs needed; the paper's classes call them divergent", async () => {
        const small = join(directory, "small.jsonl");
        await writeFile(
            small,
            Array.from({length: 40}, (_value, index) =>
                JSON.stringify({id: `adv-${index}`, task: "advbench", prompt: `goal ${index}`, scorer: "refusal"})
            ).join("\n")
        );
        const run = (verdicts: VerdictRule) =>
            runTaisRunCommand({battery: small, a: "A", b: "B", format: "json", verdicts}, async (spec) => scriptedPath(spec, range(0, 4)));
        const threeWay = await run("three-way");
        expect(threeWay.exitCode).toBe(3);
        const [cell] = (JSON.parse(threeWay.stdout) as {tais_card: TaisCard["tais_card"]}).tais_card.cells;
        expect(cell.scalar_summary).toMatchObject({classification: "inconclusive", grade: "inconclusive", max_abs_h: 0});
        expect(cell.validity_gate).toMatchObject({
            byte_identity_rate: 1,
            underpowered_tasks: ["advbench"],
            inconclusive_tasks: ["advbench"]
        });
        expect(cell.per_task_results[0]).toMatchObject({verdict: "inconclusive", pairs_to_decide: {equivalence: 99, decide: 99}});
        const paper = await run("paper");
        expect(paper.exitCode).toBe(1);
        const [paperCell] = (JSON.parse(paper.stdout) as {tais_card: TaisCard["tais_card"]}).tais_card.cells;
        expect(paperCell.scalar_summary).toMatchObject({classification: "divergent", max_abs_h: 0});
    });

    it("lets one run at a time use a ledger: the second exits 2 naming the holder, and no sample is recorded twice", async () => {
        const ledger = join(directory, "contended.jsonl");
        const run = () => runTaisRunCommand({battery, a: "A", b: "B", ledger}, async (spec) => scriptedPath(spec, range(0, 4)));
        const outcomes = await Promise.all([run(), run()]);
        expect(outcomes.map((outcome) => outcome.exitCode).sort()).toEqual([0, 2]);
        expect(outcomes.find((outcome) => outcome.exitCode === 2)!.stderr).toMatch(
            new RegExp(`^specgate tais run: --ledger: .*contended\\.jsonl is in use by process ${process.pid} \\(since `)
        );
        const rows = (await readFile(ledger, "utf8")).trim().split("\n").slice(1);
        expect(rows).toHaveLength(200);
        // The lock is gone with the run, so a rerun resumes (here: everything is already recorded).
        expect((await run()).exitCode).toBe(0);
    });

    it("resumes from the ledger after a crash without losing or duplicating samples", async () => {
        const ledger = join(directory, "resume.jsonl");
        const crashing = await runTaisRunCommand({battery, a: "A", b: "B", ledger, concurrency: "1"}, async (spec) =>
            scriptedPath(spec, range(0, 4), spec === "B" ? {failAfter: 120} : {})
        );
        expect(crashing.exitCode).toBe(2);
        expect(crashing.stderr).toMatch(/connection reset/);
        const rowsAfterCrash = (await readFile(ledger, "utf8")).trim().split("\n").length - 1;
        expect(rowsAfterCrash).toBe(120);

        const paths: (DecodePath & {calls: number})[] = [];
        const resumed = await runTaisRunCommand({battery, a: "A", b: "B", ledger}, async (spec) => {
            const path = scriptedPath(spec, range(0, 4));
            paths.push(path);
            return path;
        });
        expect(resumed.exitCode).toBe(0);
        expect(paths.map((path) => path.calls)).toEqual([80, 80]);
        const rows = (await readFile(ledger, "utf8"))
            .trim()
            .split("\n")
            .slice(1)
            .map((line) => JSON.parse(line) as TaisSampleRow);
        expect(rows).toHaveLength(200);
        expect(new Set(rows.map((row) => row.sampleId)).size).toBe(200);
        expect((parse(resumed.stdout) as {tais_run: {resumed_from_ledger: number}}).tais_run.resumed_from_ledger).toBe(120);
    });

    it("reports T > 0 regimes as separate cells and rejects bad input", async () => {
        const outcome = await runTaisRunCommand(
            {battery, a: "A", b: "B", temperatures: "0,0.7", seeds: "1,2", format: "json"},
            async (spec) => scriptedPath(spec, range(0, 4))
        );
        const card = JSON.parse(outcome.stdout) as {
            tais_run: {samples: number; cells: {cell_id: string; seeds: number[]; pairs: number}[]};
        };
        expect(card.tais_run.samples).toBe(600);
        expect(card.tais_run.cells.map((cell) => [cell.cell_id, cell.seeds, cell.pairs])).toEqual([
            ["T=0", [1], 200],
            ["T=0.7", [1, 2], 400]
        ]);
        // The T = 0.7 cell is screened and shown but does not gate: no recalibrated h* was given.
        const cells = (JSON.parse(outcome.stdout) as {tais_card: TaisCard["tais_card"]}).tais_card.cells;
        expect(cells.map((cell) => [cell.cell_identity.temperature, cell.gates_verdict, cell.validity_gate.byte_identity_flag])).toEqual([
            [0, true, "strong"],
            [0.7, false, null]
        ]);
        // Two seeds of one prompt are one unit: the T = 0.7 task is tested on 200 prompts, not 400 pairs.
        expect(cells[1].per_task_results[0].n_per_arm).toBe(200);
        expect((await runTaisRunCommand({a: "A", b: "B"}, async (spec) => scriptedPath(spec, range(0, 1)))).exitCode).toBe(2);
        expect(
            (await runTaisRunCommand({battery, a: "A", b: "B", temperatures: "hot"}, async (spec) => scriptedPath(spec, range(0, 1))))
                .stderr
        ).toMatch(/--temperatures/);
    });
    it("skips and counts samples whose prompt does not fit an arm's context; more than half skipped is insufficient data, exit 3", async () => {
        // Prompts numbered `from` and above are "too long": both arms refuse them as a decode path does.
        const tooLongFrom = (from: number) => async (spec: string) => {
            const path = scriptedPath(spec, range(0, 4));
            const complete = path.complete;
            path.complete = async (request) => {
                if (Number(/goal (\d+)/.exec(request.prompt ?? "")![1]) >= from) throw new PromptExceedsContextError(300, 256);
                return complete(request);
            };
            return path;
        };
        const half = await runTaisRunCommand({battery, a: "A", b: "B", format: "json"}, tooLongFrom(100));
        expect(half.stderr).toMatch(
            /^specgate tais run: skipped 100 of 200 sample\(s\) whose prompt does not fit an arm's context with --max-tokens 128/
        );
        expect(half.stderr).not.toMatch(/INSUFFICIENT DATA/);
        expect((JSON.parse(half.stdout) as {tais_run: {samples: number; skipped: unknown[]}}).tais_run).toMatchObject({samples: 100});
        const most = await runTaisRunCommand({battery, a: "A", b: "B", format: "json"}, tooLongFrom(99));
        expect(most.exitCode).toBe(3);
        expect(most.stderr).toMatch(/INSUFFICIENT DATA: 101 of 200 sample\(s\) were skipped \(more than half\)/);
        expect((JSON.parse(most.stdout) as {tais_run: {skipped: unknown[]}}).tais_run.skipped).toHaveLength(101);
    });
});
