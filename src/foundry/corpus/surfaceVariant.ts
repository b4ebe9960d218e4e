import type {Random} from "../../random/Random.js";
import type {CorpusTask} from "./CorpusSample.js";

/**
 * Equivalent ways of writing an answer, the "neutral divergence" of the Calibrated SD paper §5: its rescued tokens
 * were math formatting (45%) and punctuation and spacing (20%). Each dimension of a document takes its
 * alternative form with probability `probability`, independently, and keeps it for the whole answer
 * (a writer's style): arithmetic spacing around operators ("3 + 4 = 7" / "3+4=7"), the step separator
 * (", " / "; "), the multiplication sign ("*" / "×"); a tool call's JSON spacing after ":" and after ","
 * (`{"a":1,"b":2}` / `{"a": 1, "b": 2}`). Every form scores the same: the final number, the parsed call.
 */
export function surfaceVariant(task: CorpusTask, answer: string, random: Random, probability: number): string {
    const alternative = () => random.nextDouble() < probability;
    switch (task) {
        case "arithmetic": {
            const [working, finalLine] = splitFinalLine(answer);
            const compact = alternative();
            const semicolon = alternative();
            const times = alternative();
            let varied = working;
            if (times) varied = varied.replaceAll(" * ", " × ");
            if (semicolon) varied = varied.replaceAll(", ", "; ");
            if (compact) varied = varied.replace(/ ([-+*×=]) /g, "$1");
            return varied + finalLine;
        }
        case "tool-call": {
            const colonSpace = alternative();
            const commaSpace = alternative();
            const leading = answer.slice(0, answer.length - answer.trimStart().length);
            return leading + stringifyJson(JSON.parse(answer) as unknown, colonSpace ? ": " : ":", commaSpace ? ", " : ",");
        }
        default:
            return answer;
    }
}

/** Arithmetic answers end with a GSM8K-style "\n#### N" line, which stays as it is. */
function splitFinalLine(answer: string): [string, string] {
    const at = answer.lastIndexOf("\n####");
    return at < 0 ? [answer, ""] : [answer.slice(0, at), answer.slice(at)];
}

/** JSON.stringify with Python json.dumps-style separators, keys in their original order. */
function stringifyJson(value: unknown, keySeparator: string, itemSeparator: string): string {
    if (Array.isArray(value)) return `[${value.map((item) => stringifyJson(item, keySeparator, itemSeparator)).join(itemSeparator)}]`;
    if (typeof value === "object" && value !== null)
        return `{${Object.entries(value)
            .map(([key, item]) => `${JSON.stringify(key)}${keySeparator}${stringifyJson(item, keySeparator, itemSeparator)}`)
            .join(itemSeparator)}}`;
    return JSON.stringify(value);
}
