import {generateCorpus} from "../foundry/corpus/generateCorpus.js";
import {parseCorpusMixture} from "../foundry/corpus/parseCorpusMixture.js";

export interface RepetitivePrompt {
    readonly id: string;
    readonly kind: "tool-session" | "json-rewrite" | "copy-drill";
    readonly prompt: string;
}

const maximumPromptBytes = 168;
const byteLength = (text: string) => new TextEncoder().encode(text).length;

/** The family's corpus seed (src/foundry/family/familyRecipe.ts), so the battery uses the family's own test problems. */
const familyCorpusSeed = 7;

/**
 * A battery where text repeats, built from the family corpus's English test split: the traffic that
 * lookup drafters are for. Documents are separated by a blank line, as in the corpus.
 *  - tool-session: a two-turn agent session, an earlier request with its call and a request for
 *    another tool (the new call repeats the JSON structure: braces, "name", "arguments");
 *  - json-rewrite: an earlier request with its call and the same request with other arguments
 *    (the new call rewrites the earlier JSON, changing only the values);
 *  - copy-drill: three solved copy drills and a new one (the family target copies 1–4 items reliably,
 *    longer contents not, so the drills stay short).
 * After its answer the target goes on writing documents of its own, which repeat across prompts.
 * Prompts stay within 168 bytes (the family's byte-level vocabulary makes that at most 169 tokens
 * with BOS), so that 80 generated tokens fit its 256-token context.
 * `perKind` prompts of each kind, deterministic.
 */
export function repetitivePrompts(perKind = 4): RepetitivePrompt[] {
    const corpus = generateCorpus({
        seed: familyCorpusSeed,
        samples: 0,
        mixture: parseCorpusMixture("balanced"),
        testProblemsPerTask: Math.max(50, 8 * perKind)
    });
    const english = (task: string) => corpus.test.filter((sample) => sample.task === task && sample.language === "en");
    const calls = english("tool-call");
    const drills = english("copy");
    const toolOf = (reference: string) => (JSON.parse(reference) as {name: string}).name;
    const prompts: RepetitivePrompt[] = [];
    const pairs = (sameTool: boolean) => {
        const found: string[] = [];
        for (let first = 0; first < calls.length && found.length < perKind; first++) {
            const second = calls.findIndex(
                (call, index) =>
                    index > first &&
                    (toolOf(call.reference) === toolOf(calls[first].reference)) === sameTool &&
                    !found.some((prompt) => prompt.includes(call.prompt)) &&
                    byteLength(`${calls[first].text}\n\n${call.prompt}`) <= maximumPromptBytes
            );
            if (second >= 0) found.push(`${calls[first].text}\n\n${calls[second].prompt}`);
        }
        return found;
    };
    pairs(false).forEach((prompt, index) => prompts.push({id: `tool-session-${index}`, kind: "tool-session", prompt}));
    pairs(true).forEach((prompt, index) => prompts.push({id: `json-rewrite-${index}`, kind: "json-rewrite", prompt}));
    for (let index = 0; index < perKind; index++) {
        const group = drills.slice(4 * index, 4 * index + 4);
        prompts.push({
            id: `copy-drill-${index}`,
            kind: "copy-drill",
            prompt: [...group.slice(0, 3).map((drill) => drill.text), group[3].prompt].join("\n\n")
        });
    }
    return prompts;
}
