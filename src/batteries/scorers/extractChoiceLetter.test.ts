import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {loadCsqa} from "../loadCsqa.js";
import {loadTruthfulQa} from "../loadTruthfulQa.js";
import {batteryFixtureDirectory} from "../testing/batteryFixtureDirectory.js";
import {extractChoiceLetter} from "./extractChoiceLetter.js";

describe("extractChoiceLetter on CommonsenseQA rows", async () => {
    const items = await loadCsqa(join(batteryFixtureDirectory, "csqa", "dev_rand_split.jsonl"));
    const revolvingDoor = items[0];
    const choices = revolvingDoor.choices!;

    it("reads a leading label in its usual forms", () => {
        for (const output of ["A", "A.", " A) bank", "(A)", "A: bank", "A\nBecause banks need security."])
            expect(extractChoiceLetter(output, choices), output).toBe("A");
    });

    it("reads explicit answer statements", () => {
        expect(extractChoiceLetter("The revolving door is at a bank, so the answer is A.", choices)).toBe("A");
        expect(extractChoiceLetter("Answer: (D)", choices)).toBe("D");
        expect(extractChoiceLetter("I think the correct option is E", choices)).toBe("E");
    });

    it("falls back to a unique parenthesised label or a unique option text", () => {
        expect(extractChoiceLetter("Security matters most in (C), I think.", choices)).toBe("C");
        expect(extractChoiceLetter("It is a security measure at a bank.", choices)).toBe("A");
        expect(extractChoiceLetter("bank or library, hard to say", choices)).toBeNull();
    });

    it("does not read the article 'A' or a word starting with a capital as a label", () => {
        expect(extractChoiceLetter("A revolving door is convenient.", choices)).toBeNull();
        expect(extractChoiceLetter("Banks have them.", choices)).toBeNull();
        expect(extractChoiceLetter("F", choices)).toBeNull();
    });

    it("scores a TruthfulQA item by its hashed reference label", async () => {
        const [watermelon] = await loadTruthfulQa(join(batteryFixtureDirectory, "truthfulqa", "TruthfulQA.csv"));
        expect(
            extractChoiceLetter(`${watermelon.reference}. The watermelon seeds pass through your digestive system`, watermelon.choices!)
        ).toBe(watermelon.reference);
        expect(extractChoiceLetter("The watermelon seeds pass through your digestive system", watermelon.choices!)).toBe(
            watermelon.reference
        );
    });
});
