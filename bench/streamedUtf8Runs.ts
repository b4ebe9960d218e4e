/**
 * Streamed generations on the real-tokenizer fixtures, counted for chunks that break a character:
 * a chunk starting or ending inside a surrogate pair, or chunks that do not concatenate to the final
 * text (a chunk showed text the output does not have). Target-only sampling at T = 1 on random
 * weights, so every kind of token (partial UTF-8 pieces, control tokens, spaces before punctuation)
 * comes up. Runs per family from the command line (default 1000), and optionally which families
 * (default all):
 *
 *   npx tsx bench/streamedUtf8Runs.ts [RUNS] [FAMILY,…]
 */
import {mkdir} from "node:fs/promises";
import {loadModelBackend} from "../src/backend/loadModelBackend.js";
import {streamGeneration} from "../src/engine/generate.js";
import {writeRandomLlamaPair} from "../src/gguf/randomLlamaModel.js";
import {multilingualCorpus} from "../src/gguf/testing/multilingualCorpus.js";
import {familyVocabulary, type TokenizerFamily, tokenizerFamilies} from "../src/gguf/tokenizerFamilies.js";

const runs = Number(process.argv[2] ?? 1000);
const prompts = multilingualCorpus(runs, 31);
process.stdout.write(
    "| family | runs | tokens | streamed steps | tokens that are partial UTF-8 alone | runs with a broken chunk | seconds |\n|---|---|---|---|---|---|---|\n"
);
const families = (process.argv[3]?.split(",") ?? Object.keys(tokenizerFamilies)) as TokenizerFamily[];
for (const family of families) {
    if (!Object.hasOwn(tokenizerFamilies, family))
        throw new Error(`unknown family "${family}": ${Object.keys(tokenizerFamilies).join(", ")}`);
    const directory = `.specgate/bench/fixture-${family}`;
    await mkdir(directory, {recursive: true});
    const vocabulary = await familyVocabulary(family);
    const pair = await writeRandomLlamaPair({
        directory,
        seed: 3,
        vocabulary,
        target: {embeddingLength: 16, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 32},
        draft: {embeddingLength: 8, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 16}
    });
    const target = await loadModelBackend(pair.targetPath, {threads: 1, contextSize: 256});
    const started = performance.now();
    let tokens = 0;
    let chunks = 0;
    let partial = 0;
    let broken = 0;
    for (let seed = 0; seed < runs; seed++) {
        const stream = streamGeneration(target, undefined, prompts[seed], {sampling: {temperature: 1}, maxTokens: 12, seed});
        let streamed = "";
        let brokenHere = false;
        for (;;) {
            const next = await stream.next();
            if (next.done) {
                if (streamed !== next.value.text) brokenHere = true;
                tokens += next.value.tokens.length;
                partial += next.value.tokens.filter((token) => target.detokenize([token]).includes("\ufffd")).length;
                break;
            }
            chunks++;
            if (/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(next.value.text)) brokenHere = true;
            streamed += next.value.text;
        }
        if (brokenHere) broken++;
    }
    process.stdout.write(
        `| ${family} | ${runs} | ${tokens} | ${chunks} | ${partial} | ${broken} | ${((performance.now() - started) / 1000).toFixed(0)} |\n`
    );
    await target.dispose();
}
