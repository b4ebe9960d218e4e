/**
 * Prompt lookup: find the earlier position whose preceding tokens match the history's tail the
 * longest (n tokens, at most `maxN`; ties go to the most recent, which in multi-turn text is the
 * likeliest to continue the same way) and propose the tokens that followed it. A match shorter than
 * `minN` is no proposal. The proposal grows with the evidence: a match of n tokens proposes at most
 * n − minN + 1 tokens (and at most `maxTokens`), so a short, chance match risks one token and a long
 * one (a copy in progress) proposes many. This is vLLM suffix decoding's rule of a speculation
 * length proportional to the match length; the n-gram itself is vLLM's and Hugging Face's prompt
 * lookup (which take the first occurrence and a fixed length).
 *
 * One backward scan, O(history · typical match length).
 */
export function ngramLookup(history: readonly number[], minN: number, maxN: number, maxTokens: number): number[] {
    const match = longestTailMatch(history, maxN);
    if (match == null || match.length < minN) return [];
    const length = Math.min(maxTokens, match.length - minN + 1, history.length - match.end);
    return length <= 0 ? [] : history.slice(match.end, match.end + length);
}

/**
 * The earlier position `end` (< history.length) maximising n, the number of tokens before `end` that
 * equal the last n tokens of the history (capped at maxN); the latest such position on ties. Null
 * when no earlier token equals the last one.
 */
export function longestTailMatch(history: readonly number[], maxN: number): {end: number; length: number} | null {
    const last = history.length - 1;
    let best: {end: number; length: number} | null = null;
    for (let end = last; end >= 1; end--) {
        let length = 0;
        while (length < maxN && end - 1 - length >= 0 && history[end - 1 - length] === history[last - length]) length++;
        if (length > (best?.length ?? 0)) {
            best = {end, length};
            if (length === maxN) break;
        }
    }
    return best;
}
