/**
 * The sizes of a structured-output schema no time budget can make safe, refused before any grammar
 * work starts. Each limit sits well below where bench/grammarLimits.ts measured conversion, grammar
 * construction or the first steps' masks reaching a second on one core (docs/serving.md, "Structured
 * output limits", has the table and the figures).
 */
export const schemaLimits = {
    /** The schema's JSON text, in bytes. */
    schemaBytes: 262_144,
    /** Properties of one object. */
    properties: 1000,
    /** Properties of one object that are not required: the converter's cost grows about as their cube. */
    optionalProperties: 100,
    /** Values of one `enum`. */
    enumValues: 1000,
    /** Alternatives of one `anyOf` / `oneOf` (a `type` list counts as one alternative per type). */
    alternatives: 1000,
    /**
     * A `pattern`'s bounded repetitions ({n}, {m,n}) multiplied along each nesting path (`^((a{0,10}){0,10})$`
     * is 100): the grammar's stacks grow with it on every step.
     */
    patternRepetitionProduct: 100,
    /** minLength, maxLength, minItems, maxItems and a pattern's repetition bounds added up over the whole schema. */
    repetitionSum: 20_000
} as const;

/** Where a schema breaks a limit: its JSON pointer and what the limit is. */
export interface SchemaLimitViolation {
    readonly path: string;
    readonly reason: string;
}

const countKeywords = ["minLength", "maxLength", "minItems", "maxItems"];

/** How schemaLimitViolation reads a schema. */
export interface SchemaLimitOptions {
    /** Every property counts as required (OpenAI's strict mode makes them so). */
    readonly allRequired?: boolean;
}

/**
 * The first part of `schema` over a limit of schemaLimits (the JSON text's size apart: see
 * schemaBytesViolation). One pass over the schema's nodes, each costing its own keys; the walk stops
 * at the first part over a limit, so a hostile schema costs little more than its first large part.
 */
export function schemaLimitViolation(schema: unknown, options: SchemaLimitOptions = {}): SchemaLimitViolation | undefined {
    const walk = new LimitWalk(options.allRequired === true);
    walk.visit(schema, "#", 0);
    if (walk.violation === undefined && walk.repetitionSum > schemaLimits.repetitionSum)
        return {
            path: "#",
            reason: `its repetition bounds (minLength, maxLength, minItems, maxItems, pattern {m,n}) add up to ${walk.repetitionSum}; the limit is ${schemaLimits.repetitionSum}`
        };
    return walk.violation;
}

/** The schema's JSON text over schemaLimits.schemaBytes, or undefined. */
export function schemaBytesViolation(schemaJson: string): SchemaLimitViolation | undefined {
    const bytes = Buffer.byteLength(schemaJson, "utf8");
    if (bytes <= schemaLimits.schemaBytes) return undefined;
    return {path: "#", reason: `the schema has ${bytes} bytes of JSON; the limit is ${schemaLimits.schemaBytes}`};
}

class LimitWalk {
    public violation: SchemaLimitViolation | undefined;
    public repetitionSum = 0;

    public constructor(private readonly allRequired: boolean) {}

    public visit(node: unknown, path: string, depth: number): void {
        // Nesting is bounded by the request's parser (and the converter) before any of this matters.
        if (this.violation !== undefined || depth > 512) return;
        if (Array.isArray(node)) {
            for (let index = 0; index < node.length && this.violation === undefined; index++)
                this.visit(node[index], `${path}/${index}`, depth + 1);
            return;
        }
        if (typeof node !== "object" || node === null) return;
        const schema = node as Record<string, unknown>;
        this.check(schema, path);
        for (const key in schema) {
            if (this.violation !== undefined) return;
            const value = schema[key];
            if (typeof value === "object" && value !== null) this.visit(value, `${path}/${escapePointer(key)}`, depth + 1);
        }
    }

    private check(schema: Record<string, unknown>, path: string): void {
        const over = (keyword: string, reason: string): void => {
            this.violation ??= {path: `${path}/${keyword}`, reason};
        };
        const properties = schema.properties;
        if (typeof properties === "object" && properties !== null && !Array.isArray(properties)) {
            const names = Object.keys(properties);
            const required = new Set(Array.isArray(schema.required) ? schema.required : []);
            const optional = this.allRequired ? 0 : names.filter((name) => !required.has(name)).length;
            if (names.length > schemaLimits.properties)
                over("properties", `has ${names.length} properties; the limit is ${schemaLimits.properties}`);
            else if (optional > schemaLimits.optionalProperties)
                over(
                    "properties",
                    `has ${optional} optional properties; the limit is ${schemaLimits.optionalProperties} (make more of them required)`
                );
        }
        if (Array.isArray(schema.enum) && schema.enum.length > schemaLimits.enumValues)
            over("enum", `has ${schema.enum.length} values; the limit is ${schemaLimits.enumValues}`);
        for (const keyword of ["anyOf", "oneOf"]) {
            const members = schema[keyword];
            if (Array.isArray(members) && members.length > schemaLimits.alternatives)
                over(keyword, `has ${members.length} alternatives; the limit is ${schemaLimits.alternatives}`);
        }
        if (typeof schema.pattern === "string") {
            const {product, sum} = patternRepetitions(schema.pattern);
            this.repetitionSum += sum;
            if (product > schemaLimits.patternRepetitionProduct)
                over(
                    "pattern",
                    `nests bounded repetitions whose bounds multiply to ${product}; the limit is ${schemaLimits.patternRepetitionProduct}`
                );
            const repeatedEmpty = this.violation === undefined ? repeatedEmptyGroup(schema.pattern) : undefined;
            if (repeatedEmpty !== undefined)
                over(
                    "pattern",
                    `repeats the group "${repeatedEmpty}", which can match the empty string: its parses multiply on every character; the limit is no such group (make its content required: (a+)? rather than (a*)*)`
                );
        }
        for (const keyword of countKeywords) {
            const value = schema[keyword];
            if (typeof value === "number" && Number.isFinite(value) && value > 0) this.repetitionSum += value;
        }
    }
}

function escapePointer(key: string): string {
    return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/**
 * A regex's bounded repetitions: `product`, the largest product of the upper bounds ({n}, {m,n}; {m,}
 * counts m) along a nesting path, and `sum`, all of them added. Escapes and character classes are
 * skipped; the pattern's syntax is judged elsewhere (unsupportedPattern).
 */
export function patternRepetitions(pattern: string): {product: number; sum: number} {
    let index = 0;
    let sum = 0;
    /** The largest product inside a sequence, up to its closing parenthesis (consumed) or the end. */
    const sequence = (): number => {
        let largest = 1;
        let atom = 1;
        while (index < pattern.length) {
            const c = pattern[index]!;
            if (c === "\\") {
                index += 2;
                atom = 1;
            } else if (c === "[") {
                index++;
                while (index < pattern.length && pattern[index] !== "]") index += pattern[index] === "\\" ? 2 : 1;
                index++;
                atom = 1;
            } else if (c === "(") {
                index++;
                atom = sequence();
                largest = Math.max(largest, atom);
            } else if (c === ")") {
                index++;
                return largest;
            } else if (c === "{") {
                const close = pattern.indexOf("}", index);
                if (close < 0) return largest;
                const bounds = pattern.slice(index + 1, close).split(",");
                const upper = Number.parseInt(bounds.length === 2 && bounds[1]!.trim() !== "" ? bounds[1]! : bounds[0]!, 10);
                index = close + 1;
                if (Number.isFinite(upper) && upper > 0) {
                    sum += upper;
                    atom *= upper;
                    largest = Math.max(largest, atom);
                }
            } else {
                index++;
                atom = 1;
            }
        }
        return largest;
    };
    let product = 1;
    while (index < pattern.length) product = Math.max(product, sequence());
    return {product, sum};
}

/**
 * The first group of a regex that a quantifier (?, *, +, {m,n}) repeats although it can match the
 * empty string (`(a?b?){0,10}`, `(a*)*`, `(x|)+`), or undefined. Such a repetition is ambiguous: the
 * grammar keeps one parse per way the empty iterations can fall, so its stacks, and every step's
 * cost, multiply with each nesting, well within the repetition product's limit (docs/serving.md,
 * "Structured output limits"). Escapes and character classes are single characters; the pattern's syntax
 * is judged elsewhere (unsupportedPattern).
 */
export function repeatedEmptyGroup(pattern: string): string | undefined {
    let index = 0;
    let found: string | undefined;
    const quantifierAt = (at: number): number => {
        const c = pattern[at];
        if (c === "?" || c === "*" || c === "+") return 1;
        if (c !== "{") return 0;
        const close = pattern.indexOf("}", at);
        return close > at && /^\{\d+(,\d*)?\}$/.test(pattern.slice(at, close + 1)) ? close + 1 - at : 0;
    };
    const minimumOf = (quantifier: string): number =>
        quantifier === "+" ? 1 : quantifier.startsWith("{") ? Number.parseInt(quantifier.slice(1), 10) : 0;
    /** Whether the alternatives up to the closing parenthesis (consumed) or the end can match the empty string. */
    const alternatives = (): boolean => {
        let nullable = false;
        let sequence = true;
        while (index < pattern.length) {
            const c = pattern[index]!;
            if (c === ")") {
                index++;
                return nullable || sequence;
            }
            if (c === "|") {
                index++;
                nullable ||= sequence;
                sequence = true;
                continue;
            }
            const start = index;
            let atomNullable = false;
            if (c === "\\") index += 2;
            else if (c === "[") {
                index++;
                while (index < pattern.length && pattern[index] !== "]") index += pattern[index] === "\\" ? 2 : 1;
                index++;
            } else if (c === "(") {
                index += pattern.startsWith("(?:", index) ? 3 : 1;
                atomNullable = alternatives();
            } else {
                index++;
                // Anchors match the empty string; any other character does not.
                atomNullable = c === "^" || c === "$";
            }
            const length = quantifierAt(index);
            if (length > 0) {
                const quantifier = pattern.slice(index, index + length);
                if (atomNullable && c === "(") found ??= pattern.slice(start, index);
                atomNullable ||= minimumOf(quantifier) === 0;
                index += length;
            }
            sequence &&= atomNullable;
        }
        return nullable || sequence;
    };
    while (index < pattern.length && found === undefined) alternatives();
    return found;
}
