import {addsBos} from "../addsBos.js";
import type {ModelBackend} from "../ModelBackend.js";
import {sameComputationTolerance} from "./describeBackendContract.js";

/**
 * How far from a tie the greedy choices of `continuation` after `prompt` are: the smallest gap between
 * the two largest logits at each generated position, in units of sameComputationTolerance (one F16
 * rounding of the row's scale). Two decodes of the same text that batch differently may choose
 * differently only where this is about 2 or less, so a test comparing them asserts equality only
 * where the margin is larger.
 */
export async function greedyMargin(backend: ModelBackend, prompt: string, continuation: readonly number[]): Promise<number> {
    const promptTokens = backend.tokenize(prompt);
    if (addsBos(backend)) promptTokens.unshift(backend.bosToken!);
    if (continuation.length === 0) return Infinity;
    const tokens = [...promptTokens, ...continuation];
    const positions = continuation.map((_token, index) => promptTokens.length - 1 + index);
    const sequence = await backend.createSequence();
    try {
        const rows = await sequence.evaluate(tokens, {positions});
        let margin = Infinity;
        for (const row of rows) {
            let first = -Infinity;
            let second = -Infinity;
            for (const value of row) {
                if (value > first) {
                    second = first;
                    first = value;
                } else if (value > second) second = value;
            }
            margin = Math.min(margin, (first - second) / sameComputationTolerance(row));
        }
        return margin;
    } finally {
        await sequence.dispose();
    }
}
