import {processLogits} from "../../distributions/processLogits.js";
import type {GenerationResult} from "../generate.js";
import type {BigramBackend} from "./BigramBackend.js";

/** The EOS id of BigramBackend. */
const eos = 1;

/**
 * The target's own joint distribution of the first two generated tokens after a prompt ending in
 * `lastPromptToken`, indexed first × V + second, at temperature 1. A sequence that ended at EOS counts
 * its second token as EOS too (the target would have stopped).
 */
export function firstTwoTokensDistribution(target: BigramBackend, lastPromptToken: number): Float64Array {
    const size = target.vocabularySize;
    const first = processLogits(target.table[lastPromptToken]);
    const expected = new Float64Array(size * size);
    for (let a = 0; a < size; a++) {
        const second = processLogits(target.table[a]);
        for (let b = 0; b < size; b++) expected[a * size + b] = a === eos ? (b === eos ? first[eos] : 0) : first[a] * second[b];
    }
    return expected;
}

/** The cell of firstTwoTokensDistribution a generation falls in. */
export function firstTwoTokensCell(result: Pick<GenerationResult, "tokens">, vocabularySize: number): number {
    const first = result.tokens[0] ?? eos;
    const second = first === eos ? eos : (result.tokens[1] ?? eos);
    return first * vocabularySize + second;
}
