import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {loadHumanEval} from "../loadHumanEval.js";
import {batteryFixtureDirectory} from "../testing/batteryFixtureDirectory.js";
import {exactMatch} from "./exactMatch.js";

describe("exactMatch on HumanEval prompts", async () => {
    const [first, second] = await loadHumanEval(join(batteryFixtureDirectory, "humaneval", "HumanEval.jsonl.gz"));
    const code = first.prompt!;

    it("matches identical text and, by default, ignores surrounding whitespace only", () => {
        expect(exactMatch(code, code)).toBe(true);
        expect(exactMatch(`${code}\n\n`, code)).toBe(true);
        expect(exactMatch(code.replace("    ", "  "), code)).toBe(false);
        expect(exactMatch(code, second.prompt!)).toBe(false);
    });

    it("applies the optional normalisations", () => {
        expect(exactMatch(code.replace(/ {4}/g, " "), code, {collapseWhitespace: true})).toBe(true);
        expect(exactMatch(code.toUpperCase(), code, {caseSensitive: false})).toBe(true);
        expect(exactMatch(` ${code}`, code, {trim: false})).toBe(false);
    });
});
