/**
 * Test strings for tokenizer agreement checks: hand-picked edge cases plus seeded random mixtures of
 * many scripts, emoji sequences, combining marks, whitespace runs and SPM/llama.cpp special syntax.
 * Used by tests only; lives outside *.test.ts so two test files share one corpus.
 */
const handPicked = [
    "",
    " ",
    "  ",
    "a",
    " a",
    "a ",
    " a ",
    "hello world",
    "Hello, World!",
    "  leading two",
    "trailing two  ",
    "line\nbreak",
    "\n",
    "\n\n\n",
    "crlf\r\nline",
    "\ttab\tseparated\t",
    " \n \t ",
    "end with newline\n",
    "日本語のテキスト",
    "こんにちは、世界。",
    "東京 と 大阪",
    " 先頭スペース",
    "末尾スペース ",
    "😀",
    "👍🏽",
    "👨‍👩‍👧‍👦 family",
    "🇯🇵🇺🇸 flags",
    "emoji😀inside",
    "e\u0301",
    "a\u0308\u0304",
    "Z\u0351\u0352\u0353",
    "Ελληνικά",
    "Русский текст",
    "العربية",
    "हिन्दी",
    "ภาษาไทย",
    "한국어",
    "עברית",
    "\u200b zero width",
    "\u00a0nbsp",
    "▁",
    "▁▁ literal",
    "<s>",
    "</s>",
    "<unk>",
    "<0x41>",
    "<0xZZ>",
    "\u0000nul",
    "\u007fdel",
    "\ufeffbom",
    "\ud800 lone surrogate",
    "pair \ud83d\ude00 ok",
    "the then them there and andy band",
    "thethethe",
    "ing ing sing",
    " the the",
    "abc",
    "abcd bcd",
    "日本日本語",
    "こんにちはこんにちは",
    "a".repeat(300),
    "🙂".repeat(50),
    "x y z ".repeat(20)
];

const fragments = [
    "a",
    "b",
    "the",
    " ",
    "  ",
    "\n",
    "\t",
    "\r\n",
    "Hello",
    "world",
    ",",
    ".",
    "!",
    "?",
    "0",
    "123",
    "-",
    "_",
    "日本",
    "語",
    "こん",
    "にち",
    "は",
    "東京",
    "カタカナ",
    "漢字",
    "😀",
    "👍🏽",
    "👨‍👩‍👧",
    "🇯🇵",
    "e\u0301",
    "\u0308",
    "Ω",
    "ß",
    "ñ",
    "Привет",
    "مرحبا",
    "नमस्ते",
    "สวัสดี",
    "안녕",
    "▁",
    "<s>",
    "<0x0A>",
    "and",
    "ing",
    "th",
    "he",
    "abc",
    "bc"
];

/** `count` random strings (deterministic), plus the hand-picked ones. */
export function tokenizerCorpus(count = 220, seed = 20240601): string[] {
    let state = seed >>> 0;
    const next = (bound: number): number => {
        state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
        return Math.floor((state / 2 ** 32) * bound);
    };
    const strings = [...handPicked];
    for (let i = 0; i < count; i++) {
        const parts: string[] = [];
        const length = 1 + next(12);
        for (let j = 0; j < length; j++) parts.push(fragments[next(fragments.length)]);
        strings.push(parts.join(""));
    }
    return strings;
}

/** Whole pieces used to exercise SPM merging (prefix chains so every piece is reachable). */
export const testPieces = [
    "th",
    "the",
    "he",
    " t",
    " th",
    " the",
    "an",
    "and",
    " a",
    " an",
    " and",
    "in",
    "ing",
    "日本",
    "日本語",
    "こん",
    "にち",
    "にちは",
    "こんにちは",
    "ab",
    "bc",
    "abc",
    "  ",
    "\n\n"
];

/** Whether `text` survives any exact tokenizer round trip: no literal ▁ (SPM reads it as a space) and well-formed UTF-16. */
export function isRoundTrippable(text: string): boolean {
    return !text.includes("\u2581") && Buffer.from(text, "utf8").toString("utf8") === text;
}
