import {describe, expect, it} from "vitest";
import {Random} from "../../random/Random.js";
import {copyProblem} from "./copyProblem.js";

describe("copyProblem", () => {
    it("asks to repeat random content and answers with exactly that content", () => {
        const random = new Random(5);
        const keys = new Set<string>();
        for (let index = 0; index < 500; index++) {
            const problem = copyProblem(random);
            const rendering = problem.renderings.en!;
            const content = rendering.reference;
            expect(rendering.prompt).toBe(`Repeat: ${content}\nEcho:`);
            expect(rendering.answer).toBe(` ${content}`);
            expect(content.split(" ").length).toBeGreaterThanOrEqual(1);
            expect(content.split(" ").length).toBeLessThanOrEqual(4);
            expect(content).not.toMatch(/\n/);
            keys.add(problem.key);
        }
        // Random content: almost every drill is new, so memorising cannot predict the echo.
        expect(keys.size).toBeGreaterThan(450);
    });
});
