/**
 * A number as written in text: thousands separated by "," or by a (narrow) non-breaking or thin space,
 * as French and Russian write them, optional decimals. foldText turns those spaces into "_" first,
 * because NFKC would turn them into ordinary spaces, which also separate unrelated numbers.
 */
const numberSource = String.raw`-?\d{1,3}(?:[,_]\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?`;

/**
 * Final-answer markers, strongest first: GSM8K's "#### 42", LaTeX \boxed{42}, and "the answer is"
 * in the MGSM languages (the phrasing of the MGSM paper's exemplars).
 */
const markers: readonly RegExp[] = [
    new RegExp(String.raw`####\s*\$?\s*(${numberSource})`, "g"),
    new RegExp(String.raw`\\boxed\{\s*\$?\s*(${numberSource})`, "g"),
    new RegExp(
        String.raw`(?:answer is|answer:|respuesta es|Antwort lautet|Antwort ist|réponse est|ответ[:\s]|答案是|答案：|答えは)\s*[:：]?\s*\$?\s*(${numberSource})`,
        "gi"
    )
];

function foldText(text: string): string {
    return text.replace(/(?<=\d)[\u00a0\u202f\u2009](?=\d{3})/g, "_").normalize("NFKC");
}

/**
 * Canonical text of a number ("1,234.50" → "1234.5", "$18" → "18", "-3." → "-3"), or null when the
 * text is not one number. Fullwidth digits are folded first (NFKC) for Chinese and Japanese.
 */
export function normalizeNumberText(text: string): string | null {
    const cleaned = foldText(text)
        .trim()
        .replace(/^\$/, "")
        .replace(/[,_\s]/g, "")
        .replace(/\.$/, "");
    if (!/^-?\d+(?:\.\d+)?$/.test(cleaned)) return null;
    const value = Number(cleaned);
    return Object.is(value, -0) ? "0" : String(value);
}

/**
 * The final numeric answer of a model output, canonicalised by normalizeNumberText: the last number
 * after the strongest marker present, else the last number in the text; null when there is none.
 */
export function extractFinalNumber(output: string): string | null {
    const text = foldText(output);
    for (const marker of markers) {
        const found = [...text.matchAll(marker)];
        if (found.length > 0) return normalizeNumberText(found[found.length - 1][1]);
    }
    const numbers = [...text.matchAll(new RegExp(numberSource, "g"))];
    return numbers.length === 0 ? null : normalizeNumberText(numbers[numbers.length - 1][0]);
}
