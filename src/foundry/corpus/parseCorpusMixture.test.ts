import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {apportion} from "./apportion.js";
import {corpusMixturePresets} from "./CorpusMixture.js";
import {parseCorpusMixture} from "./parseCorpusMixture.js";

describe("parseCorpusMixture", () => {
    it("returns the presets by name", () => {
        expect(parseCorpusMixture("balanced")).toBe(corpusMixturePresets["balanced"]);
        expect(parseCorpusMixture("english-heavy").languages.en).toBe(0.9);
    });

    it("reads JSON weights, leaving unnamed tasks and languages at 0", () => {
        const mixture = parseCorpusMixture(JSON.stringify({tasks: {arithmetic: 3, "tool-call": 1}, languages: {en: 1, ja: 1}}));
        expect(mixture.tasks).toEqual({arithmetic: 3, "multiple-choice": 0, "tool-call": 1, safety: 0, story: 0, copy: 0});
        expect(mixture.languages).toEqual({en: 1, es: 0, de: 0, ja: 1});
        expect(mixture.surfaceVariation).toBeUndefined();
        expect(
            parseCorpusMixture(JSON.stringify({tasks: {arithmetic: 1}, languages: {en: 1}, surfaceVariation: 0.25})).surfaceVariation
        ).toBe(0.25);
        expect(parseCorpusMixture("tool-heavy-surface")).toEqual({...corpusMixturePresets["tool-heavy"], surfaceVariation: 0.5});
    });

    it("names the field of every mistake", () => {
        const cases: [string, RegExp][] = [
            [
                "uniform",
                /expected balanced, english-heavy, copy-drill, tool-focus, tool-heavy, balanced-surface, tool-heavy-surface, arithmetic-tool-surface, arithmetic-focus or a JSON object/
            ],
            ["{not json", /not valid JSON/],
            [JSON.stringify({tasks: {arithmetic: 1}}), /mixture\.languages: missing/],
            [JSON.stringify({tasks: {poetry: 1}, languages: {en: 1}}), /mixture\.tasks\.poetry: unknown name/],
            [JSON.stringify({tasks: {arithmetic: -1}, languages: {en: 1}}), /mixture\.tasks\.arithmetic: expected a finite number >= 0/],
            [JSON.stringify({tasks: {arithmetic: 0}, languages: {en: 1}}), /at least one task/],
            [JSON.stringify({tasks: {safety: 1}, languages: {ja: 1}}), /task safety is rendered in en/],
            [JSON.stringify({tasks: {safety: 1}, languages: {en: 1}, extra: 1}), /unknown key "extra"/],
            [
                JSON.stringify({tasks: {safety: 1}, languages: {en: 1}, surfaceVariation: 1.5}),
                /mixture\.surfaceVariation: expected a number in \[0, 1\], got 1\.5/
            ],
            [
                JSON.stringify({tasks: {safety: 1}, languages: {en: 1}, surfaceVariation: "half"}),
                /mixture\.surfaceVariation: expected a number in \[0, 1\], got "half"/
            ]
        ];
        for (const [text, message] of cases) expect(() => parseCorpusMixture(text), text).toThrow(message);
        expect(() => parseCorpusMixture("[]")).toThrow(InvalidInputError);
    });
});

describe("apportion", () => {
    it("splits a total exactly, each part within 1 of its share", () => {
        expect(apportion(10, [1, 1, 1])).toEqual([4, 3, 3]);
        expect(apportion(7, [0.9, 0.1 / 3, 0.1 / 3, 0.1 / 3])).toEqual([7, 0, 0, 0]); // remainders 0.3 > 0.23
        expect(apportion(5, [0, 0])).toEqual([0, 0]);
        for (const total of [0, 1, 99, 1000]) {
            const weights = [0.35, 0.15, 0.25, 0.1, 0.15];
            const parts = apportion(total, weights);
            expect(parts.reduce((sum, part) => sum + part, 0)).toBe(total);
            parts.forEach((part, index) => expect(Math.abs(part - total * weights[index])).toBeLessThan(1));
        }
    });
});
