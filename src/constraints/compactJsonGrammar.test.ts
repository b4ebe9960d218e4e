import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {type NativeModelHandle, nativeAddon} from "../backend/nativeAddon.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {compactJsonGrammar, llamaCppSpaceRule, UnknownWhitespaceRuleError} from "./compactJsonGrammar.js";
import {grammarForJsonSchema, grammarForResponseFormat} from "./jsonSchemaGrammar.js";
import {personSchema} from "./testing/personSchema.js";

vi.setConfig(modelTestTimeouts);

const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
let model: NativeModelHandle;

beforeAll(() => {
    model = new (nativeAddon().NativeModel)(familyTarget);
});

afterAll(() => {
    model.dispose();
});

/** Whether `grammar` admits exactly `text` (the family tokenizer has one token per byte). */
function admits(grammar: string, text: string): boolean {
    const state = new (nativeAddon().NativeGrammar)(model, grammar);
    try {
        for (const token of model.tokenize(text, false)) {
            if (!state.allows(token)) return false;
            state.accept(token);
        }
        return state.allows(model.eosToken!);
    } finally {
        state.dispose();
    }
}

const person = {age: 31, role: "user", address: {zip: "12345", verified: true}, nick: "ada"};
const compact = '{"age": 31, "role": "user", "address": {"zip": "12345", "verified": true}, "nick": "ada"}';

describe("compactJsonGrammar", () => {
    it("empties the whitespace rule and allows one space after each ':' and ',' between tokens", () => {
        const grammar = [
            'kv ::= "\\"a\\"" space ":" space value',
            'root ::= "{" space kv ( "," space kv )* space "}"',
            `space ::= ${llamaCppSpaceRule}`,
            'value ::= "\\":\\"" space | [,:] space'
        ].join("\n");
        expect(compactJsonGrammar(grammar).split("\n")).toEqual([
            'separator ::= " "?',
            'kv ::= "\\"a\\"" space ":" separator value',
            'root ::= "{" space kv ( "," separator kv )* space "}"',
            'space ::= ""',
            // A literal that only contains a colon, and a character class, are not separators.
            'value ::= "\\":\\"" space | [,:] space'
        ]);
    });

    it("names the separator rule apart from the grammar's own rules", () => {
        const grammar = ['root ::= "[" space separator ("," space separator)* "]"', 'separator ::= "a"', `space ::= ${llamaCppSpaceRule}`];
        expect(compactJsonGrammar(grammar.join("\n")).split("\n")).toEqual([
            'separator-1 ::= " "?',
            'root ::= "[" space separator ("," separator-1 separator)* "]"',
            'separator ::= "a"',
            'space ::= ""'
        ]);
    });

    it("holds as many array items as llama.cpp's grammar parser allows, strict or not (its repetition limit)", () => {
        const parses = (grammar: string): boolean => {
            try {
                new (nativeAddon().NativeGrammar)(model, grammar).dispose();
                return true;
            } catch {
                return false;
            }
        };
        for (const items of [{type: "integer"}, {type: "string"}, {type: "object", properties: {a: {type: "string"}}}])
            for (const strict of [false, true]) {
                const at = (bounds: object): string => grammarForJsonSchema({type: "array", items, ...bounds}, {strict});
                expect(parses(at({minItems: 2000})), JSON.stringify(items)).toBe(true);
                expect(parses(at({maxItems: 1998})), JSON.stringify(items)).toBe(true);
                expect(parses(at({minItems: 1998, maxItems: 1998})), JSON.stringify(items)).toBe(true);
                // Past the limits the schema check refuses first; at 2000 the parser refuses the grammar.
                expect(() => at({maxItems: 1999})).toThrow("#/maxItems: is 1999; the limit is 1998");
                const unchecked = nativeAddon().jsonSchemaToGrammar(JSON.stringify({type: "array", items, maxItems: 2000}));
                expect(parses(strict ? compactJsonGrammar(unchecked) : unchecked)).toBe(false);
            }
    });

    it("leaves a grammar without a space rule as it is, and refuses a space rule it does not know", () => {
        expect(compactJsonGrammar('root ::= "a"')).toBe('root ::= "a"');
        expect(() => compactJsonGrammar('root ::= "a" space\nspace ::= " "*')).toThrow(UnknownWhitespaceRuleError);
    });

    it("is what strict json_schema and json_object constrain with; non-strict json_schema keeps llama.cpp's rule", () => {
        const loose = grammarForJsonSchema(personSchema);
        expect(loose).toContain(`space ::= ${llamaCppSpaceRule}`);
        expect(grammarForResponseFormat({type: "json_schema", json_schema: {name: "p", schema: personSchema}})).toBe(loose);
        const strict = grammarForJsonSchema(personSchema, {strict: true});
        expect(strict).toBe(compactJsonGrammar(grammarForJsonSchema(personSchema, {strict: true, compact: false})));
        expect(strict).toContain('space ::= ""');
        expect(grammarForResponseFormat({type: "json_object"})).toBe(compactJsonGrammar(grammarForJsonSchema({type: "object"})));
        expect(grammarForJsonSchema(personSchema, {compact: true})).toBe(compactJsonGrammar(loose));
    });

    it("admits both compact forms and refuses newlines, indentation and other spaces between tokens (llama.cpp's grammar engine)", () => {
        const strict = grammarForJsonSchema(personSchema, {strict: true});
        const loose = grammarForJsonSchema(personSchema);
        // Strict mode makes every property required, in schema order.
        const strictText = '{"age": 31, "role": "user", "nick": "ada", "address": {"zip": "12345", "verified": true}}';
        expect(JSON.parse(strictText)).toEqual(person);
        expect(admits(strict, strictText)).toBe(true);
        expect(admits(strict, JSON.stringify(JSON.parse(strictText)))).toBe(true);
        for (const spaced of [
            strictText.replace(", ", ",\n  "),
            strictText.replace('{"age"', '{\n"age"'),
            strictText.replace(": 31", ":  31"),
            strictText.replace("31,", "31 ,"),
            strictText.replace("true}}", "true }}"),
            strictText.replace('{"zip"', '{ "zip"'),
            strictText.replace(",", ",\t")
        ])
            expect(admits(strict, spaced), spaced).toBe(false);
        // Non-strict: llama.cpp's whitespace, as before.
        expect(admits(loose, compact)).toBe(true);
        expect(admits(loose, compact.replace(", ", ",\n  ").replace('{"zip"', '{ "zip"'))).toBe(true);
        // json_object: any object, compact.
        const anyObject = grammarForResponseFormat({type: "json_object"})!;
        expect(admits(anyObject, '{"a": [1, {"b": null}], "c": "x: y, z"}')).toBe(true);
        expect(admits(anyObject, '{"a":[1,{"b":null}]}')).toBe(true);
        expect(admits(anyObject, '{"a": [ 1, {"b": null}]}')).toBe(false);
        expect(admits(anyObject, '{"a":\n1}')).toBe(false);
        expect(admits(anyObject, "{}")).toBe(true);
    });
});
