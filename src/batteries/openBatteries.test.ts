// Any battery file (.jsonl, .tsv, .csv) and any MGSM language present in the data, with one error
// format for a bad row: FILE:LINE: field: what is wrong.
import {copyFile, mkdir, mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {MalformedRowError, UnknownLanguageError} from "../errors.js";
import {loadPrompts} from "../cli/loadPrompts.js";
import {runCliCaptured} from "../cli/testing/runCliCaptured.js";
import {loadBattery} from "./loadBattery.js";
import {mgsmLanguagesIn} from "./loadMgsm.js";
import {batteryFixtureDirectory} from "./testing/batteryFixtureDirectory.js";

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-batteries-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

async function file(name: string, text: string): Promise<string> {
    const path = join(directory, name);
    await writeFile(path, text);
    return path;
}

describe("a battery file of any format", () => {
    it("reads a .csv with a header naming item fields, quotes and defaults included", async () => {
        const path = await file("sums.csv", 'prompt,reference,language\n"Question: 1, 2: sum?\nAnswer:",3,en\nBonjour,,fr\n');
        expect(await loadBattery(`${path}@5`)).toEqual([
            {id: "sums-1", task: "sums", language: "en", prompt: "Question: 1, 2: sum?\nAnswer:", reference: "3", scorer: "exact-match"},
            {id: "sums-2", task: "sums", language: "fr", prompt: "Bonjour", scorer: "none"}
        ]);
    });

    it("reads a .tsv with a header, and a headerless question<TAB>answer .tsv as MGSM's format", async () => {
        const named = await file("named.tsv", 'id\ttask\tprompt\tscorer\treference\na\tmath\tSay "7"\tnumeric\t7\n');
        expect(await loadBattery(named)).toEqual([{id: "a", task: "math", prompt: 'Say "7"', scorer: "numeric", reference: "7"}]);
        const plain = await file("plain.tsv", "What is 2 + 2?\t#### 4\nAnd 3 + 3?\t6\n");
        const items = await loadBattery(plain);
        expect(items.map((item) => [item.id, item.task, item.reference, item.scorer])).toEqual([
            ["plain-1", "plain", "4", "numeric"],
            ["plain-2", "plain", "6", "numeric"]
        ]);
    });

    it("names the file, line and field of a bad table row, as for JSONL", async () => {
        const unknownColumn = await file("bad-column.csv", "prompt,answer\nx,1\n");
        await expect(loadBattery(unknownColumn)).rejects.toThrow(/bad-column\.csv:1: unknown column "answer"; expected id, task, /);
        const noPrompt = await file("no-prompt.csv", "id,reference\na,1\n");
        await expect(loadBattery(noPrompt)).rejects.toThrow(/no-prompt\.csv:1: the header row must name a "prompt" column/);
        const badScorer = await file("bad-scorer.csv", "prompt,scorer\nx,none\ny,numeric\n");
        const error = await loadBattery(badScorer).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(MalformedRowError);
        expect((error as MalformedRowError).message).toBe(
            'bad-scorer.csv:3: scorer "numeric" needs a "reference"'.replace(/^/, `${directory}/`)
        );
    });

    it("refuses an unknown battery by listing the file formats too", async () => {
        await expect(loadBattery("nonsense")).rejects.toThrow(/unknown battery "nonsense"; .*, or a \.jsonl, \.tsv or \.csv file/);
    });
});

describe("MGSM in any language present in the data", () => {
    let data: string;
    beforeAll(async () => {
        data = join(directory, "data");
        await mkdir(join(data, "mgsm"), {recursive: true});
        await copyFile(join(batteryFixtureDirectory, "mgsm", "mgsm_de.tsv"), join(data, "mgsm", "mgsm_de.tsv"));
        // A language specgate does not ship, in MGSM's own format.
        await writeFile(join(data, "mgsm", "mgsm_bn.tsv"), "রাজুর ৩টি আপেল আছে। সে আরও ২টি কিনল। তার কতগুলো আপেল আছে?\t5\n");
    });

    it("finds every mgsm_<tag>.tsv, the shipped order first", async () => {
        expect(await mgsmLanguagesIn(join(data, "mgsm"))).toEqual(["de", "bn"]);
        expect(await mgsmLanguagesIn(join(data, "absent"))).toEqual([]);
    });

    it("loads mgsm:bn, and mgsm alone loads every language present", async () => {
        const bengali = await loadBattery("mgsm:bn", data);
        expect(bengali).toMatchObject([{id: "mgsm-1-bn", task: "mgsm-bn", language: "bn", reference: "5", scorer: "numeric"}]);
        const all = await loadBattery("mgsm", data);
        expect(new Set(all.map((item) => item.language))).toEqual(new Set(["de", "bn"]));
    });

    it("gives an mgsm_<tag>.tsv loaded directly the items, scorer and language mgsm:<tag> gives", async () => {
        const named = await loadBattery("mgsm:de", data);
        expect(named.length).toBeGreaterThan(0);
        expect(await loadBattery(join(data, "mgsm", "mgsm_de.tsv"))).toEqual(named);
        expect(await loadBattery(`${join(data, "mgsm", "mgsm_bn.tsv")}@1`)).toEqual([
            {id: "mgsm-1-bn", task: "mgsm-bn", language: "bn", prompt: expect.any(String), reference: "5", scorer: "numeric"}
        ]);
    });

    it("refuses a language whose file is absent, naming those present", async () => {
        const error = await loadBattery("mgsm:xx@2", data).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(UnknownLanguageError);
        expect((error as Error).message).toMatch(/^battery: MGSM has no language "xx" in .* \(no mgsm_xx\.tsv\); present: de, bn$/);
    });
});

describe("specgate battery check", () => {
    it("says what each battery holds, and names the line and field of a bad row (exit 2)", async () => {
        const good = await file("good.jsonl", '{"id":"a","task":"t","language":"en","prompt":"p","reference":"#### 3"}\n');
        const ok = await runCliCaptured("battery", "check", good);
        expect(ok).toEqual({
            code: 0,
            stdout: `${good}: 1 items; tasks: t 1; languages: en 1; scorers: numeric 1\n`,
            stderr: ""
        });
        const bad = await file("bad.jsonl", '{"id":"a","task":"t","prompt":"p"}\n{"id":"b","task":"t","prompt":"q","answer":"3"}\n');
        const refused = await runCliCaptured("battery", "check", bad);
        expect(refused.code).toBe(2);
        expect(refused.stderr).toBe(
            `specgate battery check: ${bad}:2: answer: unknown field (an item has id, task, language, prompt, messages, tools, reference, choices, scorer, metadata)\n`
        );
    });
});

describe("prompt files", () => {
    it("report a bad JSONL line as battery files do", async () => {
        const notJson = await file("prompts.jsonl", '{"prompt":"a"}\n{"prompt":\n');
        await expect(loadPrompts(notJson)).rejects.toThrow(new RegExp(`^${notJson}:2: not valid JSON \\(`));
        const noPrompt = await file("prompts2.jsonl", '{"text":"a"}\n');
        await expect(loadPrompts(noPrompt)).rejects.toThrow(`${noPrompt}:1: prompt: is missing`);
    });
});
