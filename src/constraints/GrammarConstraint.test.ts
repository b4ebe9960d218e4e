import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NativeBackend} from "../backend/NativeBackend.js";
import {restrictVocabulary} from "../backend/restrictVocabulary.js";
import {ConstraintViolationError, InvalidDistributionError, InvalidInputError, TokenOutOfRangeError} from "../errors.js";
import {Random} from "../random/Random.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {GrammarConstraint} from "../backend/GrammarConstraint.js";
import {grammarForJsonSchema} from "./jsonSchemaGrammar.js";
import {personSchema} from "./testing/personSchema.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";

vi.setConfig(modelTestTimeouts);

const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;

describe("GrammarConstraint on the family target", () => {
    let backend: NativeBackend;
    let grammar: string;
    let eos: number;

    beforeAll(async () => {
        backend = await NativeBackend.load(familyTarget);
        grammar = grammarForJsonSchema(personSchema);
        eos = backend.eosToken!;
    });

    afterAll(async () => {
        await backend.dispose();
    });

    /** The one token of `text`, a single character of the byte-level vocabulary. */
    const token = (text: string): number => {
        const tokens = backend.tokenize(text);
        expect(tokens).toHaveLength(1);
        return tokens[0]!;
    };
    /** The ids a constraint's mask leaves finite in a row of zeros. */
    const allowed = async (constraint: TokenConstraint, size = backend.vocabularySize): Promise<number[]> => {
        const row = new Float64Array(size);
        await constraint.maskLogits(row);
        return [...row.keys()].filter((id) => row[id] !== -Infinity);
    };
    const feed = (constraint: TokenConstraint, text: string): void => {
        for (const id of backend.tokenize(text)) constraint.accept(id);
    };

    /** Tokens drawn uniformly among those the mask allows, until an end-of-generation token (not included). */
    const randomWalk = async (constraint: TokenConstraint, random: Random): Promise<number[]> => {
        const row = new Float64Array(backend.vocabularySize);
        const tokens: number[] = [];
        for (let step = 0; ; step++) {
            expect(step).toBeLessThan(2000);
            row.fill(0);
            await constraint.maskLogits(row);
            const choices = [...row.keys()].filter((id) => row[id] !== -Infinity);
            expect(choices.length).toBeGreaterThan(0);
            const choice = choices[Math.floor(random.nextDouble() * choices.length)]!;
            expect(constraint.allows(choice)).toBe(true);
            constraint.accept(choice);
            if (choice === eos) return tokens;
            tokens.push(choice);
        }
    };

    it("allows, masks and accepts what the grammar allows", async () => {
        const constraint = backend.createConstraint(grammar);
        try {
            expect(constraint).toBeInstanceOf(GrammarConstraint);
            expect(await allowed(constraint)).toEqual([token("{")]);
            expect(constraint.allows(token("{"))).toBe(true);
            expect(constraint.allows(token("["))).toBe(false);
            expect(constraint.allows(eos)).toBe(false);
            expect(() => constraint.accept(token("["))).toThrow(ConstraintViolationError);
            expect(() => constraint.accept(eos)).toThrow(/token 2 is not allowed by the grammar here/);
            // A refused token leaves the state as it was.
            expect(await allowed(constraint)).toEqual([token("{")]);
            feed(constraint, '{"age": 42');
            // 42 is complete (no third digit stays within 150), and no space precedes the comma.
            expect(await allowed(constraint)).toEqual([token(",")]);
            feed(constraint, ', "role": "');
            expect(await allowed(constraint)).toEqual([token("a"), token("u")]);
            // The mask leaves the other entries as they are, and ids already −Infinity are skipped.
            const row = Float64Array.from({length: backend.vocabularySize}, (_, id) => id / 10);
            row[token("u")] = -Infinity;
            await constraint.maskLogits(row);
            expect([...row.keys()].filter((id) => row[id] !== -Infinity)).toEqual([token("a")]);
            expect(row[token("a")]).toBe(token("a") / 10);
        } finally {
            constraint.dispose();
        }
    });

    it("allows an end-of-generation token only where the grammar may end", async () => {
        const constraint = backend.createConstraint(grammar);
        try {
            feed(constraint, '{"age":150,"role":"user","address":{"zip":"12345","verified":true}');
            expect(constraint.allows(eos)).toBe(false);
            expect(await allowed(constraint)).not.toContain(eos);
            feed(constraint, "}");
            expect(constraint.allows(eos)).toBe(true);
            expect(await allowed(constraint)).toEqual([eos]);
            constraint.accept(eos);
            expect(await allowed(constraint)).toEqual([eos]);
        } finally {
            constraint.dispose();
        }
    });

    it("holds the bytes of accepted tokens to strict UTF-8, and control tokens out", async () => {
        const constraint = backend.createConstraint(grammar);
        // The byte-level vocabulary: one token per byte, at a fixed offset.
        const byte = (value: number): number => token("a") - 0x61 + value;
        try {
            feed(constraint, '{"age":1,"role":"admin","address":{"zip":"12345"},"nick":"');
            const euro = backend.tokenize("€");
            expect(euro).toEqual([byte(0xe2), byte(0x82), byte(0xac)]);
            // Lone continuation bytes, overlong leads and leads beyond U+10FFFF never start a character.
            for (const value of [0x80, 0xbf, 0xc0, 0xc1, 0xf5, 0xff])
                expect(constraint.allows(byte(value)), value.toString(16)).toBe(false);
            const surrogate = constraint.clone();
            surrogate.accept(byte(0xed));
            expect(surrogate.allows(byte(0xa0))).toBe(false);
            expect(surrogate.allows(byte(0x9f))).toBe(true);
            // An incomplete character cannot be closed by the string's quote.
            expect(surrogate.allows(token('"'))).toBe(false);
            surrogate.dispose();
            for (const id of euro) constraint.accept(id);
            feed(constraint, '"}');
            expect(constraint.allows(eos)).toBe(true);
            // BOS is a control token: it would detokenize to nothing, so no grammar allows it.
            expect(constraint.allows(backend.bosToken!)).toBe(false);
        } finally {
            constraint.dispose();
        }
    });

    it("clones independently", async () => {
        const original = backend.createConstraint(grammar);
        feed(original, "{");
        const clone = original.clone();
        try {
            feed(clone, '"age":');
            expect(await allowed(clone)).toContain(token("7"));
            expect(clone.allows(token('"'))).toBe(false);
            // The original is still just after "{".
            expect(original.allows(token('"'))).toBe(true);
            expect(original.allows(token("7"))).toBe(false);
            const second = clone.clone();
            clone.dispose();
            clone.dispose();
            expect(second.allows(token("7"))).toBe(true);
            second.dispose();
            feed(original, '"age":7');
            expect(() => clone.allows(token("7"))).toThrow(/the grammar is disposed/);
        } finally {
            original.dispose();
        }
    });

    it("yields text that parses as JSON and matches the schema, on every random walk", async () => {
        const random = new Random(11);
        for (let walk = 0; walk < 50; walk++) {
            const constraint = backend.createConstraint(grammar);
            let tokens: number[];
            try {
                tokens = await randomWalk(constraint, random);
            } finally {
                constraint.dispose();
            }
            const text = backend.detokenize(tokens);
            const value = JSON.parse(text) as Record<string, unknown>;
            expectPerson(value, text);
        }
    });

    it("yields valid JSON for arrays, unions, numbers and formats too, on every random walk", async () => {
        const schema = {
            type: "object",
            properties: {
                values: {type: "array", items: {anyOf: [{type: "number"}, {type: "null"}, {type: "string", maxLength: 2}]}, maxItems: 3},
                day: {type: "string", format: "date"},
                id: {type: "string", format: "uuid"},
                pair: {type: "array", prefixItems: [{type: "boolean"}, {const: "x"}]}
            },
            required: ["values", "day", "id", "pair"]
        };
        const constraint = backend.createConstraint(grammarForJsonSchema(schema));
        const random = new Random(12);
        try {
            for (let walk = 0; walk < 20; walk++) {
                const state = constraint.clone();
                const tokens = await randomWalk(state, random);
                state.dispose();
                const text = backend.detokenize(tokens);
                const value = JSON.parse(text) as {values: unknown[]; day: string; id: string; pair: unknown[]};
                expect(Object.keys(value).sort(), text).toEqual(["day", "id", "pair", "values"]);
                expect(value.values.length, text).toBeLessThanOrEqual(3);
                for (const item of value.values)
                    expect(item === null || typeof item === "number" || (typeof item === "string" && [...item].length <= 2), text).toBe(
                        true
                    );
                expect(value.day, text).toMatch(/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/);
                expect(value.id, text).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
                expect(typeof value.pair[0] === "boolean" && value.pair[1] === "x" && value.pair.length === 2, text).toBe(true);
            }
        } finally {
            constraint.dispose();
        }
    });

    it("refuses a grammar llama.cpp cannot parse, bad tokens and rows, and use after dispose", async () => {
        expect(() => backend.createConstraint("root ::= missing")).toThrow(InvalidInputError);
        expect(() => backend.createConstraint("root ::= missing")).toThrow(/^grammar: llama\.cpp could not parse the grammar/);
        expect(() => backend.createConstraint('start ::= "a"')).toThrow(/does not contain a 'root' symbol/);
        expect(() => backend.createConstraint("")).toThrow(/grammar must not be empty/);
        const constraint = backend.createConstraint('root ::= "ab"');
        for (const bad of [-1, backend.vocabularySize, 1.5, Number.NaN]) expect(() => constraint.allows(bad)).toThrow(TokenOutOfRangeError);
        expect(() => constraint.accept(backend.vocabularySize)).toThrow(TokenOutOfRangeError);
        await expect(constraint.maskLogits(new Float64Array(backend.vocabularySize - 1))).rejects.toThrow(InvalidDistributionError);
        constraint.dispose();
        constraint.dispose();
        expect(() => constraint.allows(token("a"))).toThrow(/the grammar is disposed/);
        await expect(constraint.maskLogits(new Float64Array(backend.vocabularySize))).rejects.toThrow(/the grammar is disposed/);
        expect(() => constraint.accept(token("a"))).toThrow(/the grammar is disposed/);
        expect(() => constraint.clone()).toThrow(/the grammar is disposed/);
    });

    it("keeps its model alive after the backend is disposed of", async () => {
        const own = await NativeBackend.load(familyTarget);
        const constraint = own.createConstraint('root ::= "ab"');
        await own.dispose();
        expect(() => own.createConstraint('root ::= "ab"')).toThrow(/the model is disposed/);
        try {
            expect(await allowed(constraint)).toEqual([token("a")]);
            constraint.accept(token("a"));
            expect(constraint.allows(token("b"))).toBe(true);
        } finally {
            constraint.dispose();
        }
    });

    it("is seen through restrictVocabulary's cut: rows and ids of the restricted size", async () => {
        const size = 200;
        const restricted = restrictVocabulary(backend, size);
        const constraint = restricted.createConstraint!(grammar);
        try {
            expect(await allowed(constraint, size)).toEqual([token("{")]);
            await expect(constraint.maskLogits(new Float64Array(backend.vocabularySize))).rejects.toThrow(InvalidDistributionError);
            expect(() => constraint.allows(size)).toThrow(TokenOutOfRangeError);
            expect(() => constraint.accept(size + 10)).toThrow(TokenOutOfRangeError);
            feed(constraint, '{"age":1,"role":"admin","address":{"zip":"12345"},"nick":"');
            // Inside a string: every printable ASCII character but the quote and backslash's escape rule, none beyond the cut.
            const inside = await allowed(constraint, size);
            expect(inside).toContain(token("x"));
            expect(inside.every((id) => id < size)).toBe(true);
            constraint.mark();
            feed(constraint, 'x"');
            expect(constraint.allows(token("x"))).toBe(false);
            constraint.rewind();
            expect(constraint.allows(token("x"))).toBe(true);
        } finally {
            constraint.dispose();
        }
    });
});

/** Checks `value` against personSchema (testing/personSchema.ts) by hand. */
function expectPerson(value: Record<string, unknown>, text: string): void {
    expect(Object.keys(value).sort(), text).toEqual(expect.arrayContaining(["address", "age", "role"]));
    expect(
        Object.keys(value).every((key) => ["age", "role", "nick", "address"].includes(key)),
        text
    ).toBe(true);
    expect(Number.isInteger(value.age) && (value.age as number) >= 0 && (value.age as number) <= 150, text).toBe(true);
    expect(["admin", "user"], text).toContain(value.role);
    if ("nick" in value) expect(typeof value.nick === "string" && [...value.nick].length <= 6, text).toBe(true);
    const address = value.address as Record<string, unknown>;
    expect(typeof address === "object" && address !== null && !Array.isArray(address), text).toBe(true);
    expect(
        Object.keys(address).every((key) => ["zip", "verified"].includes(key)),
        text
    ).toBe(true);
    expect(address.zip, text).toMatch(/^[0-9]{5}$/);
    if ("verified" in address) expect(typeof address.verified, text).toBe("boolean");
}
