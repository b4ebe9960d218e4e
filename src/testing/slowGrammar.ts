/**
 * GBNF whose construction grows as 2^depth, for tests and benches that need a grammar job to run for
 * a while: llama.cpp builds a stack for every way to reach the first "a" through `depth` nested pairs
 * of optional rules (on one core of the project's Xeon: depth 14 about 0.8 s, 15 about 3 s, 17 tens
 * of seconds).
 */
export function slowGrammar(depth: number): string {
    const rules = [`root ::= r${depth}`, 'r0 ::= "a"'];
    for (let level = 1; level <= depth; level++) rules.push(`r${level} ::= r${level - 1}? r${level - 1}?`);
    return rules.join("\n");
}
