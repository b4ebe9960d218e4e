import type {LlamaWeights} from "./LlamaWeights.js";

/**
 * The matrices a training run did not train: those that equal their initial values up to one scale
 * factor (weight decay shrinks an untrained matrix uniformly, so plain equality would miss it). A
 * matrix counts as trained when what remains after the best scale, ‖w − a·w₀‖ / ‖w₀‖, exceeds
 * `tolerance`. This is how the bundled llama.cpp's frozen attn_k/attn_v/token_embd were found.
 */
export function tensorsLeftAtInitialisation(initial: LlamaWeights, trained: LlamaWeights, tolerance = 1e-3): string[] {
    const frozen: string[] = [];
    for (const [name, before] of initial) {
        const after = trained.get(name);
        if (after === undefined || after.length !== before.length) continue;
        let dot = 0;
        let norm = 0;
        for (let index = 0; index < before.length; index++) {
            dot += before[index] * after[index];
            norm += before[index] * before[index];
        }
        if (norm === 0) continue;
        const scale = dot / norm;
        let residual = 0;
        for (let index = 0; index < before.length; index++) residual += (after[index] - scale * before[index]) ** 2;
        if (Math.sqrt(residual / norm) <= tolerance) frozen.push(name);
    }
    return frozen;
}
