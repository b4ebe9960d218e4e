import {readFile} from "node:fs/promises";
import {endianness} from "node:os";
import {CheckpointError} from "../../errors.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import {Random} from "../../random/Random.js";
import {checkLlamaConfig, type LlamaConfig} from "../model/LlamaConfig.js";
import {llamaTensorLayout} from "../model/llamaTensorLayout.js";
import type {LlamaWeights} from "../model/LlamaWeights.js";
import {createTrainerState, type TrainerState} from "./TrainerState.js";
import {checkTrainingOptions, type TrainingOptions} from "./TrainingOptions.js";

const magic = Buffer.from("SGCKPT01", "latin1");
const format = "specgate-checkpoint/1";

interface CheckpointHeader {
    readonly format: typeof format;
    readonly config: LlamaConfig;
    readonly options: TrainingOptions;
    readonly step: number;
    readonly randomState: [number, number, number, number];
    /** Tensor names and lengths in data order; each is stored three times: weights, first moments, second moments. */
    readonly tensors: {name: string; length: number}[];
}

/**
 * Checkpoint file: the 8 magic bytes "SGCKPT01", the header's byte length (uint32 LE), the JSON
 * header (config, options, step, sampler state, tensor list), zero padding to a multiple of 8, then
 * float64 little-endian data: all weights, all first moments, all second moments, in layout order.
 * Float64 keeps the exact training state, so a resumed run is bit-identical to an uninterrupted one.
 * Written atomically: an interrupted save leaves the previous checkpoint intact.
 */
export async function saveCheckpoint(path: string, state: TrainerState): Promise<void> {
    checkLittleEndian();
    const layout = llamaTensorLayout(state.config);
    const header: CheckpointHeader = {
        format,
        config: state.config,
        options: state.options,
        step: state.step,
        randomState: state.random.getState(),
        tensors: layout.map((shape) => ({name: shape.name, length: shape.rows * shape.columns}))
    };
    const headerBytes = Buffer.from(JSON.stringify(header), "utf8");
    const dataStart = alignTo8(magic.length + 4 + headerBytes.length);
    const parameterCount = header.tensors.reduce((sum, tensor) => sum + tensor.length, 0);
    const file = Buffer.alloc(dataStart + 3 * parameterCount * 8);
    magic.copy(file, 0);
    file.writeUInt32LE(headerBytes.length, magic.length);
    headerBytes.copy(file, magic.length + 4);
    let offset = dataStart;
    for (const collection of [state.weights, state.moments.first, state.moments.second])
        for (const {name} of header.tensors) {
            const values = collection.get(name)!;
            Buffer.from(values.buffer, values.byteOffset, values.byteLength).copy(file, offset);
            offset += values.byteLength;
        }
    await writeFileAtomic(path, file);
}

/**
 * Reads a checkpoint back into a trainer state. With `expected`, the checkpoint must be of that model
 * shape and those training options (CheckpointError "mismatch" naming the first differing field),
 * so a resume never silently continues another run.
 */
export async function loadCheckpoint(
    path: string,
    expected: {config?: LlamaConfig; options?: TrainingOptions} = {}
): Promise<TrainerState> {
    checkLittleEndian();
    let file: Buffer;
    try {
        file = await readFile(path);
    } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new CheckpointError("missing", "no such checkpoint file", path);
        throw new CheckpointError("corrupt", `cannot read the checkpoint: ${(error as Error).message}`, path);
    }
    if (file.length < magic.length + 4 || !file.subarray(0, magic.length).equals(magic))
        throw new CheckpointError("corrupt", "not a specgate checkpoint (wrong magic bytes)", path);
    const headerLength = file.readUInt32LE(magic.length);
    if (magic.length + 4 + headerLength > file.length)
        throw new CheckpointError("corrupt", "the header runs past the end of the file (truncated?)", path);
    let header: CheckpointHeader;
    try {
        header = JSON.parse(file.subarray(magic.length + 4, magic.length + 4 + headerLength).toString("utf8")) as CheckpointHeader;
        if (header.format !== format) throw new Error(`unknown format ${JSON.stringify(header.format)}`);
        checkLlamaConfig(header.config);
        checkTrainingOptions(header.options);
        if (!Number.isSafeInteger(header.step) || header.step < 0) throw new Error(`bad step ${header.step}`);
    } catch (error) {
        throw new CheckpointError("corrupt", `malformed header: ${(error as Error).message}`, path);
    }
    const layout = llamaTensorLayout(header.config);
    const tensorsMatchLayout =
        Array.isArray(header.tensors) &&
        header.tensors.length === layout.length &&
        layout.every(
            (shape, index) => header.tensors[index].name === shape.name && header.tensors[index].length === shape.rows * shape.columns
        );
    if (!tensorsMatchLayout) throw new CheckpointError("corrupt", "the tensor list does not match the model shape in the header", path);
    checkExpected("config", header.config, expected.config);
    checkExpected("options", header.options, expected.options);

    const dataStart = alignTo8(magic.length + 4 + headerLength);
    const parameterCount = header.tensors.reduce((sum, tensor) => sum + tensor.length, 0);
    if (file.length !== dataStart + 3 * parameterCount * 8)
        throw new CheckpointError(
            "corrupt",
            `expected ${dataStart + 3 * parameterCount * 8} bytes, found ${file.length} (truncated?)`,
            path
        );
    let offset = dataStart;
    const readCollection = (): LlamaWeights =>
        new Map(
            header.tensors.map(({name, length}) => {
                // Copy into a fresh, 8-byte-aligned buffer.
                const values = new Float64Array(new Uint8Array(file.subarray(offset, offset + length * 8)).buffer);
                offset += length * 8;
                return [name, values];
            })
        );
    const weights = readCollection();
    const first = readCollection();
    const second = readCollection();
    let random: Random;
    try {
        random = Random.fromState(header.randomState);
    } catch (error) {
        throw new CheckpointError("corrupt", `bad sampler state: ${(error as Error).message}`, path);
    }
    const state = createTrainerState(header.config, header.options, weights);
    for (const [name, values] of first) state.moments.first.get(name)!.set(values);
    for (const [name, values] of second) state.moments.second.get(name)!.set(values);
    state.step = header.step;
    state.random = random;
    return state;
}

/** A CheckpointError "mismatch" naming the first field where the checkpoint differs from this run. */
function checkExpected<T extends object>(label: string, found: T, wanted: T | undefined): void {
    if (wanted === undefined) return;
    for (const key of Object.keys(wanted) as (keyof T)[])
        if (found[key] !== wanted[key])
            throw new CheckpointError(
                "mismatch",
                `the checkpoint has ${String(found[key])}, this run ${String(wanted[key])}`,
                `${label}.${String(key)}`
            );
}

function alignTo8(value: number): number {
    return Math.ceil(value / 8) * 8;
}

/** The data is raw float64 memory; every platform Node supports in practice is little-endian, but say so if not. */
function checkLittleEndian(): void {
    if (endianness() !== "LE") throw new CheckpointError("corrupt", "checkpoints are little-endian and this machine is not");
}
