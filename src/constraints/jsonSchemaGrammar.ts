import {readFileSync} from "node:fs";
import {anyNativeAddon} from "../backend/nativeAddon.js";
import {GrammarTooComplexError, InvalidInputError} from "../errors.js";
import {compactJsonGrammar} from "./compactJsonGrammar.js";
import {schemaBytesViolation, schemaLimitViolation} from "./schemaLimits.js";

/**
 * JSON schemas to GBNF grammars, for structured outputs: OpenAI's `response_format` as llama-server
 * serves it, and the CLI's `generate --json-schema FILE`. The conversion is llama.cpp's own
 * (json_schema_to_grammar in the native addon, the converter llama-server uses), so a schema yields
 * the grammar llama-server would constrain with.
 *
 * That converter ignores what it does not implement: an unknown keyword, a `format` it does not know,
 * `minimum` on a number, keywords beside a `$ref`, a `pattern` outside its regex subset (then "any
 * string"). Output constrained by such a grammar could break the schema, so every schema is walked
 * first, as the converter reads it, and each assertion it would not enforce is refused
 * (unsupportedSchemaKeywords) with its JSON pointer. Annotations (title, description, default,
 * examples, $schema, …) and keywords outside JSON Schema's vocabularies are ignored, as a validator does.
 *
 * Where the grammar is stricter than the schema, output still matches it: an object with `properties`
 * and no `additionalProperties` is closed, properties come in schema order (required ones first), a
 * `prefixItems` tuple has exactly its items, and `oneOf` is read as `anyOf` (alternatives that overlap
 * are not told apart: keep them disjoint, e.g. by a `const` discriminator).
 */

/** An assertion of a schema the grammar would not enforce: where it is (a JSON pointer) and why. */
export interface UnsupportedKeyword {
    /** JSON pointer of the keyword, e.g. "#/properties/age/multipleOf"; of the schema for a malformed schema. */
    readonly path: string;
    readonly reason: string;
}

/** What turns a schema (JSON text) into GBNF: the native addon's jsonSchemaToGrammar by default. */
export type SchemaConverter = (schemaJson: string) => string;

export interface JsonSchemaGrammarOptions {
    /**
     * OpenAI's `strict`: every object is closed (additionalProperties false; an explicit true or schema
     * is refused, as OpenAI refuses it) and all its properties are required. (llama-server ignores
     * `strict`; its grammar for an object with properties is closed anyway, but optional stays optional.)
     */
    readonly strict?: boolean;
    /**
     * No free whitespace between JSON tokens: at most one space, right after a `:` or `,`
     * (compactJsonGrammar; vLLM's disable_any_whitespace). Default: `strict`. Otherwise llama.cpp's
     * rule: up to 22 spaces and newlines wherever JSON allows whitespace.
     */
    readonly compact?: boolean;
    /** Names the schema in errors (a request field, a file). */
    readonly field?: string;
    /** Default: the jsonSchemaToGrammar of the first addon build that loads (NativeBackendUnavailableError when none is built). */
    readonly convert?: SchemaConverter;
}

/**
 * A schema ready to convert: its JSON text as the converter reads it (checked: every assertion
 * enforced, within schemaLimits), the field that names it in errors, and whether its grammar is made
 * compact after conversion.
 */
export interface CheckedSchema {
    readonly text: string;
    readonly field: string;
    readonly compact: boolean;
}

/**
 * The schema of an OpenAI `response_format`, checked: undefined for `{type: "text"}` (or none), any
 * JSON object for `{type: "json_object"}`, the schema for `{type: "json_schema", json_schema: {name,
 * schema, strict?}}`. As in llama-server, an absent or empty schema means any object, and
 * `json_object` may carry a `schema` of its own. Throws InvalidInputError (field "response_format…")
 * for a malformed format or assertions the grammar would not enforce, GrammarTooComplexError for a
 * schema over schemaLimits.
 */
export function responseFormatSchema(format: unknown): CheckedSchema | undefined {
    if (format === undefined || format === null) return undefined;
    if (!isObject(format)) throw new InvalidInputError("must be an object", "response_format");
    const type = format.type;
    if (type === "text") return undefined;
    if (type === "json_object") {
        const schema = format.schema;
        return checkJsonSchema(schema ?? {}, {compact: true, field: "response_format.schema"});
    }
    if (type === "json_schema") {
        const wrapper = format.json_schema;
        if (!isObject(wrapper)) throw new InvalidInputError("must be an object", "response_format.json_schema");
        if (wrapper.name !== undefined && typeof wrapper.name !== "string")
            throw new InvalidInputError("must be a string", "response_format.json_schema.name");
        const strict = wrapper.strict;
        if (strict !== undefined && strict !== null && typeof strict !== "boolean")
            throw new InvalidInputError("must be a boolean", "response_format.json_schema.strict");
        return checkJsonSchema(wrapper.schema ?? {}, {strict: strict === true, field: "response_format.json_schema.schema"});
    }
    throw new InvalidInputError(`must be "text", "json_object" or "json_schema", got ${JSON.stringify(type)}`, "response_format.type");
}

/**
 * The grammar for an OpenAI `response_format` (responseFormatSchema, then grammarOf on the calling
 * thread); undefined for text. The server converts asynchronously instead (compileConstraint).
 */
export function grammarForResponseFormat(format: unknown, convert?: SchemaConverter): string | undefined {
    const checked = responseFormatSchema(format);
    return checked === undefined ? undefined : grammarOf(checked, convert);
}

/** The grammar for the JSON schema in file `path`, converted on the calling thread; errors name the file. */
export function grammarForJsonSchemaFile(path: string, options: Omit<JsonSchemaGrammarOptions, "field"> = {}): string {
    return grammarOf(checkJsonSchemaFile(path, options), options.convert);
}

/**
 * The JSON schema in file `path`, checked as checkJsonSchema checks one (the CLI's `generate
 * --json-schema FILE`, which then compiles it with compileConstraint); errors name the file.
 */
export function checkJsonSchemaFile(path: string, options: Omit<JsonSchemaGrammarOptions, "field" | "convert"> = {}): CheckedSchema {
    let text: string;
    try {
        text = readFileSync(path, "utf8");
    } catch (error) {
        throw new InvalidInputError(`cannot read the JSON schema: ${(error as Error).message}`, path);
    }
    let schema: unknown;
    try {
        schema = JSON.parse(text);
    } catch (error) {
        throw new InvalidInputError(`is not valid JSON: ${(error as Error).message}`, path);
    }
    return checkJsonSchema(schema, {...options, field: path});
}

/**
 * The GBNF grammar (root rule "root") that constrains output to `schema`; an empty schema means any
 * object. Throws InvalidInputError listing every assertion the grammar would not enforce, or with the
 * converter's message when it refuses the schema; GrammarTooComplexError over schemaLimits.
 */
export function grammarForJsonSchema(schema: unknown, options: JsonSchemaGrammarOptions = {}): string {
    return grammarOf(checkJsonSchema(schema, options), options.convert);
}

/** `schema` checked for conversion (see grammarForJsonSchema for the errors); options.convert is not used. */
export function checkJsonSchema(schema: unknown, options: JsonSchemaGrammarOptions = {}): CheckedSchema {
    const field = options.field ?? "schema";
    // The size limits first, with an early exit: a hostile schema is refused before any walk of all of it.
    const oversized = schemaLimitViolation(schema, {allRequired: options.strict === true});
    if (oversized !== undefined) throw new GrammarTooComplexError(`${oversized.path}: ${oversized.reason}`, field);
    let effective = isObject(schema) && Object.keys(schema).length === 0 ? {type: "object"} : schema;
    if (options.strict === true) effective = strictSchema(effective, field);
    const issues = unsupportedSchemaKeywords(effective);
    if (issues.length > 0) {
        const listed = issues.map((issue) => `${issue.path}: ${issue.reason}`).join("; ");
        throw new InvalidInputError(
            `has ${issues.length === 1 ? "an assertion" : `${issues.length} assertions`} the grammar would not enforce: ${listed}`,
            field
        );
    }
    const text = JSON.stringify(effective);
    const violation = schemaBytesViolation(text);
    if (violation !== undefined) throw new GrammarTooComplexError(`${violation.path}: ${violation.reason}`, field);
    return {text, field, compact: options.compact ?? options.strict === true};
}

/** The grammar of a checked schema, converted on the calling thread (default: the addon's jsonSchemaToGrammar). */
export function grammarOf(checked: CheckedSchema, convert?: SchemaConverter): string {
    const converter = convert ?? ((text: string) => anyNativeAddon().jsonSchemaToGrammar(text));
    let grammar: string;
    try {
        grammar = converter(checked.text);
    } catch (error) {
        throw new InvalidInputError((error as Error).message, checked.field);
    }
    return finishGrammar(checked, grammar);
}

/** The one place a converted schema becomes its grammar, for every caller (sync or not): compacted where asked. */
export function finishGrammar(checked: CheckedSchema, converted: string): string {
    return checked.compact ? compactJsonGrammar(converted) : converted;
}

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Deepest schema nesting walked (the addon refuses JSON nested deeper than 256 levels anyway). */
const maxDepth = 128;
/** llama.cpp's grammars repeat an item at most this many times: a larger bound would be dropped (or the grammar refused). */
const maxRepetitions = 2000;
/**
 * The largest value of each count keyword whose grammar llama.cpp's parser accepts (docs/serving.md,
 * "Structured output limits"). The parser refuses a repeated group whose rules times its repetitions
 * exceed 2000 (MAX_REPETITION_THRESHOLD). maxItems without a minItems of at least 1 becomes an optional
 * group holding maxItems − 1 repetition rules, the repeated group and the item's rule: at most 1998.
 */
export const countLimits: Readonly<Record<string, number>> = {minLength: 2000, maxLength: 2000, minItems: 2000, maxItems: 1998};

const stringKeywords = ["pattern", "format", "minLength", "maxLength"];
const numberKeywords = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];
const arrayKeywords = [
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains"
];
const objectKeywords = [
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependencies"
];
/** Assertions on any instance, beyond type/enum/const/$ref/anyOf/oneOf, which are read before these. */
const generalKeywords = [
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef"
];
/** Every assertion keyword of JSON Schema (draft 4 to 2020-12); any other keyword constrains nothing. */
const assertionKeywords = new Set([
    "type",
    "enum",
    "const",
    "$ref",
    "anyOf",
    "oneOf",
    ...generalKeywords,
    ...stringKeywords,
    ...numberKeywords,
    ...arrayKeywords,
    ...objectKeywords
]);
/** The formats json_schema_to_grammar turns into grammar rules. */
const knownFormats = new Set(["date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"]);

/** What the converter makes of a schema node (json-schema.cpp, build_node), once $ref, anyOf/oneOf, type lists, const and enum are out of the way. */
type NodeKind = "object" | "allOf" | "array" | "string" | "integer" | "number" | "boolean" | "null" | "any";

/** The keywords each kind reads; the rest of its instance type's keywords it ignores. */
const consumedBy: Record<NodeKind, readonly string[]> = {
    object: ["type", "properties", "required", "additionalProperties"],
    allOf: ["type", "allOf"],
    array: ["type", "items", "prefixItems", "minItems", "maxItems"],
    string: ["type", "pattern", "format", "minLength", "maxLength"],
    integer: ["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
    number: ["type"],
    boolean: ["type"],
    null: ["type"],
    any: ["type"]
};

/** The keywords that constrain the instances a kind produces (the others do not apply to them). */
function relevantTo(kind: NodeKind): readonly string[] {
    switch (kind) {
        case "object":
        case "allOf":
            return [...generalKeywords, ...objectKeywords];
        case "array":
            return [...generalKeywords, ...arrayKeywords];
        case "string":
            return [...generalKeywords, ...stringKeywords];
        case "integer":
        case "number":
            return [...generalKeywords, ...numberKeywords];
        case "boolean":
        case "null":
            return generalKeywords;
        case "any":
            return [...assertionKeywords];
    }
}

/** Whether a keyword's value constrains nothing (it may then stand anywhere). */
function vacuous(key: string, value: unknown): boolean {
    if (key === "uniqueItems") return value === false;
    if (key === "additionalProperties") return value === true;
    if (key === "required") return Array.isArray(value) && value.length === 0;
    if (key === "minItems" || key === "minLength" || key === "minProperties") return value === 0;
    return false;
}

function pointer(path: string, ...segments: Array<string | number>): string {
    return segments.reduce<string>((joined, segment) => `${joined}/${String(segment).replace(/~/g, "~0").replace(/\//g, "~1")}`, path);
}

/**
 * Every assertion of `schema` that llama.cpp's converter would not turn into grammar (or that the
 * grammar would not hold to), in the order met; empty when the grammar enforces the whole schema.
 * Follows the converter's reading: `$ref` (into the same document) replaces its node, `oneOf` is read
 * as `anyOf`, a type list is one alternative per type, `const` and `enum` fix the value, and `allOf`
 * merges objects' properties only.
 */
export function unsupportedSchemaKeywords(schema: unknown): UnsupportedKeyword[] {
    const walker = new SchemaWalker(schema);
    walker.node(schema, "#", 0);
    return walker.issues;
}

class SchemaWalker {
    public readonly issues: UnsupportedKeyword[] = [];
    private readonly seen = new Set<string>();
    private readonly resolvedReferences = new Set<string>();

    public constructor(private readonly root: unknown) {}

    private report(path: string, reason: string): void {
        const key = `${path}\u0000${reason}`;
        if (this.seen.has(key)) return;
        this.seen.add(key);
        this.issues.push({path, reason});
    }

    public node(schema: unknown, path: string, depth: number): void {
        if (depth > maxDepth) {
            this.report(path, `nested deeper than ${maxDepth} schemas`);
            return;
        }
        if (!isObject(schema)) {
            this.report(path, "a schema must be an object (boolean schemas are not supported)");
            return;
        }
        const present = Object.keys(schema).filter((key) => assertionKeywords.has(key));
        const ignoredBeside = (keyword: string, keep: readonly string[]): void => {
            for (const key of present)
                if (key !== keyword && !keep.includes(key)) this.report(pointer(path, key), `${key} is ignored beside ${keyword}`);
        };
        if ("$ref" in schema) {
            ignoredBeside("$ref", []);
            this.reference(schema.$ref, pointer(path, "$ref"), depth);
            return;
        }
        if ("oneOf" in schema || "anyOf" in schema) {
            const keyword = "oneOf" in schema ? "oneOf" : "anyOf";
            ignoredBeside(keyword, []);
            this.members(schema[keyword], pointer(path, keyword), depth);
            return;
        }
        const type = schema.type;
        if (Array.isArray(type)) {
            if (type.length === 0) this.report(pointer(path, "type"), "must not be empty");
            // The converter reads {type: [a, b], …} as anyOf [{type: a, …}, {type: b, …}].
            for (const each of type) this.node({...schema, type: each}, path, depth);
            return;
        }
        if ("const" in schema) {
            ignoredBeside("const", ["type"]);
            return;
        }
        if ("enum" in schema) {
            ignoredBeside("enum", ["type"]);
            if (!Array.isArray(schema.enum) || schema.enum.length === 0) this.report(pointer(path, "enum"), "must be a non-empty array");
            return;
        }
        if (type !== undefined && typeof type !== "string") {
            this.report(pointer(path, "type"), "must be a string or an array of strings");
            return;
        }
        const kind = this.kindOf(schema, type, path);
        if (kind === undefined) return;
        const consumed = consumedBy[kind];
        for (const key of relevantTo(kind)) {
            if (!(key in schema) || consumed.includes(key)) continue;
            if (vacuous(key, schema[key])) continue;
            // additionalItems only adds to a tuple, and a tuple's grammar has exactly its items.
            if (key === "additionalItems" && Array.isArray(schema.items)) continue;
            this.report(pointer(path, key), this.ignoredReason(key, kind, schema));
        }
        switch (kind) {
            case "object":
                this.object(schema, path, depth);
                break;
            case "allOf":
                this.allOf(schema, path, depth);
                break;
            case "array":
                this.array(schema, path, depth);
                break;
            case "string":
                this.string(schema, path);
                break;
            case "integer":
                this.integer(schema, path);
                break;
            default:
                break;
        }
    }

    /** The converter's choice for a node without $ref, anyOf/oneOf, const or enum (undefined: reported). */
    private kindOf(schema: JsonObject, type: string | undefined, path: string): NodeKind | undefined {
        const hasProperties = "properties" in schema || ("additionalProperties" in schema && schema.additionalProperties !== true);
        switch (type) {
            case undefined:
                if (hasProperties) return "object";
                if ("allOf" in schema) return "allOf";
                if ("items" in schema || "prefixItems" in schema) return "array";
                if (
                    "pattern" in schema ||
                    "minLength" in schema ||
                    "maxLength" in schema ||
                    (typeof schema.format === "string" && knownFormats.has(schema.format))
                )
                    return "string";
                return "any";
            case "object":
                return !hasProperties && "allOf" in schema ? "allOf" : "object";
            case "string":
                if ("allOf" in schema) {
                    this.report(pointer(path, "allOf"), "allOf is enforced only for objects (it merges their properties)");
                    return undefined;
                }
                return "string";
            case "array":
            case "integer":
            case "number":
            case "boolean":
            case "null":
                return type;
            default:
                this.report(pointer(path, "type"), `${JSON.stringify(type)} is not a JSON Schema type`);
                return undefined;
        }
    }

    private ignoredReason(key: string, kind: NodeKind, schema: JsonObject): string {
        if (kind === "number" && numberKeywords.includes(key)) return `${key} is not enforced for numbers (only for integers)`;
        if (key === "format" && kind === "any")
            return `format ${JSON.stringify(schema.format)} is not enforced (known: ${[...knownFormats].join(", ")})`;
        if (key === "allOf") return kind === "object" ? "allOf is ignored beside properties" : "allOf is enforced only for objects";
        if (
            kind === "any" &&
            (objectKeywords.includes(key) || arrayKeywords.includes(key) || stringKeywords.includes(key) || numberKeywords.includes(key))
        )
            return `${key} is not enforced without a type (or a keyword that implies one)`;
        return `${key} is not enforced`;
    }

    private members(value: unknown, path: string, depth: number): void {
        if (!Array.isArray(value) || value.length === 0) {
            this.report(path, "must be a non-empty array of schemas");
            return;
        }
        value.forEach((member, index) => this.node(member, pointer(path, index), depth + 1));
    }

    /** A $ref: into the same document only ("#/…"), resolved as the converter does (raw segments, no ~ escapes). */
    private reference(value: unknown, path: string, depth: number): void {
        if (typeof value !== "string" || !value.startsWith("#/")) {
            this.report(path, "only references into the same document (#/…) are supported");
            return;
        }
        const target = this.resolve(value);
        if (target === undefined) {
            this.report(path, `${value} does not resolve`);
            return;
        }
        if (this.resolvedReferences.has(value)) return;
        this.resolvedReferences.add(value);
        this.node(target, value, depth + 1);
    }

    private resolve(reference: string): unknown {
        let target: unknown = this.root;
        for (const segment of reference.slice(2).split("/")) {
            if (Array.isArray(target)) {
                const index = /^\d+$/.test(segment) ? Number(segment) : Number.NaN;
                if (!(index < target.length)) return undefined;
                target = target[index];
            } else if (isObject(target) && Object.hasOwn(target, segment)) {
                target = target[segment];
            } else {
                return undefined;
            }
        }
        return target;
    }

    private object(schema: JsonObject, path: string, depth: number): void {
        const properties = schema.properties;
        if (properties !== undefined) {
            if (!isObject(properties)) this.report(pointer(path, "properties"), "must be an object");
            else
                for (const [name, property] of Object.entries(properties))
                    this.node(property, pointer(path, "properties", name), depth + 1);
        }
        const required = schema.required;
        if (required !== undefined) {
            if (!Array.isArray(required)) this.report(pointer(path, "required"), "must be an array of property names");
            else
                for (const name of required) {
                    if (typeof name !== "string") this.report(pointer(path, "required"), `${JSON.stringify(name)} is not a property name`);
                    else if (!isObject(properties) || !Object.hasOwn(properties, name))
                        this.report(
                            pointer(path, "required"),
                            `"${name}" is required but not among properties: the grammar would not produce it`
                        );
                }
        }
        const additional = schema.additionalProperties;
        if (additional !== undefined && typeof additional !== "boolean") {
            if (!isObject(additional)) this.report(pointer(path, "additionalProperties"), "must be a boolean or a schema");
            else this.node(additional, pointer(path, "additionalProperties"), depth + 1);
        }
    }

    /** allOf: the converter merges the members' properties (objects) or intersects their values (enums), nothing else. */
    private allOf(schema: JsonObject, path: string, depth: number): void {
        const at = pointer(path, "allOf");
        const members = schema.allOf;
        this.members(members, at, depth);
        if (!Array.isArray(members) || members.length === 0) return;
        const kinds = members.map((member) => this.memberKind(member));
        if (kinds.every((kind) => kind === "enum")) {
            const [first, ...rest] = members.map((member) =>
                (this.followed(member) as {enum: unknown[]}).enum.map((value) => JSON.stringify(value))
            );
            if (!first!.some((value) => rest.every((values) => values.includes(value))))
                this.report(at, "its enums have no value in common");
            return;
        }
        if (!kinds.every((kind) => kind === "object")) {
            this.report(at, "allOf is enforced only when all its members are objects (or all are enums)");
            return;
        }
        const owners = new Map<string, number>();
        members.forEach((member, index) => {
            const properties = (this.followed(member) as JsonObject).properties;
            if (!isObject(properties)) return;
            for (const name of Object.keys(properties)) {
                const owner = owners.get(name);
                if (owner !== undefined && owner !== index)
                    this.report(
                        pointer(at, index, "properties", name),
                        `"${name}" is also a property of allOf/${owner}: the grammar would not merge them`
                    );
                owners.set(name, index);
            }
        });
    }

    /** A schema with its $ref chain followed (undefined: unresolvable or circular). */
    private followed(schema: unknown): unknown {
        const visited = new Set<string>();
        let current = schema;
        while (isObject(current) && typeof current.$ref === "string") {
            if (visited.has(current.$ref)) return undefined;
            visited.add(current.$ref);
            current = current.$ref.startsWith("#/") ? this.resolve(current.$ref) : undefined;
        }
        return current;
    }

    private memberKind(member: unknown): "object" | "enum" | "other" {
        const target = this.followed(member);
        if (!isObject(target) || "anyOf" in target || "oneOf" in target || Array.isArray(target.type)) return "other";
        if (!("const" in target) && Array.isArray(target.enum)) return "enum";
        if ("const" in target || "enum" in target) return "other";
        const hasProperties = "properties" in target || ("additionalProperties" in target && target.additionalProperties !== true);
        const objectLike = target.type === "object" || (target.type === undefined && hasProperties);
        return objectLike && !(!hasProperties && "allOf" in target) ? "object" : "other";
    }

    private array(schema: JsonObject, path: string, depth: number): void {
        const items = schema.items;
        let tupleLength: number | undefined;
        if (items !== undefined) {
            if ("prefixItems" in schema)
                this.report(
                    pointer(path, "prefixItems"),
                    "is ignored beside items (leave items out: prefixItems alone gives exactly its items)"
                );
            if (Array.isArray(items)) {
                tupleLength = items.length;
                items.forEach((item, index) => this.node(item, pointer(path, "items", index), depth + 1));
            } else {
                this.node(items, pointer(path, "items"), depth + 1);
            }
        } else if ("prefixItems" in schema) {
            const prefix = schema.prefixItems;
            if (!Array.isArray(prefix)) this.node(prefix, pointer(path, "prefixItems"), depth + 1);
            else {
                tupleLength = prefix.length;
                prefix.forEach((item, index) => this.node(item, pointer(path, "prefixItems", index), depth + 1));
            }
        }
        const minItems = this.count(schema, "minItems", path);
        const maxItems = this.count(schema, "maxItems", path);
        if (tupleLength !== undefined) {
            // A tuple's grammar has exactly its items: bounds hold only if they admit that many.
            if ((minItems !== undefined && minItems > tupleLength) || (maxItems !== undefined && maxItems < tupleLength))
                this.report(
                    pointer(path, minItems !== undefined && minItems > tupleLength ? "minItems" : "maxItems"),
                    `is not enforced: the grammar gives exactly the ${tupleLength} items listed`
                );
        } else if (minItems !== undefined && maxItems !== undefined && minItems > maxItems) {
            this.report(pointer(path, "minItems"), "exceeds maxItems");
        }
    }

    /** A count keyword (minItems, maxLength, …): a non-negative integer within llama.cpp's repetition limit. */
    private count(schema: JsonObject, key: string, path: string): number | undefined {
        if (!(key in schema)) return undefined;
        const value = schema[key];
        if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
            this.report(pointer(path, key), "must be a non-negative integer");
            return undefined;
        }
        const limit = countLimits[key]!;
        if (value > limit)
            this.report(pointer(path, key), `is ${value}; the limit is ${limit} (the most llama.cpp's grammar parser repeats an item)`);
        return value;
    }

    private string(schema: JsonObject, path: string): void {
        const lengthKeys = ["minLength", "maxLength"].filter((key) => key in schema);
        if ("pattern" in schema) {
            for (const key of [...lengthKeys, ...("format" in schema ? ["format"] : [])])
                this.report(pointer(path, key), `${key} is ignored beside pattern`);
            if (typeof schema.pattern !== "string") this.report(pointer(path, "pattern"), "must be a string");
            else {
                const problem = unsupportedPattern(schema.pattern);
                if (problem !== undefined) this.report(pointer(path, "pattern"), problem);
            }
            return;
        }
        if ("format" in schema) {
            if (typeof schema.format !== "string" || !knownFormats.has(schema.format)) {
                this.report(
                    pointer(path, "format"),
                    `format ${JSON.stringify(schema.format)} is not enforced (known: ${[...knownFormats].join(", ")})`
                );
            } else {
                for (const key of lengthKeys) this.report(pointer(path, key), `${key} is ignored beside format`);
                return;
            }
        }
        const minLength = this.count(schema, "minLength", path);
        const maxLength = this.count(schema, "maxLength", path);
        if (minLength !== undefined && maxLength !== undefined && minLength > maxLength)
            this.report(pointer(path, "minLength"), "exceeds maxLength");
    }

    private integer(schema: JsonObject, path: string): void {
        const bound = (key: string): number | undefined => {
            if (!(key in schema)) return undefined;
            const value = schema[key];
            if (typeof value !== "number" || !Number.isFinite(value)) {
                this.report(
                    pointer(path, key),
                    typeof value === "boolean" ? "must be a number (draft 4's boolean form is not supported)" : "must be a number"
                );
                return undefined;
            }
            return value;
        };
        const minimum = bound("minimum");
        const exclusiveMinimum = bound("exclusiveMinimum");
        const maximum = bound("maximum");
        const exclusiveMaximum = bound("exclusiveMaximum");
        if ("minimum" in schema && "exclusiveMinimum" in schema)
            this.report(pointer(path, "exclusiveMinimum"), "is ignored beside minimum (give one of them)");
        if ("maximum" in schema && "exclusiveMaximum" in schema)
            this.report(pointer(path, "exclusiveMaximum"), "is ignored beside maximum (give one of them)");
        const low =
            minimum !== undefined ? Math.ceil(minimum) : exclusiveMinimum !== undefined ? Math.floor(exclusiveMinimum) + 1 : undefined;
        const high =
            maximum !== undefined ? Math.floor(maximum) : exclusiveMaximum !== undefined ? Math.ceil(exclusiveMaximum) - 1 : undefined;
        if (low !== undefined && high !== undefined && low > high) this.report(path, "no integer lies within its bounds");
        for (const [key, value] of [
            ["minimum/exclusiveMinimum", low],
            ["maximum/exclusiveMaximum", high]
        ] as const)
            if (value !== undefined && !Number.isSafeInteger(value)) this.report(path, `${key} lies beyond ±2^53`);
    }
}

/**
 * Why json_schema_to_grammar would not enforce `pattern` (undefined: it would). Mirrors its
 * _pattern_to_rule: anchored with ^ and $, groups (capturing or (?:…)), alternation, character
 * classes, the quantifiers * + ? {m,n} (n ≤ 2000), and escapes it knows (\t \r \n \\ \" \[ \] \- \xHH
 * \uHHHH \UHHHHHHHH and the regex metacharacters); no \d \w \s, lookarounds or inner anchors. The string
 * it matches goes into the JSON text as it is, so what could match `"`, `\` or a control character (`.`,
 * a negated class, such a literal or class) is refused too: the output would not be JSON.
 */
export function unsupportedPattern(pattern: string): string | undefined {
    if (pattern.length < 2 || !pattern.startsWith("^") || !pattern.endsWith("$")) return "pattern must be anchored with ^ and $";
    const body = pattern.slice(1, -1);
    const length = body.length;
    let index = 0;
    let depth = 0;
    const escapeLength = (at: number): number => {
        if (at + 1 >= length || body[at] !== "\\") return 0;
        const kind = body[at + 1]!;
        const digits = kind === "x" ? 2 : kind === "u" ? 4 : kind === "U" ? 8 : 0;
        if (digits === 0) return 'trn\\"[]-'.includes(kind) ? 2 : 0;
        if (at + 2 + digits > length) return 0;
        return /^[0-9a-fA-F]+$/.test(body.slice(at + 2, at + 2 + digits)) ? 2 + digits : 0;
    };
    /** The code point an escape of escapeLength's kind stands for. */
    const escaped = (at: number, size: number): number => {
        const kind = body[at + 1]!;
        if (size > 2) return Number.parseInt(body.slice(at + 2, at + size), 16);
        return ({t: 9, r: 13, n: 10} as Record<string, number>)[kind] ?? kind.codePointAt(0)!;
    };
    const unsafe = (codePoint: number): boolean => codePoint < 0x20 || codePoint === 0x22 || codePoint === 0x5c;
    const nonLiteral = (c: string | undefined): boolean => c !== undefined && "|.()[]{}*+?^$".includes(c);
    // The body is walked as the converter walks it; `sequenceLength` stands for its seq (only emptiness matters).
    const walk = (): string | undefined => {
        let sequenceLength = 0;
        while (index < length) {
            const c = body[index]!;
            if (c === ".") return "pattern uses '.', which matches quotes and backslashes (the output would not be JSON)";
            if (c === "(") {
                index++;
                if (body[index] === "?") {
                    if (body[index + 1] !== ":") return "pattern uses a group syntax other than (…) and (?:…)";
                    index += 2;
                }
                if (++depth > 100) return "pattern nests groups deeper than 100";
                const inner = walk();
                if (inner !== undefined) return inner;
                sequenceLength++;
            } else if (c === ")") {
                index++;
                if (depth === 0) return "pattern has unbalanced parentheses";
                depth--;
                return undefined;
            } else if (c === "^" || c === "$") {
                return "pattern has an anchor inside it";
            } else if (c === "[") {
                index++;
                const negated = body[index] === "^";
                if (negated) index++;
                // Read as llama.cpp's grammar parser reads the class the converter copies: a character or
                // escape, then "-" and another (not "]") for a range.
                const members: Array<[number, number]> = [];
                const character = (): number | string => {
                    if (body[index] === "\\") {
                        const size = escapeLength(index);
                        if (size === 0) return `pattern uses an unsupported escape in a character class: ${body.slice(index, index + 2)}`;
                        const codePoint = escaped(index, size);
                        index += size;
                        return codePoint;
                    }
                    const codePoint = body.codePointAt(index)!;
                    index += codePoint > 0xffff ? 2 : 1;
                    return codePoint;
                };
                while (index < length && body[index] !== "]") {
                    const low = character();
                    if (typeof low === "string") return low;
                    let high = low;
                    if (body[index] === "-" && index + 1 < length && body[index + 1] !== "]") {
                        index++;
                        const end = character();
                        if (typeof end === "string") return end;
                        high = end;
                    }
                    members.push([low, high]);
                }
                if (index >= length) return "pattern has an unterminated character class";
                index++;
                const matches = (codePoint: number): boolean =>
                    members.some(([low, high]) => low <= codePoint && codePoint <= high) !== negated;
                for (let codePoint = 0; codePoint <= 0x5c; codePoint++)
                    if (unsafe(codePoint) && matches(codePoint))
                        return "pattern has a character class that matches a quote, a backslash or a control character (the output would not be JSON)";
                sequenceLength++;
            } else if (c === "|") {
                index++;
                sequenceLength++;
            } else if (c === "*" || c === "+" || c === "?") {
                if (sequenceLength === 0) return "pattern has nothing to repeat";
                index++;
            } else if (c === "{") {
                const close = body.indexOf("}", index);
                if (close < 0) return "pattern has unterminated curly brackets";
                const parts = body.slice(index + 1, close).split(",");
                index = close + 1;
                if (parts.length !== 1 && parts.length !== 2) return "pattern has a repetition with the wrong number of values";
                for (const part of parts) {
                    if (parts.length === 2 && part === "") continue;
                    // std::stoi: leading blanks, a sign and digits, anything after them ignored.
                    const digits = /^\s*([+-]?\d+)/.exec(part);
                    const value = digits === null ? Number.NaN : Number(digits[1]);
                    if (!Number.isSafeInteger(value) || value < 0) return "pattern has an invalid number in a repetition";
                    if (value > maxRepetitions) return `pattern repeats more than ${maxRepetitions} times (llama.cpp's grammar limit)`;
                }
                if (sequenceLength === 0) return "pattern has nothing to repeat";
            } else {
                let literal = 0;
                while (index < length) {
                    const here = body[index]!;
                    if (here === "\\") {
                        if (index === length - 1) return "pattern ends with a backslash";
                        const next = body[index + 1]!;
                        if ("^$.[]()|{}*+?".includes(next)) {
                            index += 2;
                        } else {
                            const size = escapeLength(index);
                            if (size === 0) return `pattern uses an unsupported escape: ${body.slice(index, index + 2)}`;
                            if (unsafe(escaped(index, size)))
                                return `pattern matches a quote, a backslash or a control character (${body.slice(index, index + size)}): the output would not be JSON`;
                            index += size;
                        }
                        literal++;
                    } else if (here === '"') {
                        return 'pattern matches a quote (")": the output would not be JSON';
                    } else if (
                        !nonLiteral(here) &&
                        (index === length - 1 || literal === 0 || body[index + 1] === "." || !nonLiteral(body[index + 1]))
                    ) {
                        if (unsafe(here.codePointAt(0)!)) return "pattern matches a control character: the output would not be JSON";
                        index++;
                        literal++;
                    } else {
                        break;
                    }
                }
                if (literal === 0) return `pattern has an unsupported character: ${c}`;
                sequenceLength++;
            }
        }
        return undefined;
    };
    const problem = walk();
    if (problem !== undefined) return problem;
    if (index < length || depth !== 0) return "pattern has unbalanced parentheses";
    return undefined;
}

/**
 * `schema` under OpenAI's strict mode: every object closed and all its properties required. An object
 * that asks for additional properties contradicts strict mode and is refused, as OpenAI refuses it.
 */
function strictSchema(schema: unknown, field: string): unknown {
    const visit = (node: unknown, path: string, depth: number): unknown => {
        if (!isObject(node) || depth > maxDepth) return node;
        const result: JsonObject = {...node};
        const types = Array.isArray(node.type) ? node.type : [node.type];
        const isObjectSchema = types.includes("object") || "properties" in node;
        for (const key of ["properties", "$defs", "definitions"]) {
            const children = node[key];
            if (isObject(children))
                result[key] = Object.fromEntries(
                    Object.entries(children).map(([name, child]) => [name, visit(child, pointer(path, key, name), depth + 1)])
                );
        }
        for (const key of ["anyOf", "oneOf", "allOf", "prefixItems", "items"]) {
            const children = node[key];
            if (Array.isArray(children)) result[key] = children.map((child, index) => visit(child, pointer(path, key, index), depth + 1));
            else if (key === "items" && isObject(children)) result[key] = visit(children, pointer(path, key), depth + 1);
        }
        if (isObject(node.additionalProperties))
            result.additionalProperties = visit(node.additionalProperties, pointer(path, "additionalProperties"), depth + 1);
        if (isObjectSchema) {
            if (node.additionalProperties !== undefined && node.additionalProperties !== false)
                throw new InvalidInputError(
                    `${pointer(path, "additionalProperties")}: strict mode needs additionalProperties false`,
                    field
                );
            result.additionalProperties = false;
            if (isObject(node.properties)) {
                const required = Array.isArray(node.required) ? node.required : [];
                result.required = [...new Set([...required, ...Object.keys(node.properties)])];
            }
        }
        return result;
    };
    return visit(schema, "#", 0);
}
