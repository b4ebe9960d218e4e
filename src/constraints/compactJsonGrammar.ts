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
/** The separator after `:` and `,`. */
const separator = '" "?';

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
 * emptied and each use of it right after a `":"` or `","` literal replaced by one space. A grammar
 * without a space rule comes back unchanged; one whose space rule is not the converter's throws
 * UnknownWhitespaceRuleError.
 */
export function compactJsonGrammar(grammar: string): string {
    const lines = grammar.split("\n");
    const definition = lines.findIndex((line) => line.startsWith(`${spaceRule} ::=`));
    if (definition < 0) return grammar;
    const body = lines[definition]!.slice(`${spaceRule} ::=`.length).trim();
    if (body !== llamaCppSpaceRule) throw new UnknownWhitespaceRuleError(body);
    return lines.map((line, index) => (index === definition ? `${spaceRule} ::= ""` : compactRule(line))).join("\n");
}

/** One rule line with `space` after a separator literal made one space; the other uses stay (the rule is now empty). */
function compactRule(line: string): string {
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
