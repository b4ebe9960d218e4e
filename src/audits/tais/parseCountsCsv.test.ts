import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../../errors.js";
import {parseCountsCsv} from "./parseCountsCsv.js";

const HEADER = "cell_id,task,arm,n_total,n_safety_pass";

function errorOf(text: string): InvalidInputError {
    try {
        parseCountsCsv(text);
    } catch (error) {
        expect(error).toBeInstanceOf(InvalidInputError);
        return error as InvalidInputError;
    }
    throw new Error("expected parseCountsCsv to throw");
}

describe("parseCountsCsv", () => {
    it("pairs arms per task and keeps first-appearance order", () => {
        const cells = parseCountsCsv(
            [
                HEADER,
                "cellB,advbench,speculative,200,156",
                "cellB,advbench,target_only,200,158",
                "cellA,mmlu,target_only,100,100",
                "cellA,mmlu,speculative,100,100"
            ].join("\n")
        );
        expect(cells.map((cell) => cell.cellId)).toEqual(["cellB", "cellA"]);
        expect(cells[0].tasks[0]).toEqual({
            task: "advbench",
            targetOnly: {total: 200, safetyPasses: 158, line: 3},
            speculative: {total: 200, safetyPasses: 156, line: 2}
        });
    });

    it("accepts any column order, extra columns, spaces, a BOM, CRLF and blank lines", () => {
        const cells = parseCountsCsv(
            "\uFEFFnote, n_safety_pass ,arm,task,cell_id,n_total\r\nx, 5 ,target_only,t,c,10\r\n\r\ny,6,speculative,t,c,10\r\n"
        );
        expect(cells[0].tasks[0].targetOnly).toEqual({total: 10, safetyPasses: 5, line: 2});
        expect(cells[0].tasks[0].speculative).toEqual({total: 10, safetyPasses: 6, line: 4});
    });

    it("names the header line for missing columns", () => {
        const error = errorOf("cell_id,task,arm,n_total\nc,t,target_only,10");
        expect(error.field).toBe("line 1");
        expect(error.message).toMatch(/line 1: missing column n_safety_pass/);
    });

    it("rejects an empty file and a header without rows", () => {
        expect(errorOf("").message).toMatch(/line 1: the file is empty/);
        expect(errorOf(`${HEADER}\n`).message).toMatch(/line 1: .*no data rows/);
    });

    it("names the line of a duplicate (cell, task, arm) row and the first one", () => {
        const error = errorOf([HEADER, "c,t,target_only,10,5", "c,t,speculative,10,5", "c,t,target_only,10,6"].join("\n"));
        expect(error.message).toBe('line 4: duplicate row for cell "c", task "t", arm target_only (first given on line 2)');
    });

    it("names the line of an unknown arm", () => {
        const error = errorOf([HEADER, "c,t,target_only,10,5", "c,t,draft,10,5"].join("\n"));
        expect(error.message).toMatch(/^line 3: unknown arm "draft"; expected one of target_only, speculative$/);
    });

    it.each([
        ["3.5", "n_total", /line 2: n_total must be a non-negative integer, got "3.5"/],
        ["1e3", "n_total", /line 2: n_total must be a non-negative integer, got "1e3"/],
        ["-4", "n_total", /line 2: n_total must not be negative, got -4/],
        ["ten", "n_total", /line 2: n_total must be a non-negative integer/]
    ])("names the line of a bad count %s", (value, _column, pattern) => {
        expect(errorOf(`${HEADER}\nc,t,target_only,${value},1\nc,t,speculative,10,1`).message).toMatch(pattern);
    });

    it("names the line of a bad n_safety_pass", () => {
        expect(errorOf(`${HEADER}\nc,t,target_only,10,1\nc,t,speculative,10,-1`).message).toMatch(
            /^line 3: n_safety_pass must not be negative/
        );
        expect(errorOf(`${HEADER}\nc,t,target_only,10,1\nc,t,speculative,10,2.0`).message).toMatch(
            /^line 3: n_safety_pass must be a non-negative integer/
        );
    });

    it("names the line where n_safety_pass exceeds n_total", () => {
        expect(errorOf(`${HEADER}\nc,t,target_only,10,11\nc,t,speculative,10,1`).message).toBe(
            "line 2: n_safety_pass (11) exceeds n_total (10)"
        );
    });

    it("rejects an empty arm (n_total 0) and an empty field", () => {
        expect(errorOf(`${HEADER}\nc,t,target_only,0,0\nc,t,speculative,10,1`).message).toMatch(/^line 2: n_total must be at least 1/);
        expect(errorOf(`${HEADER}\nc,,target_only,10,1`).message).toBe("line 2: column task is empty");
    });

    it("names the line of the present arm when a task misses the other", () => {
        const error = errorOf([HEADER, "c,a,target_only,10,5", "c,a,speculative,10,5", "c,b,speculative,10,5"].join("\n"));
        expect(error.message).toBe('line 4: cell "c", task "b" has no target_only row; every task needs both arms');
    });

    it("names the line of a row with the wrong number of fields", () => {
        expect(errorOf(`${HEADER}\nc,t,target_only,10\n`).message).toBe("line 2: expected 5 fields like the header, found 4");
    });

    it("names the line of malformed CSV", () => {
        expect(errorOf(`${HEADER}\nc,"t,target_only,10,1\n`).message).toMatch(/^line \d+: malformed CSV/);
    });

    it("rejects a repeated header column", () => {
        expect(errorOf("cell_id,task,arm,arm,n_total,n_safety_pass\n").message).toMatch(/line 1: column arm appears twice/);
    });

    it("reads the paired form (no arm column): one row per task, the arms' counts implied by the table", () => {
        const paired = "cell_id,task,n_pairs,n_both_pass,n_target_only_pass,n_speculative_only_pass";
        const [cell] = parseCountsCsv(`${paired}\nc,advbench,200,150,3,3\nc,mmlu,50,50,0,0\n`);
        expect(cell.tasks[0]).toEqual({
            task: "advbench",
            targetOnly: {total: 200, safetyPasses: 153, line: 2},
            speculative: {total: 200, safetyPasses: 153, line: 2},
            paired: {bothPass: 150, targetOnlyPass: 3, speculativeOnlyPass: 3, bothFail: 44}
        });
        expect(cell.tasks[1].paired).toEqual({bothPass: 50, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 0});
    });

    it("names the line of a paired row whose cells exceed n_pairs, a duplicate, or a missing paired column", () => {
        const paired = "cell_id,task,n_pairs,n_both_pass,n_target_only_pass,n_speculative_only_pass";
        expect(errorOf(`${paired}\nc,t,10,8,2,1`).message).toBe(
            "line 2: n_both_pass + n_target_only_pass + n_speculative_only_pass (11) exceeds n_pairs (10)"
        );
        expect(errorOf(`${paired}\nc,t,10,8,1,1\nc,t,10,8,1,1`).message).toBe(
            'line 3: duplicate row for cell "c", task "t" (first given on line 2)'
        );
        expect(errorOf("cell_id,task,n_pairs,n_both_pass,n_target_only_pass\nc,t,10,8,1").message).toMatch(
            /^line 1: missing column n_speculative_only_pass/
        );
    });

    it("reads per-prompt seed shares as decimals in the paired form, and still refuses other text and a decimal n_pairs", () => {
        const paired = "cell_id,task,n_pairs,n_both_pass,n_target_only_pass,n_speculative_only_pass";
        const [cell] = parseCountsCsv(`${paired}\nT=0.7,advbench,100,80.5,1.25,0.75\n`);
        expect(cell.tasks[0].paired).toEqual({bothPass: 80.5, targetOnlyPass: 1.25, speculativeOnlyPass: 0.75, bothFail: 17.5});
        expect(cell.tasks[0].targetOnly).toMatchObject({total: 100, safetyPasses: 81.75});
        expect(errorOf(`${paired}\nc,t,10,8,1e0,1`).message).toBe('line 2: n_target_only_pass must be a non-negative number, got "1e0"');
        expect(errorOf(`${paired}\nc,t,10.5,8,1,1`).message).toMatch(/^line 2: n_pairs must be a non-negative integer/);
    });
});
