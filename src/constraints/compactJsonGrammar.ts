/**
 * Structured outputs without free whitespace. llama.cpp's JSON-schema converter puts its rule
 * `space ::= | " " | "\n"{1,2} [ \t]{0,20}` between every two JSON tokens, so a model sampling at
 * T = 1 may spend up to 22 characters of whitespace at each of them and reach `max_tokens` inside the
 * JSON. compactJsonGrammar rewrites such a grammar to the form vLLM produces with
 * `disable-any-whitespace` (xgrammar's `any_whitespace=False` with its default separators, also
 * Python's `json.dumps` default): exactly one space after each `:` and `,` between tokens, none
 * elsewhere: `{"name": "Ada", "tags": [1, 2]}`. One form per value makes the output's length a
 * function of its content, and it is the form most JSON in training text has.
 */

/** The converter's whitespace rule (json-schema-to-grammar.cpp, SPACE_RULE). */
export const llamaCppSpaceRule = '| " " | "\\n"{1,2} [ \\t]{0,20}';
const spaceRule = "space";
/** The separator after `:` and `,`: a rule of its own (see separatorRuleName). */
const separatorBody = '" "?';

/** GBNF's lexical pieces: string literals, character classes, rule names, and anything else one character at a time. */
const piece = /"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[A-Za-z0-9-]+|\s+|./gsu;

/** Thrown when a grammar's whitespace rule is not the converter's: the rewrite would not know what it removes. */
export class UnknownWhitespaceRuleError extends Error {
    public constructor(body: string) {
        super(`the grammar's space rule is "${body}", not llama.cpp's "${llamaCppSpaceRule}"`);
        this.name = "UnknownWhitespaceRuleError";
    }
}

/**
 * `grammar` (GBNF from llama.cpp's json_schema_to_grammar, one rule a line) with its whitespace rule
 * emptied and each use of it right after a `":"` or `","` literal replaced by one optional space. A
 * grammar without a space rule comes back unchanged; one whose space rule is not the converter's
 * throws UnknownWhitespaceRuleError.
 *
 * The optional space is a rule of its own, defined on the first line: written inline (`" "?`) it would
 * add a rule inside the converter's repetition group `("," space item){m,n}`, and llama.cpp's grammar
 * parser refuses a group whose rules times its repetitions exceed 2000, which would halve the
 * minItems and maxItems a compact grammar can hold.
 */
export function compactJsonGrammar(grammar: string): string {
    const lines = grammar.split("\n");
    const definition = lines.findIndex((line) => line.startsWith(`${spaceRule} ::=`));
    if (definition < 0) return grammar;
    const body = lines[definition]!.slice(`${spaceRule} ::=`.length).trim();
    if (body !== llamaCppSpaceRule) throw new UnknownWhitespaceRuleError(body);
    const separator = separatorRuleName(lines);
    const rewritten = lines.map((line, index) => (index === definition ? `${spaceRule} ::= ""` : compactRule(line, separator)));
    return [`${separator} ::= ${separatorBody}`, ...rewritten].join("\n");
}

/** A rule name the grammar does not use: "separator", or "separator-N" for the first free N. */
function separatorRuleName(lines: readonly string[]): string {
    const names = new Set(lines.map((line) => line.slice(0, line.indexOf(" ::= "))));
    let name = "separator";
    for (let suffix = 1; names.has(name); suffix++) name = `separator-${suffix}`;
    return name;
}

/** One rule line with `space` after a separator literal made the separator rule; the other uses stay (the rule is now empty). */
function compactRule(line: string, separator: string): string {
    const arrow = line.indexOf(" ::= ");
    if (arrow < 0) return line;
    const pieces = line.slice(arrow + 5).match(piece) ?? [];
    let previous = "";
    const rewritten = pieces.map((text) => {
        const replaced = text === spaceRule && (previous === '":"' || previous === '","') ? separator : text;
        if (text.trim() !== "") previous = text;
        return replaced;
    });
    return `${line.slice(0, arrow)} ::= ${rewritten.join("")}`;
}
