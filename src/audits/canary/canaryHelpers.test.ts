import {describe, expect, it} from "vitest";
import {compoundingRisk} from "./compoundingRisk.js";
import {diffJsonFields} from "./diffJsonFields.js";
import {extractToolCalls} from "./extractToolCalls.js";
import {firstDivergence} from "./firstDivergence.js";

describe("canary helpers", () => {
    it("compounds a per-call divergence over k calls (drift article: 1.2% → ~6% at k = 5)", () => {
        const risk = compoundingRisk(0.012);
        expect(risk).toHaveLength(10);
        expect(risk[0].risk).toBeCloseTo(0.012, 12);
        expect(risk[4]).toEqual({calls: 5, risk: 1 - 0.988 ** 5});
        expect(risk[4].risk).toBeCloseTo(0.0586, 4);
        expect(compoundingRisk(0)[9].risk).toBe(0);
    });

    it("finds the first divergence of strings and token arrays", () => {
        expect(firstDivergence('"limit": 50}', '"limit": 500}')).toBe(11);
        expect(firstDivergence([1, 2, 3], [1, 2, 3])).toBeNull();
        expect(firstDivergence([1, 2], [1, 2, 3])).toBe(2);
        expect(firstDivergence([4], [5])).toBe(0);
    });

    it("extracts tool calls in the usual shapes, ignoring braces in strings and prose", () => {
        const text =
            'Calling {not json} now: {"name": "search", "arguments": "{\\"q\\": \\"a}b\\", \\"limit\\": 50}"} and ' +
            '[{"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": "{\\"id\\": 7}"}}] then {"x": 1}';
        expect(extractToolCalls(text)).toEqual([
            {name: "search", arguments: {q: "a}b", limit: 50}},
            {name: "fetch", arguments: {id: 7}},
            {name: null, arguments: {x: 1}}
        ]);
        expect(extractToolCalls("no json here")).toEqual([]);
    });

    it("diffs JSON arguments field by field", () => {
        expect(
            diffJsonFields(
                {customer: "ACME", limit: 50, filters: [{field: "date"}]},
                {customer: "ACME", limit: 500, filters: [{field: "dates"}], extra: true}
            )
        ).toEqual([
            {path: "$.extra", a: undefined, b: true},
            {path: "$.filters[0].field", a: "date", b: "dates"},
            {path: "$.limit", a: 50, b: 500}
        ]);
        expect(diffJsonFields({"a-b": 1}, {"a-b": 2})[0].path).toBe('$["a-b"]');
        expect(diffJsonFields([1], [1])).toEqual([]);
    });
});
