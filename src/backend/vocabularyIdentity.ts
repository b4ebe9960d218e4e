import {createHash} from "node:crypto";
import type {GgufMetadataEntry, GgufMetadataValue} from "../gguf/GgufMetadataValue.js";

/**
 * sha256 (hex) over every `tokenizer.ggml.*` metadata entry of a GGUF: the tokenizer model and
 * pre-tokenizer, each token's text, score and type, merges, the special-token ids and the
 * add_bos / add_eos / add_space_prefix flags, i.e. everything that decides how text maps to ids.
 * Taken from the file's own metadata, so two files share an identity exactly when llama.cpp would
 * build the same vocabulary from them (chat templates and other non-tokenizer keys are ignored).
 */
export function vocabularyIdentity(metadata: ReadonlyMap<string, GgufMetadataEntry>): string {
    const hash = createHash("sha256");
    const keys = [...metadata.keys()].filter((key) => key.startsWith("tokenizer.ggml.")).sort();
    for (const key of keys) {
        const entry = metadata.get(key) as GgufMetadataEntry;
        // Length-prefixed fields, so no two different entries serialise to the same bytes.
        hash.update(`${key.length}:${key}|${entry.type}|`);
        const value = JSON.stringify(canonical(entry.value));
        hash.update(`${value.length}:${value}\n`);
    }
    return hash.digest("hex");
}

function canonical(value: GgufMetadataValue): unknown {
    if (typeof value === "bigint") return `${value}n`;
    if (typeof value === "object") return {itemType: value.itemType, items: value.items.map(canonical)};
    return value;
}
