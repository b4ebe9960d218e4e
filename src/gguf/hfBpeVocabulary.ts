import {InvalidInputError} from "../errors.js";
import {SpmTokenType} from "./ByteTokenizer.js";
import type {GgufVocabulary} from "./GgufVocabulary.js";
import {GgufValueType} from "./GgufValueType.js";
import type {GgufKeyValue} from "./llamaGgufMetadata.js";

/** The parts of a Hugging Face tokenizer.json / tokenizer_config.json pair a GGUF vocabulary is built from. */
export interface HfTokenizerFiles {
    readonly tokenizerJson: unknown;
    readonly tokenizerConfig: unknown;
}

export interface HfBpeVocabularyOptions {
    /** `tokenizer.ggml.pre`: llama.cpp's name for the pre-tokenizer ("qwen2", "llama-bpe", …). */
    readonly pre: string;
    /**
     * Special tokens by text where the checkpoint's config.json, not its tokenizer files, names them
     * (Qwen3: BOS `<|endoftext|>`); otherwise tokenizer_config.json's bos_token / eos_token / pad_token.
     */
    readonly bosToken?: string;
    readonly eosToken?: string;
    /** add_bos_token where the family's own files say it but the packaged ones do not (Llama 3). */
    readonly addBos?: boolean;
}

interface AddedToken {
    readonly id: number;
    readonly content: string;
    readonly special: boolean;
}

/**
 * A byte-level BPE tokenizer (tokenizer.json `model.type` "BPE") as llama.cpp's converter writes it
 * (convert_hf_to_gguf.py get_vocab_base and _set_vocab_gpt2, gguf-py SpecialVocab):
 *  - `tokenizer.ggml.model` "gpt2", `tokenizer.ggml.pre` as given;
 *  - tokens by id over [0, largest id]: the vocabulary's byte-level texts, then the added tokens;
 *    an id neither names is `[PAD<id>]`;
 *  - token types: NORMAL for the vocabulary, CONTROL for a special added token or one that looks
 *    special (`<|…|>`), USER_DEFINED for the other added tokens, UNUSED for padding;
 *  - merges as "left right" strings (a space inside a part written as U+0120, as the converter does);
 *  - BOS, EOS and padding ids from tokenizer_config.json (or the options), add_bos_token from
 *    tokenizer_config.json, else true when the post-processor's template starts with BOS;
 *  - the chat template from tokenizer_config.json.
 */
export function hfBpeVocabulary(files: HfTokenizerFiles, options: HfBpeVocabularyOptions): GgufVocabulary {
    const json = asRecord(files.tokenizerJson, "tokenizer.json");
    const config = asRecord(files.tokenizerConfig, "tokenizer_config.json");
    const model = asRecord(json.model, "tokenizer.json: model");
    if (model.type !== "BPE")
        throw new InvalidInputError(
            `model.type is ${JSON.stringify(model.type)}; only byte-level BPE tokenizers are written`,
            "tokenizer.json"
        );
    const vocab = asRecord(model.vocab, "tokenizer.json: model.vocab");
    const added = (Array.isArray(json.added_tokens) ? json.added_tokens : []).map((entry, index) => {
        const token = asRecord(entry, `tokenizer.json: added_tokens[${index}]`);
        if (!Number.isSafeInteger(token.id) || typeof token.content !== "string")
            throw new InvalidInputError("needs an integer id and a string content", `tokenizer.json: added_tokens[${index}]`);
        return {id: token.id as number, content: token.content, special: token.special === true} satisfies AddedToken;
    });

    const texts: (string | undefined)[] = [];
    const types: SpmTokenType[] = [];
    for (const [text, id] of Object.entries(vocab)) {
        if (!Number.isSafeInteger(id) || (id as number) < 0)
            throw new InvalidInputError(`token ${JSON.stringify(text)} has id ${String(id)}`, "tokenizer.json: model.vocab");
        texts[id as number] = text;
        types[id as number] = SpmTokenType.Normal;
    }
    for (const token of added) {
        texts[token.id] = token.content;
        types[token.id] = token.special || looksSpecial(token.content) ? SpmTokenType.Control : SpmTokenType.UserDefined;
    }
    const size = texts.length;
    const tokens = Array.from({length: size}, (_unused, id) => texts[id] ?? `[PAD${id}]`);
    const tokenTypes = Array.from({length: size}, (_unused, id) => (texts[id] === undefined ? SpmTokenType.Unused : types[id]));
    const merges = (Array.isArray(model.merges) ? model.merges : []).map((merge, index) => mergeText(merge, index));

    const idOf = (text: string | undefined, field: string): number | undefined => {
        if (text === undefined) return undefined;
        const id = tokens.indexOf(text);
        if (id < 0) throw new InvalidInputError(`names ${JSON.stringify(text)}, which is not a token`, field);
        return id;
    };
    const bos = idOf(options.bosToken ?? specialText(config.bos_token), "bos_token");
    const eos = idOf(options.eosToken ?? specialText(config.eos_token), "eos_token");
    const padding = idOf(specialText(config.pad_token), "pad_token");
    const addBos =
        options.addBos ??
        (typeof config.add_bos_token === "boolean" ? config.add_bos_token : templateStartsWith(json.post_processor, tokens[bos ?? -1]));
    const addEos = typeof config.add_eos_token === "boolean" ? config.add_eos_token : false;
    const chatTemplate = typeof config.chat_template === "string" ? config.chat_template : undefined;

    return {
        size,
        chatTemplate,
        metadata(paddingTokens: number): GgufKeyValue[] {
            const padded = Array.from({length: paddingTokens}, (_unused, index) => `[PAD${size + index}]`);
            const entries: GgufKeyValue[] = [
                {key: "tokenizer.ggml.model", type: GgufValueType.String, value: "gpt2"},
                {key: "tokenizer.ggml.pre", type: GgufValueType.String, value: options.pre},
                {
                    key: "tokenizer.ggml.tokens",
                    type: GgufValueType.Array,
                    value: {itemType: GgufValueType.String, items: [...tokens, ...padded]}
                },
                {
                    key: "tokenizer.ggml.token_type",
                    type: GgufValueType.Array,
                    value: {itemType: GgufValueType.Int32, items: [...tokenTypes, ...padded.map(() => SpmTokenType.Unused)]}
                },
                {key: "tokenizer.ggml.merges", type: GgufValueType.Array, value: {itemType: GgufValueType.String, items: merges}}
            ];
            return [...entries, ...specialTokenEntries({bos, eos, padding, addBos, addEos})];
        }
    };
}

/** The converter's does_token_look_special for the families written here: `<|…|>` and `<｜…｜>`. */
function looksSpecial(text: string): boolean {
    return (text.startsWith("<|") && text.endsWith("|>")) || (text.startsWith("<｜") && text.endsWith("｜>"));
}

function mergeText(merge: unknown, index: number): string {
    if (typeof merge === "string") return merge;
    if (Array.isArray(merge) && merge.length === 2 && merge.every((part) => typeof part === "string"))
        return merge.map((part: string) => part.replaceAll(" ", "\u0120")).join(" ");
    throw new InvalidInputError('must be a "left right" string or a [left, right] pair', `tokenizer.json: model.merges[${index}]`);
}

/** The GGUF keys of a vocabulary's special token ids (those it has) and whether BOS and EOS are added, in the converter's order. */
export function specialTokenEntries(tokens: {
    bos?: number;
    eos?: number;
    unknown?: number;
    padding?: number;
    addBos: boolean;
    addEos: boolean;
}): GgufKeyValue[] {
    const ids: Array<[string, number | undefined]> = [
        ["bos", tokens.bos],
        ["eos", tokens.eos],
        ["unknown", tokens.unknown],
        ["padding", tokens.padding]
    ];
    return [
        ...ids.flatMap(([name, id]) =>
            id === undefined ? [] : [{key: `tokenizer.ggml.${name}_token_id`, type: GgufValueType.Uint32, value: id}]
        ),
        {key: "tokenizer.ggml.add_bos_token", type: GgufValueType.Bool, value: tokens.addBos},
        {key: "tokenizer.ggml.add_eos_token", type: GgufValueType.Bool, value: tokens.addEos}
    ];
}

/** A tokenizer_config special token: a string, or an AddedToken object's content. */
export function specialText(value: unknown): string | undefined {
    if (typeof value === "string") return value;
    if (typeof value === "object" && value !== null && typeof (value as {content?: unknown}).content === "string")
        return (value as {content: string}).content;
    return undefined;
}

/** Whether the post-processor's single-sequence template (TemplateProcessing, possibly in a Sequence) starts with `token`. */
function templateStartsWith(postProcessor: unknown, token: string | undefined): boolean {
    if (token === undefined || typeof postProcessor !== "object" || postProcessor === null) return false;
    const processor = postProcessor as {type?: unknown; processors?: unknown; single?: unknown};
    const processors = Array.isArray(processor.processors) ? processor.processors : [processor];
    return processors.some(
        (entry: {type?: unknown; single?: unknown}) =>
            entry?.type === "TemplateProcessing" &&
            Array.isArray(entry.single) &&
            (entry.single[0] as {SpecialToken?: {id?: unknown}} | undefined)?.SpecialToken?.id === token
    );
}

/** A tokenizer file's JSON object, or a typed error naming `field`. */
export function asRecord(value: unknown, field: string): Record<string, unknown> {
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new InvalidInputError("must be a JSON object", field);
    return value as Record<string, unknown>;
}
