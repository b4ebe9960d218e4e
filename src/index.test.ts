import {readFileSync} from "node:fs";
import {describe, expect, it} from "vitest";
import * as specgate from "./index.js";

describe("the package entry (src/index.ts)", () => {
    it("exports the library surface docs/library.md describes", () => {
        for (const name of [
            "openModelPair",
            "loadModelBackend",
            "generate",
            "streamGeneration",
            "parsePolicySpec",
            "createPolicy",
            "parseDrafterSpec",
            "createDrafter",
            "simulate",
            "computeTais",
            "runTaisBattery",
            "runCanary",
            "analyzeFairness",
            "openDecodePath",
            "loadBattery",
            "createServeApp"
        ] as const)
            expect(typeof specgate[name], name).toBe("function");
        expect(new specgate.InvalidInputError("bad", "field")).toBeInstanceOf(specgate.SpecgateError);
    });

    it("documents every export statement with a TSDoc comment", () => {
        const source = readFileSync(new URL("./index.ts", import.meta.url), "utf8");
        const statements = [...source.matchAll(/^export [^]*?;$/gm)];
        expect(statements.length).toBeGreaterThan(20);
        for (const statement of statements) {
            const before = source.slice(0, statement.index).trimEnd();
            expect(before.endsWith("*/"), statement[0].split("\n")[0]).toBe(true);
        }
    });

    it("simulate validates its step and runs it", () => {
        const report = specgate.simulate(
            {
                policy: {kind: "strict"},
                targetProbs: [
                    [0.6, 0.4],
                    [0.5, 0.5]
                ],
                draftProbs: [[0.6, 0.4]],
                draftTokens: "sample"
            },
            {samples: 2000, seed: 1}
        );
        expect(report.acceptanceRate.overall).toBeCloseTo(1, 1);
        expect(() => specgate.simulate({policy: {kind: "strict"}}, {samples: 10})).toThrow(specgate.InvalidInputError);
        expect(() => specgate.simulate({}, {samples: 0})).toThrow("samples: must be a positive integer, got 0");
    });
});
