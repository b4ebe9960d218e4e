import {InvalidInputError, TokenOutOfRangeError} from "../errors.js";

/** llama.cpp's token types (`enum llama_token_type`), stored in `tokenizer.ggml.token_type`. */
export enum SpmTokenType {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6
}

export interface TokenizerEntry {
    /** The piece as stored in the GGUF: spaces appear as "▁" (U+2581). */
    readonly text: string;
    /** SentencePiece score: among mergeable pairs, the pair forming the higher-scoring piece merges first. */
    readonly score: number;
    readonly type: SpmTokenType;
}

/** SentencePiece's visible space. SPM vocabularies store " " as this character. */
export const spmSpace = "\u2581";

/**
 * A byte-level tokenizer stored in GGUF as a SentencePiece ("llama") vocabulary with byte fallback,
 * reproducing llama.cpp's SPM tokenizer (llm_tokenizer_spm_session) exactly.
 *
 * Vocabulary: 0 `<unk>` (unknown), 1 `<s>` BOS and 2 `</s>` EOS (control), 3..258 the byte tokens
 * `<0x00>`..`<0xFF>` (id = 3 + byte), 259 `▁` (a space), then optional whole pieces.
 *
 * Why this shape (checked against the llama.cpp bundled with node-llama-cpp 3.22.1):
 * - Every string tokenizes: a character with no token of its own falls back to its UTF-8 bytes, so
 *   any script, emoji or combining mark works, and detokenisation concatenates bytes before
 *   decoding UTF-8, so multi-byte characters split over byte tokens come back intact.
 * - `tokenizer.ggml.add_space_prefix = false` stops SPM from inserting a space before the text.
 * - SPM always rewrites " " to "▁" before tokenising. Without a `▁` token a space would become the
 *   bytes E2 96 81 and detokenise to a literal "▁"; with it, spaces round-trip. The one lossy case,
 *   inherent to SPM: a literal "▁" in the input also becomes token 259 and decodes to a space.
 * - Control tokens are never parsed out of text (node-llama-cpp tokenizes with parse_special=false),
 *   so "<s>" typed in a prompt is just bytes; BOS/EOS are added by the caller as ids.
 *
 * Optional pieces (e.g. "the", " and") are merged the SPM way: repeatedly merge the adjacent pair
 * whose concatenation is a vocabulary entry with the highest score (ties: leftmost). A piece is only
 * reachable if it can be built by such pairwise merges from characters, so include its prefixes.
 */
export class ByteTokenizer {
    public static readonly unknownId = 0;
    public static readonly bosId = 1;
    public static readonly eosId = 2;
    public static readonly firstByteId = 3;
    public static readonly spaceId = 259;

    public readonly vocabulary: readonly TokenizerEntry[];
    private readonly idByText: ReadonlyMap<string, number>;

    public constructor(options: {pieces?: readonly string[]} = {}) {
        const entries: TokenizerEntry[] = [
            {text: "<unk>", score: 0, type: SpmTokenType.Unknown},
            {text: "<s>", score: 0, type: SpmTokenType.Control},
            {text: "</s>", score: 0, type: SpmTokenType.Control}
        ];
        for (let byte = 0; byte < 256; byte++) entries.push({text: byteTokenText(byte), score: 0, type: SpmTokenType.Byte});
        entries.push({text: spmSpace, score: 0, type: SpmTokenType.Normal});

        const idByText = new Map(entries.map((entry, id) => [entry.text, id]));
        (options.pieces ?? []).forEach((piece, index) => {
            const text = piece.replaceAll(" ", spmSpace);
            if (text.length === 0) throw new InvalidInputError("a piece must not be empty", `pieces[${index}]`);
            if (idByText.has(text))
                throw new InvalidInputError(`piece ${JSON.stringify(piece)} is already in the vocabulary`, `pieces[${index}]`);
            // Earlier pieces win merges: scores -1, -2, ... (all below nothing else that merges).
            idByText.set(text, entries.length);
            entries.push({text, score: -(index + 1), type: SpmTokenType.Normal});
        });
        this.vocabulary = entries;
        this.idByText = idByText;
    }

    public get size(): number {
        return this.vocabulary.length;
    }

    /** Token ids for `text`, without BOS/EOS; identical to node-llama-cpp's `model.tokenize(text)`. */
    public tokenize(text: string): number[] {
        if (text.length === 0) return [];
        // Round-trip through UTF-8 first so lone surrogates become U+FFFD, as they do on the way to llama.cpp.
        const wellFormed = Buffer.from(text, "utf8").toString("utf8");
        const symbols = Array.from(wellFormed.replaceAll(" ", spmSpace)).map((character) => ({
            text: character,
            previous: -1,
            next: -1
        }));
        symbols.forEach((symbol, index) => {
            symbol.previous = index - 1;
            symbol.next = index + 1 < symbols.length ? index + 1 : -1;
        });

        const queue = new BigramQueue();
        const tryAddBigram = (left: number, right: number): void => {
            if (left === -1 || right === -1) return;
            const merged = symbols[left].text + symbols[right].text;
            const id = this.idByText.get(merged);
            if (id !== undefined) queue.push({left, right, score: this.vocabulary[id].score, size: merged.length});
        };
        for (let index = 1; index < symbols.length; index++) tryAddBigram(index - 1, index);

        for (let bigram = queue.pop(); bigram !== undefined; bigram = queue.pop()) {
            const left = symbols[bigram.left];
            const right = symbols[bigram.right];
            // Stale entry: one side already merged elsewhere.
            if (left.text.length === 0 || right.text.length === 0 || left.text.length + right.text.length !== bigram.size) continue;
            left.text += right.text;
            right.text = "";
            left.next = right.next;
            if (right.next >= 0) symbols[right.next].previous = bigram.left;
            tryAddBigram(left.previous, bigram.left);
            tryAddBigram(bigram.left, left.next);
        }

        const ids: number[] = [];
        for (let index = 0; index !== -1; index = symbols[index].next) {
            const id = this.idByText.get(symbols[index].text);
            if (id !== undefined) {
                ids.push(id);
                continue;
            }
            // Merged symbols are always vocabulary entries, so only single characters get here.
            for (const byte of Buffer.from(symbols[index].text, "utf8")) ids.push(ByteTokenizer.firstByteId + byte);
        }
        return ids;
    }

    /** The bytes that `tokens` stand for; control and unknown tokens contribute nothing. */
    public detokenizeBytes(tokens: readonly number[]): Buffer {
        const parts: Buffer[] = [];
        tokens.forEach((token, index) => {
            if (!Number.isInteger(token) || token < 0 || token >= this.vocabulary.length)
                throw new TokenOutOfRangeError(`token ${token} is outside [0, ${this.vocabulary.length})`, `tokens[${index}]`);
            const entry = this.vocabulary[token];
            if (entry.type === SpmTokenType.Byte) parts.push(Buffer.of(token - ByteTokenizer.firstByteId));
            else if (entry.type === SpmTokenType.Normal || entry.type === SpmTokenType.UserDefined)
                parts.push(Buffer.from(entry.type === SpmTokenType.Normal ? entry.text.replaceAll(spmSpace, " ") : entry.text, "utf8"));
        });
        return Buffer.concat(parts);
    }

    /** Text for `tokens`, decoding the concatenated bytes as UTF-8 (invalid sequences become U+FFFD). */
    public detokenize(tokens: readonly number[]): string {
        return this.detokenizeBytes(tokens).toString("utf8");
    }
}

function byteTokenText(byte: number): string {
    return `<0x${byte.toString(16).toUpperCase().padStart(2, "0")}>`;
}

interface Bigram {
    readonly left: number;
    readonly right: number;
    readonly score: number;
    readonly size: number;
}

/** Max-heap on (score, then smaller left index): the order of llama.cpp's llm_bigram_spm comparator. */
class BigramQueue {
    private readonly heap: Bigram[] = [];

    public push(bigram: Bigram): void {
        const heap = this.heap;
        heap.push(bigram);
        let index = heap.length - 1;
        while (index > 0) {
            const parent = (index - 1) >> 1;
            if (!before(heap[index], heap[parent])) break;
            [heap[index], heap[parent]] = [heap[parent], heap[index]];
            index = parent;
        }
    }

    public pop(): Bigram | undefined {
        const heap = this.heap;
        if (heap.length === 0) return undefined;
        const top = heap[0];
        const last = heap.pop() as Bigram;
        if (heap.length > 0) {
            heap[0] = last;
            let index = 0;
            for (;;) {
                const left = 2 * index + 1;
                const right = left + 1;
                let best = index;
                if (left < heap.length && before(heap[left], heap[best])) best = left;
                if (right < heap.length && before(heap[right], heap[best])) best = right;
                if (best === index) break;
                [heap[index], heap[best]] = [heap[best], heap[index]];
                index = best;
            }
        }
        return top;
    }
}

function before(a: Bigram, b: Bigram): boolean {
    return a.score > b.score || (a.score === b.score && a.left < b.left);
}
