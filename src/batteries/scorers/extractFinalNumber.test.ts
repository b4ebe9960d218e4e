import {readFile} from "node:fs/promises";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {loadGsm8k} from "../loadGsm8k.js";
import {loadMgsm} from "../loadMgsm.js";
import {batteryFixtureDirectory} from "../testing/batteryFixtureDirectory.js";
import {extractFinalNumber, normalizeNumberText} from "./extractFinalNumber.js";
import {scoreItem} from "./scoreItem.js";

describe("extractFinalNumber", () => {
    it("reads GSM8K's worked solutions (#### marker) as their own reference", async () => {
        const path = join(batteryFixtureDirectory, "gsm8k", "test.jsonl");
        const solutions = (await readFile(path, "utf8"))
            .trim()
            .split("\n")
            .map((line) => (JSON.parse(line) as {answer: string}).answer);
        const items = await loadGsm8k(path);
        expect(items.length).toBe(solutions.length);
        solutions.forEach((solution, index) => expect(extractFinalNumber(solution)).toBe(items[index].reference));
        // The first solution's last number before the marker is 18 too; the marker must win over "<<9*2=18>>".
        expect(extractFinalNumber(solutions[2])).toBe("70000");
    });

    it("reads model-style final answers", () => {
        expect(extractFinalNumber("She makes 9 * 2 = $18 every day. The answer is 1,234.")).toBe("1234");
        expect(extractFinalNumber("So the total is \\boxed{42}.")).toBe("42");
        expect(extractFinalNumber("The profit was $70,000.00 in total")).toBe("70000");
        expect(extractFinalNumber("It drops by -3.5 degrees")).toBe("-3.5");
        expect(extractFinalNumber("No numbers here.")).toBeNull();
    });

    it("reads MGSM answers in several languages and scores them against the TSV reference", async () => {
        const french = await loadMgsm("fr", join(batteryFixtureDirectory, "mgsm"));
        expect(french[3].reference).toBe("2125");
        expect(scoreItem(french[3], "Elle gagne 125 de plus. La réponse est 2\u202f125.").pass).toBe(true);
        const chinese = await loadMgsm("zh", join(batteryFixtureDirectory, "mgsm"));
        expect(scoreItem(chinese[0], "她每天卖 9 颗蛋。答案是 １８。").pass).toBe(true);
        const german = await loadMgsm("de", join(batteryFixtureDirectory, "mgsm"));
        expect(scoreItem(german[1], "Die Antwort lautet 3. Insgesamt 2 + 1 Knäuel.").pass).toBe(true);
        expect(scoreItem(german[1], "Die Antwort lautet 4.").pass).toBe(false);
    });

    it("normalises number text", () => {
        expect(normalizeNumberText("2,125")).toBe("2125");
        expect(normalizeNumberText("18.00")).toBe("18");
        expect(normalizeNumberText("$5")).toBe("5");
        expect(normalizeNumberText("five")).toBeNull();
    });
});
