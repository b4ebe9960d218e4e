import {InvalidInputError} from "../../errors.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {checkLlamaConfig, type LlamaConfig} from "../model/LlamaConfig.js";

/** The sizes a family member is chosen by: `d,layers,heads,ff` on the command line. */
export interface ModelShape {
    readonly embeddingLength: number;
    readonly blockCount: number;
    readonly headCount: number;
    readonly feedForwardLength: number;
}

/** Parses "d,layers,heads,ff", e.g. "256,4,4,768"; `field` names the flag in errors. */
export function parseModelShape(text: string, field = "shape"): ModelShape {
    const parts = text.split(",").map((part) => part.trim());
    const values = parts.map(Number);
    if (parts.length !== 4 || values.some((value) => !Number.isSafeInteger(value) || value <= 0))
        throw new InvalidInputError(`expected four positive integers d,layers,heads,ff (e.g. 256,4,4,768), got "${text}"`, field);
    const [embeddingLength, blockCount, headCount, feedForwardLength] = values;
    const shape = {embeddingLength, blockCount, headCount, feedForwardLength};
    try {
        checkLlamaConfig(shapeConfig(shape, 256));
    } catch (error) {
        throw new InvalidInputError(error instanceof Error ? error.message : String(error), field);
    }
    return shape;
}

/**
 * The full llama config of a family member: byte vocabulary, multi-head attention (no GQA: at these
 * widths the KV cache is tiny), untied output (llama-finetune trains it like any other matrix), and
 * the context it trains at, which is also the longest context it was ever shown.
 */
export function shapeConfig(shape: ModelShape, contextLength: number): LlamaConfig {
    return {
        vocabularySize: new ByteTokenizer().size,
        embeddingLength: shape.embeddingLength,
        blockCount: shape.blockCount,
        headCount: shape.headCount,
        headCountKv: shape.headCount,
        feedForwardLength: shape.feedForwardLength,
        contextLength,
        rmsNormEpsilon: 1e-5,
        ropeFreqBase: 10000,
        tiedOutput: false
    };
}

export function formatModelShape(shape: ModelShape): string {
    return `${shape.embeddingLength},${shape.blockCount},${shape.headCount},${shape.feedForwardLength}`;
}
