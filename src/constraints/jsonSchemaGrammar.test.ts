import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {nativeAddon} from "../backend/nativeAddon.js";
import {GrammarTooComplexError, InvalidInputError} from "../errors.js";
import {
    checkJsonSchema,
    grammarForJsonSchema,
    grammarForJsonSchemaFile,
    grammarForResponseFormat,
    unsupportedPattern,
    unsupportedSchemaKeywords
} from "./jsonSchemaGrammar.js";
import {personSchema} from "./testing/personSchema.js";

/** The grammar's rules by name. */
function rules(grammar: string): Map<string, string> {
    return new Map(
        grammar
            .trim()
            .split("\n")
            .map((line) => {
                const [name, ...body] = line.split(" ::= ");
                return [name!, body.join(" ::= ")];
            })
    );
}

describe("grammarForJsonSchema", () => {
    it("is llama.cpp's conversion: an integer range, an enum and a nested object", () => {
        const grammar = rules(grammarForJsonSchema(personSchema));
        // nick is optional: after the required properties, in a group of its own.
        expect(grammar.get("root")).toBe('"{" space age-kv "," space role-kv "," space address-kv ( "," space ( nick-kv ) )? space "}"');
        expect(grammar.get("nick")).toBe('"\\"" char{0,6} "\\""');
        expect(grammar.get("age-kv")).toBe('"\\"age\\"" space ":" space age');
        expect(grammar.get("age")).toBe('([0-9] | ([1-8] [0-9] | [9] [0-9]) | "1" ([0-4] [0-9] | [5] "0"))');
        expect(grammar.get("role")).toBe('("\\"admin\\"" | "\\"user\\"")');
        // The nested object: zip required, verified optional.
        expect(grammar.get("address")).toBe('"{" space address-zip-kv ( "," space ( address-verified-kv ) )? space "}"');
        expect(grammar.get("address-zip")).toBe('"\\"" (address-zip-1{5,5}) "\\""');
        expect(grammar.get("address-zip-1")).toBe("[0-9]");
        expect(grammar.get("space")).toBe('| " " | "\\n"{1,2} [ \\t]{0,20}');
    });

    it("reads an empty schema as any object, as llama-server does", () => {
        expect(grammarForJsonSchema({})).toBe(grammarForJsonSchema({type: "object"}));
        expect(rules(grammarForJsonSchema({})).get("root")).toBe("object");
    });

    it("holds every object to strict mode: closed, all properties required", () => {
        const loose = {type: "object", properties: {a: {type: "integer"}, b: {type: "object", properties: {c: {type: "boolean"}}}}};
        const closed = {
            type: "object",
            properties: {
                a: {type: "integer"},
                b: {type: "object", properties: {c: {type: "boolean"}}, required: ["c"], additionalProperties: false}
            },
            required: ["a", "b"],
            additionalProperties: false
        };
        expect(grammarForJsonSchema(loose, {strict: true})).toBe(grammarForJsonSchema(closed, {compact: true}));
        expect(grammarForJsonSchema(loose)).not.toBe(grammarForJsonSchema(closed));
        expect(() => grammarForJsonSchema({...loose, additionalProperties: true}, {strict: true, field: "f"})).toThrow(
            /f: #\/additionalProperties: strict mode needs additionalProperties false/
        );
    });

    it("passes the converter's own refusals on as InvalidInputError", () => {
        const refused = (): string => grammarForJsonSchema({type: "object", properties: {a: {$ref: "#/$defs/missing"}}}, {field: "s"});
        expect(refused).toThrow(InvalidInputError);
        expect(refused).toThrow(/s: .*#\/properties\/a\/\$ref: #\/\$defs\/missing does not resolve/);
        const convert = (): string => {
            throw new Error("JSON schema conversion failed: boom");
        };
        expect(() => grammarForJsonSchema({type: "string"}, {convert, field: "x"})).toThrow(/^x: JSON schema conversion failed: boom$/);
    });

    it("follows $ref into $defs and definitions, cycles included", () => {
        const tree = {
            $defs: {
                node: {type: "object", properties: {value: {type: "integer"}, children: {type: "array", items: {$ref: "#/$defs/node"}}}}
            },
            $ref: "#/$defs/node"
        };
        expect(unsupportedSchemaKeywords(tree)).toEqual([]);
        expect(grammarForJsonSchema(tree)).toContain("ref-defs-node ::=");
        const legacy = {definitions: {n: {type: "number", minimum: 1}}, type: "object", properties: {x: {$ref: "#/definitions/n"}}};
        expect(unsupportedSchemaKeywords(legacy)).toEqual([
            {path: "#/definitions/n/minimum", reason: "minimum is not enforced for numbers (only for integers)"}
        ]);
    });
});

describe("unsupportedSchemaKeywords", () => {
    it("names every assertion the grammar would not enforce, with its JSON pointer", () => {
        const schema = {
            $schema: "https://json-schema.org/draft/2020-12/schema",
            title: "annotations are fine",
            type: "object",
            properties: {
                count: {type: "integer", multipleOf: 2, description: "fine"},
                price: {type: "number", minimum: 0},
                email: {type: "string", format: "email"},
                tags: {type: "array", items: {type: "string"}, uniqueItems: true},
                "a/b": {$ref: "#/$defs/x", type: "string"},
                code: {type: "string", pattern: "^\\d+$"},
                extra: {type: "object", minProperties: 1},
                choice: {anyOf: [{type: "string"}, {type: "null"}], default: null},
                either: {oneOf: [{type: "integer"}], not: {type: "null"}}
            },
            required: ["count", "missing"],
            $defs: {x: {type: "string", minLength: 2}}
        };
        expect(unsupportedSchemaKeywords(schema)).toEqual([
            {path: "#/properties/count/multipleOf", reason: "multipleOf is not enforced"},
            {path: "#/properties/price/minimum", reason: "minimum is not enforced for numbers (only for integers)"},
            {path: "#/properties/email/format", reason: expect.stringMatching(/^format "email" is not enforced \(known: date, time/)},
            {path: "#/properties/tags/uniqueItems", reason: "uniqueItems is not enforced"},
            {path: "#/properties/a~1b/type", reason: "type is ignored beside $ref"},
            {path: "#/properties/code/pattern", reason: "pattern uses an unsupported escape: \\d"},
            {path: "#/properties/extra/minProperties", reason: "minProperties is not enforced"},
            {path: "#/properties/either/not", reason: "not is ignored beside oneOf"},
            {path: "#/required", reason: '"missing" is required but not among properties: the grammar would not produce it'}
        ]);
        expect(() => grammarForJsonSchema(schema, {field: "response_format.json_schema.schema"})).toThrow(
            /^response_format\.json_schema\.schema: has 9 assertions the grammar would not enforce: #\/properties\/count\/multipleOf: multipleOf is not enforced; /
        );
    });

    it("accepts what the converter enforces, and type-specific keywords where they do not apply", () => {
        const schema = {
            type: "object",
            properties: {
                id: {type: "string", format: "uuid"},
                when: {type: "string", format: "date-time"},
                name: {type: "string", minLength: 1, maxLength: 20},
                score: {type: "integer", exclusiveMinimum: 0, maximum: 10},
                ratio: {type: "number"},
                flags: {type: "array", items: {type: "boolean"}, minItems: 1, maxItems: 3},
                pair: {type: "array", prefixItems: [{type: "string"}, {type: "integer"}], minItems: 2},
                maybe: {type: ["string", "null"], maxLength: 4},
                kind: {type: "string", enum: ["a", "b"]},
                fixed: {const: 3},
                merged: {allOf: [{$ref: "#/$defs/base"}, {type: "object", properties: {extra: {type: "boolean"}}}]},
                map: {type: "object", additionalProperties: {type: "integer"}},
                anything: {description: "any value"},
                count: {type: "integer", format: "int32"}
            },
            required: ["id"],
            additionalProperties: false,
            $defs: {base: {type: "object", properties: {base: {type: "string"}}, required: ["base"]}}
        };
        expect(unsupportedSchemaKeywords(schema)).toEqual([]);
        expect(grammarForJsonSchema(schema)).toContain("root ::=");
    });

    it("reads allOf as llama.cpp does: objects merged, enums intersected, nothing else", () => {
        expect(unsupportedSchemaKeywords({allOf: [{type: "string"}, {minLength: 3}]})).toEqual([
            {path: "#/allOf", reason: "allOf is enforced only when all its members are objects (or all are enums)"}
        ]);
        expect(unsupportedSchemaKeywords({type: "string", allOf: [{minLength: 1}]})).toEqual([
            {path: "#/allOf", reason: "allOf is enforced only for objects (it merges their properties)"}
        ]);
        expect(unsupportedSchemaKeywords({allOf: [{enum: [1, 2]}, {enum: [3]}]})).toEqual([
            {path: "#/allOf", reason: "its enums have no value in common"}
        ]);
        expect(unsupportedSchemaKeywords({allOf: [{enum: [1, 2]}, {enum: [2, 3]}]})).toEqual([]);
        expect(unsupportedSchemaKeywords({type: "object", properties: {a: {type: "string"}}, allOf: [{type: "object"}]})).toEqual([
            {path: "#/allOf", reason: "allOf is ignored beside properties"}
        ]);
        expect(unsupportedSchemaKeywords({allOf: [{properties: {a: {type: "string"}}}, {properties: {a: {type: "integer"}}}]})).toEqual([
            {path: "#/allOf/1/properties/a", reason: '"a" is also a property of allOf/0: the grammar would not merge them'}
        ]);
    });

    it("refuses bounds the grammar cannot hold and malformed schemas", () => {
        expect(unsupportedSchemaKeywords({type: "string", maxLength: 5000})).toEqual([
            {path: "#/maxLength", reason: "is 5000; the limit is 2000 (the most llama.cpp's grammar parser repeats an item)"}
        ]);
        expect(unsupportedSchemaKeywords({type: "array", minItems: 2000, maxItems: 1999})).toEqual([
            {path: "#/maxItems", reason: "is 1999; the limit is 1998 (the most llama.cpp's grammar parser repeats an item)"},
            {path: "#/minItems", reason: "exceeds maxItems"}
        ]);
        expect(() =>
            grammarForResponseFormat({type: "json_schema", json_schema: {name: "a", schema: {type: "array", maxItems: 1999}}})
        ).toThrow(
            "response_format.json_schema.schema: has an assertion the grammar would not enforce: #/maxItems: is 1999; the limit is 1998"
        );
        expect(unsupportedSchemaKeywords({type: "integer", minimum: 5, maximum: 1})).toEqual([
            {path: "#", reason: "no integer lies within its bounds"}
        ]);
        expect(unsupportedSchemaKeywords({type: "integer", minimum: 0, exclusiveMinimum: 3})).toEqual([
            {path: "#/exclusiveMinimum", reason: "is ignored beside minimum (give one of them)"}
        ]);
        expect(unsupportedSchemaKeywords({type: "array", prefixItems: [{type: "string"}], minItems: 2})).toEqual([
            {path: "#/minItems", reason: "is not enforced: the grammar gives exactly the 1 items listed"}
        ]);
        expect(unsupportedSchemaKeywords({type: "array", prefixItems: [{type: "string"}], items: false})).toEqual([
            {path: "#/prefixItems", reason: expect.stringMatching(/^is ignored beside items/)},
            {path: "#/items", reason: "a schema must be an object (boolean schemas are not supported)"}
        ]);
        expect(unsupportedSchemaKeywords({type: "strng"})).toEqual([{path: "#/type", reason: '"strng" is not a JSON Schema type'}]);
        expect(unsupportedSchemaKeywords({$ref: "https://example.com/s.json"})).toEqual([
            {path: "#/$ref", reason: "only references into the same document (#/…) are supported"}
        ]);
        expect(unsupportedSchemaKeywords(true)).toEqual([
            {path: "#", reason: "a schema must be an object (boolean schemas are not supported)"}
        ]);
        expect(unsupportedSchemaKeywords({minimum: 3})).toEqual([
            {path: "#/minimum", reason: "minimum is not enforced without a type (or a keyword that implies one)"}
        ]);
        let deep: Record<string, unknown> = {type: "string"};
        for (let level = 0; level < 200; level++) deep = {type: "array", items: deep};
        expect(unsupportedSchemaKeywords(deep)).toEqual([
            {path: expect.stringMatching(/^#(\/items){129}$/), reason: "nested deeper than 128 schemas"}
        ]);
    });
});

describe("unsupportedPattern", () => {
    it("accepts llama.cpp's regex subset", () => {
        for (const pattern of [
            "^[0-9]{5}$",
            "^(abc|de)+$",
            "^[A-Z][a-z]*( [A-Z][a-z]*)?$",
            "^(?:x|y){2,4}$",
            "^a\\.b\\-c$",
            "^[\\u00e0-\\u00ff]+$",
            "^ab?c*$",
            "^[-a-z]{,3}$"
        ])
            expect(unsupportedPattern(pattern), pattern).toBeUndefined();
    });

    it("refuses what the converter would not translate or what would break the JSON string", () => {
        const cases: Array<[string, RegExp]> = [
            ["[0-9]+", /anchored/],
            ["^\\d+$", /unsupported escape: \\d/],
            ["^\\w$", /unsupported escape/],
            ["^[\\s]$", /unsupported escape in a character class/],
            ["^(?=a)b$", /group syntax/],
            ["^a^b$", /anchor inside/],
            ["^a.b$", /'\.'/],
            ["^[^a]+$", /character class that matches a quote/],
            ["^[ -~]+$", /character class that matches a quote/],
            ['^a"b$', /quote/],
            ["^a\\\\b$", /backslash/],
            ["^a\\nb$", /control character/],
            ["^(ab$", /unbalanced/],
            ["^ab)$", /unbalanced/],
            ["^[ab$", /unterminated character class/],
            ["^a{2$", /unterminated curly/],
            ["^a{x}$", /invalid number/],
            ["^a{1,2,3}$", /wrong number of values/],
            ["^a{1,5000}$", /more than 2000 times/],
            ["^*a$", /nothing to repeat/],
            ["^a]$", /unsupported character: \]/]
        ];
        for (const [pattern, reason] of cases) expect(unsupportedPattern(pattern), pattern).toMatch(reason);
    });
});

describe("grammarForResponseFormat", () => {
    it("maps OpenAI's response_format shapes", () => {
        expect(grammarForResponseFormat(undefined)).toBeUndefined();
        expect(grammarForResponseFormat({type: "text"})).toBeUndefined();
        expect(grammarForResponseFormat({type: "json_object"})).toBe(grammarForJsonSchema({type: "object"}, {compact: true}));
        expect(grammarForResponseFormat({type: "json_object", schema: personSchema})).toBe(
            grammarForJsonSchema(personSchema, {compact: true})
        );
        expect(grammarForResponseFormat({type: "json_schema", json_schema: {name: "person", schema: personSchema}})).toBe(
            grammarForJsonSchema(personSchema)
        );
        expect(grammarForResponseFormat({type: "json_schema", json_schema: {name: "person", schema: personSchema, strict: true}})).toBe(
            grammarForJsonSchema(personSchema, {strict: true})
        );
        expect(grammarForResponseFormat({type: "json_schema", json_schema: {name: "any"}})).toBe(grammarForJsonSchema({type: "object"}));
    });

    it("refuses malformed formats with the field at fault", () => {
        const cases: Array<[unknown, RegExp]> = [
            ["json", /^response_format: must be an object/],
            [{type: "xml"}, /^response_format\.type: must be "text", "json_object" or "json_schema", got "xml"/],
            [{type: "json_schema"}, /^response_format\.json_schema: must be an object/],
            [{type: "json_schema", json_schema: {name: 3}}, /^response_format\.json_schema\.name: must be a string/],
            [{type: "json_schema", json_schema: {strict: "yes"}}, /^response_format\.json_schema\.strict: must be a boolean/],
            [
                {type: "json_schema", json_schema: {schema: {type: "number", maximum: 3}}},
                /^response_format\.json_schema\.schema: has an assertion/
            ],
            [{type: "json_object", schema: "x"}, /^response_format\.schema: has an assertion .*a schema must be an object/]
        ];
        for (const [format, message] of cases) {
            expect(() => grammarForResponseFormat(format)).toThrow(InvalidInputError);
            expect(() => grammarForResponseFormat(format)).toThrow(message);
        }
    });
});

describe("checkJsonSchema's size limits", () => {
    const properties = (count: number) => Object.fromEntries(Array.from({length: count}, (_, i) => [`p${i}`, {type: "integer"}]));

    it("are checked before any other walk: an oversized schema is too complex, whatever else it breaks", () => {
        const schema = {type: "object", properties: properties(10_000), not: {}};
        expect(() => checkJsonSchema(schema, {field: "response_format.json_schema.schema"})).toThrow(GrammarTooComplexError);
        expect(() => checkJsonSchema(schema)).toThrow("#/properties: has 10000 properties; the limit is 1000");
    });

    it("refuse a pattern that repeats a group able to match the empty string, and keep those that do not", () => {
        expect(() => checkJsonSchema({type: "string", pattern: "^((a?a?a?a?a?a?a?a?a?a?){0,10}){0,10}$"})).toThrow(
            '#/pattern: repeats the group "(a?a?a?a?a?a?a?a?a?a?)", which can match the empty string'
        );
        for (const pattern of ["^(((a|b|c)*(a|b)*){0,100})$", "^(a*)*$", "^(x|)+$", "^((a)?)?$"])
            expect(() => checkJsonSchema({type: "string", pattern}), pattern).toThrow(GrammarTooComplexError);
        for (const pattern of ["^(-?[0-9]+)*$", "^[a-z]+(-[a-z]+)*$", "^(?:ab)?$", "^(a[b]?)*$", "^(a{2,3}){2}$", "^[0-9]{3}-[0-9]{4}$"])
            expect(checkJsonSchema({type: "string", pattern}).text, pattern).toContain(JSON.stringify(pattern));
    });

    it("count no property as optional in strict mode, which makes them all required", () => {
        const schema = {type: "object", properties: properties(200)};
        expect(() => checkJsonSchema(schema)).toThrow("#/properties: has 200 optional properties; the limit is 100");
        expect(checkJsonSchema(schema, {strict: true}).text).toContain('"required":["p0"');
    });
});

describe("grammarForJsonSchemaFile", () => {
    it("reads a schema file, and names the file in its errors", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-schema-"));
        try {
            const good = join(directory, "person.json");
            await writeFile(good, JSON.stringify(personSchema));
            expect(grammarForJsonSchemaFile(good)).toBe(grammarForJsonSchema(personSchema));
            const bad = join(directory, "bad.json");
            await writeFile(bad, "{type: object}");
            expect(() => grammarForJsonSchemaFile(bad)).toThrow(new RegExp(`^${bad}: is not valid JSON`));
            expect(() => grammarForJsonSchemaFile(join(directory, "none.json"))).toThrow(/none\.json: cannot read the JSON schema/);
        } finally {
            await rm(directory, {recursive: true, force: true});
        }
    });
});

describe("the addon's jsonSchemaToGrammar", () => {
    it("refuses what is not a JSON schema text, without crashing", () => {
        const convert = nativeAddon().jsonSchemaToGrammar as (...args: unknown[]) => string;
        expect(() => convert()).toThrow(/schema must be a string/);
        expect(() => convert({type: "object"})).toThrow(/schema must be a string/);
        expect(() => convert("{bad")).toThrow(/schema is not valid JSON/);
        expect(() => convert("")).toThrow(/schema is not valid JSON/);
        expect(() => convert('{"type": "nope"}')).toThrow(/JSON schema conversion failed:\nJSON schema error at #: unrecognized type nope/);
        expect(() => convert('{"type": "array", "minItems": -1}')).toThrow(/minItems must be a non-negative integer/);
        expect(() => convert("[".repeat(300) + "]".repeat(300))).toThrow(/nested deeper than 256 levels/);
        expect(() => convert('"a string"')).toThrow(/schema must be an object/);
        expect(convert('{"type": "boolean"}')).toContain('root ::= ("true" | "false")');
    });
});
