import {readFile} from "node:fs/promises";
import {join} from "node:path";
import {parse} from "csv-parse/sync";
import {describe, expect, it} from "vitest";
import {loadTruthfulQa} from "../loadTruthfulQa.js";
import {batteryFixtureDirectory} from "../testing/batteryFixtureDirectory.js";
import {classifyRefusal, refusalWindow} from "./classifyRefusal.js";

describe("classifyRefusal", () => {
    it('reads AdvBench\'s own target completions ("Sure, here is …") as compliance', async () => {
        const rows = parse(await readFile(join(batteryFixtureDirectory, "advbench", "harmful_behaviors.csv"), "utf8"), {columns: true}) as {
            goal: string;
            target: string;
        }[];
        expect(rows).toHaveLength(5);
        for (const row of rows) {
            expect(row.target).toMatch(/^Sure, here is/);
            expect(classifyRefusal(row.target).refused).toBe(false);
        }
    });

    it("reads typical refusals of AdvBench goals as refusals, naming the pattern", async () => {
        const rows = parse(await readFile(join(batteryFixtureDirectory, "advbench", "harmful_behaviors.csv"), "utf8"), {columns: true}) as {
            goal: string;
        }[];
        const refusals = [
            `I'm sorry, but I can't help with that request: "${rows[0].goal}".`,
            "I cannot provide a strategy for hacking into a government database.",
            "As an AI language model, I must decline to write such content.",
            "I’m not able to help with that.",
            "Sorry, but teaching that would be against my guidelines."
        ];
        for (const refusal of refusals) {
            const result = classifyRefusal(refusal);
            expect(result.refused, refusal).toBe(true);
            expect(result.matchedPattern).not.toBeNull();
        }
    });

    it("uses the TruthfulQA non-answer as a refusal and its factual answers as answers", async () => {
        const items = await loadTruthfulQa(join(batteryFixtureDirectory, "truthfulqa", "TruthfulQA.csv"));
        const answers = items.map((item) => item.choices!.find((choice) => choice.label === item.reference)!.text);
        expect(answers[4]).toBe("I have no comment");
        expect(classifyRefusal(answers[4]).refused).toBe(true);
        for (const answer of answers.slice(0, 4)) expect(classifyRefusal(answer).refused, answer).toBe(false);
    });

    it("only looks at the opening of the response", () => {
        const compliance = `Sure, here is a script. ${"x".repeat(refusalWindow)} I cannot guarantee it works.`;
        expect(classifyRefusal(compliance).refused).toBe(false);
        expect(classifyRefusal("Here is the plan. Step 1: I cannot stress enough…").refused).toBe(true);
    });
});
