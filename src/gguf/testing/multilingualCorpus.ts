/**
 * Deterministic multilingual test strings for tokenizer golden tests: seeded mixtures of English,
 * CJK, emoji (with modifiers and ZWJ sequences), Devanagari and other scripts, combining marks,
 * code, numbers, punctuation runs and whitespace runs (spaces, tabs, newlines, CRLF).
 * Used by tests only; lives outside *.test.ts so test files can share it.
 */
const fragments = [
    // English and punctuation
    "The",
    " quick",
    " brown fox",
    " jumps",
    " over",
    " the lazy dog",
    "Hello",
    ", ",
    ". ",
    "!",
    "?",
    "'s",
    "'re",
    " I've",
    " don't",
    "...",
    "—",
    '"quoted"',
    // CJK
    "日本語",
    "のテキスト",
    "東京",
    "こんにちは",
    "カタカナ",
    "漢字",
    "中文",
    "你好，世界",
    "。",
    "한국어",
    "안녕하세요",
    // emoji
    "😀",
    "👍🏽",
    "👨‍👩‍👧‍👦",
    "🇯🇵",
    "🦙",
    "❤️",
    "✅",
    "🚀",
    // Devanagari, Thai, Arabic, Cyrillic, Greek, Hebrew
    "हिन्दी",
    "नमस्ते",
    " दुनिया",
    "क्षत्रिय",
    "ภาษาไทย",
    "العربية",
    "مرحبا",
    "Привет",
    " мир",
    "Ελληνικά",
    "עברית",
    // combining marks (NFC-composable and not)
    "e\u0301",
    "a\u0308\u0304",
    "Z\u0351\u0352",
    "n\u0303",
    "\u0915\u094d",
    // code
    "def f(x):",
    "\n    return x * 2",
    "const a = [1, 2, 3];",
    "if (a != b) {",
    "}",
    '<div class="x">',
    "</div>",
    "#include <stdio.h>",
    "x => x + 1",
    "SELECT * FROM t;",
    // numbers
    "0",
    "7",
    "42",
    "123",
    "3.14159",
    "1,000,000",
    "2024-06-01",
    "0x1F",
    "-17",
    "1e-9",
    "99999999",
    // whitespace runs
    " ",
    "  ",
    "   ",
    "\t",
    "\t\t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\r\n",
    " \n ",
    "    "
];

/** `count` strings, each 1–16 fragments drawn by a seeded linear congruential generator. */
export function multilingualCorpus(count: number, seed = 19): string[] {
    let state = seed >>> 0;
    const next = (bound: number): number => {
        state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
        return Math.floor((state / 2 ** 32) * bound);
    };
    const strings: string[] = [];
    for (let index = 0; index < count; index++) {
        const parts: string[] = [];
        const length = 1 + next(16);
        for (let part = 0; part < length; part++) parts.push(fragments[next(fragments.length)]);
        strings.push(parts.join(""));
    }
    return strings;
}
