import {mkdir} from "node:fs/promises";
import {join} from "node:path";
import {writeRandomLlamaPair} from "../../../gguf/randomLlamaModel.js";
import {familyVocabulary, type TokenizerFamily} from "../../../gguf/tokenizerFamilies.js";

/** Tiny shapes: the tests are about the tokenizers, the weights are random. */
const shapes = {
    target: {embeddingLength: 16, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 32},
    draft: {embeddingLength: 8, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 16}
};

/**
 * Random-weight GGUFs with real families' vocabularies for drafting across tokenizers: the target of
 * `targetFamily` and the drafts of `draftFamilies`, each in its own folder under `directory`.
 */
export async function writeCrossTokenizerModels(
    directory: string,
    seed: number,
    targetFamily: TokenizerFamily,
    draftFamilies: readonly TokenizerFamily[]
): Promise<{target: string; drafts: Record<string, string>}> {
    const paths: Record<string, string> = {};
    for (const family of [targetFamily, ...draftFamilies]) {
        await mkdir(join(directory, family), {recursive: true});
        const pair = await writeRandomLlamaPair({
            directory: join(directory, family),
            seed,
            vocabulary: await familyVocabulary(family),
            ...shapes
        });
        paths[family] = family === targetFamily ? pair.targetPath : pair.draftPath;
    }
    return {target: paths[targetFamily]!, drafts: Object.fromEntries(draftFamilies.map((family) => [family, paths[family]!]))};
}
