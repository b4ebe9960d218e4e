/**
 * Prompt lookup: the tokens that followed the most recent earlier occurrence of the history's last
 * n-gram, trying n from `maxN` down to `minN` (the longest match wins; among occurrences of one n,
 * the most recent, which in multi-turn text is the likeliest to continue the same way). Returns at
 * most `maxTokens` ids; an empty array when no n-gram in the range recurs.
 *
 * Same rule as vLLM's ngram proposer and Hugging Face's prompt lookup, except that both take the
 * first occurrence; llama.cpp's ngram-simple keeps one size n. O(history · (maxN − minN + 1)).
 */
export function ngramLookup(history: readonly number[], minN: number, maxN: number, maxTokens: number): number[] {
    const length = history.length;
    if (maxTokens <= 0) return [];
    for (let n = Math.min(maxN, length - 1); n >= minN; n--) {
        const tailStart = length - n;
        // An occurrence starting at `start` must end before the tail starts to have a continuation.
        for (let start = tailStart - 1; start >= 0; start--) {
            let matched = true;
            for (let offset = 0; offset < n; offset++)
                if (history[start + offset] !== history[tailStart + offset]) {
                    matched = false;
                    break;
                }
            if (!matched) continue;
            const from = start + n;
            return history.slice(from, Math.min(from + maxTokens, length));
        }
    }
    return [];
}
