import {InvalidInputError} from "../errors.js";
import {ByteTokenizer} from "../gguf/ByteTokenizer.js";
import {GgmlTensorType} from "../gguf/GgmlTensorType.js";
import {keepLlamaLayers} from "./model/keepLlamaLayers.js";
import {readLlamaGguf} from "./model/readLlamaGguf.js";
import {llamaTensorLayout} from "./model/llamaTensorLayout.js";
import {writeLlamaGguf} from "./model/writeLlamaGguf.js";

export const exportTypes = {f32: GgmlTensorType.F32, f16: GgmlTensorType.F16, q8_0: GgmlTensorType.Q8_0} as const;
export type ExportType = keyof typeof exportTypes;

/**
 * Rewrites a llama GGUF (ours or one saved by llama.cpp) with the project's writer: the matrices as
 * F32, F16 or Q8_0 (norm gains stay F32), the project's byte-vocabulary metadata. Q8_0 packs rows in
 * blocks of 32, so every matrix's row length must be a multiple of 32. Our own Q8_0 encoder is used
 * rather than llama-quantize so export works where llama.cpp's tools are not built. With `layers`,
 * only those blocks are written (keepLlamaLayers): the start of a self-speculative draft.
 */
export async function exportLlamaGguf(
    input: string,
    output: string,
    type: ExportType,
    name?: string,
    layers?: readonly number[]
): Promise<void> {
    const weightType = exportTypes[type];
    if (weightType === undefined)
        throw new InvalidInputError(`expected one of ${Object.keys(exportTypes).join(", ")}, got "${type}"`, "type");
    const read = readLlamaGguf(input);
    const {config, weights} = layers === undefined ? read : keepLlamaLayers(read.config, read.weights, layers);
    if (type === "q8_0") {
        const misfit = llamaTensorLayout(config).find((shape) => shape.rows > 1 && shape.columns % 32 !== 0);
        if (misfit !== undefined)
            throw new InvalidInputError(`Q8_0 needs rows of a multiple of 32 values; ${misfit.name} has ${misfit.columns}`, "type");
    }
    await writeLlamaGguf(output, config, weights, new ByteTokenizer(), {name, weightType});
}
