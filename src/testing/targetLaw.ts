import type {ModelBackend} from "../backend/ModelBackend.js";
import {processLogits} from "../distributions/processLogits.js";

/** The row of `target` after `tokens` at temperature 1 (the engine's default sampling). */
async function targetRow(target: ModelBackend, tokens: readonly number[]): Promise<Float64Array> {
    const sequence = await target.createSequence();
    try {
        const [logits] = await sequence.evaluate(tokens);
        return processLogits(logits);
    } finally {
        await sequence.dispose();
    }
}

/**
 * The target's law (temperature 1) of the first `length` tokens generated after `promptTokens`, keyed
 * by the ids joined with ",", for every sequence whose prefixes all have probability ≥ `prefixFloor`;
 * an EOS ends a sequence (the engine stops there). What the expansion leaves out is returned as
 * `rest`: the expected counts of a χ² test of generated outputs against target-only sampling.
 */
export async function targetLaw(
    target: ModelBackend,
    promptTokens: readonly number[],
    length: number,
    prefixFloor: number
): Promise<{cells: Map<string, number>; rest: number}> {
    const cells = new Map<string, number>();
    let kept = 0;
    const expand = async (tokens: number[], probability: number): Promise<void> => {
        if (tokens.length === length || tokens[tokens.length - 1] === target.eosToken) {
            cells.set(tokens.join(","), probability);
            kept += probability;
            return;
        }
        const row = await targetRow(target, [...promptTokens, ...tokens]);
        for (let token = 0; token < row.length; token++)
            if ((probability * row[token] >= prefixFloor || tokens.length === length - 1) && row[token] > 0)
                await expand([...tokens, token], probability * row[token]);
    };
    await expand([], 1);
    return {cells, rest: Math.max(0, 1 - kept)};
}
