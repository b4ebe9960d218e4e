import {readFile} from "node:fs/promises";
import {CheckpointError} from "../../errors.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import type {Eagle3Config} from "./Eagle3Config.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";
import type {Eagle3Weights} from "./Eagle3Weights.js";

const format = "specgate-eagle3-checkpoint/1";

/** What a head's training carries from step to step. */
export interface Eagle3TrainerSnapshot {
    readonly config: Eagle3Config;
    /** The run's settings, compared on resume: a checkpoint resumes only the run that wrote it. */
    readonly settings: unknown;
    readonly step: number;
    readonly totalSteps: number;
    readonly trainingSeconds: number;
    readonly weights: Eagle3Weights;
    readonly first: Eagle3Weights;
    readonly second: Eagle3Weights;
}

/**
 * A JSON header line (format, config, settings, counters) and, after it, the float64 weights, first
 * and second AdamW moments in layout order, so a resumed run continues exactly. Written atomically.
 */
export async function saveEagle3Checkpoint(path: string, snapshot: Eagle3TrainerSnapshot): Promise<void> {
    const {weights, first, second, ...header} = snapshot;
    const layout = eagle3TensorLayout(snapshot.config);
    const head = Buffer.from(`${JSON.stringify({format, ...header})}\n`, "utf8");
    const padding = (8 - (head.length % 8)) % 8;
    const count = layout.reduce((sum, shape) => sum + shape.rows * shape.columns, 0);
    const data = new Float64Array(3 * count);
    let offset = 0;
    for (const tensors of [weights, first, second])
        for (const shape of layout) {
            data.set(tensors.get(shape.name)!, offset);
            offset += shape.rows * shape.columns;
        }
    await writeFileAtomic(path, Buffer.concat([head, Buffer.alloc(padding, 0x20), Buffer.from(data.buffer)]));
}

/** Reads a checkpoint written by saveEagle3Checkpoint; a file that is not one is a CheckpointError naming it. */
export async function loadEagle3Checkpoint(path: string): Promise<Eagle3TrainerSnapshot> {
    const bytes = await readFile(path);
    const newline = bytes.indexOf(0x0a);
    let header: Omit<Eagle3TrainerSnapshot, "weights" | "first" | "second"> & {format?: string};
    try {
        header = JSON.parse(bytes.subarray(0, newline).toString("utf8")) as typeof header;
    } catch {
        throw new CheckpointError("corrupt", `${path} is not an EAGLE-3 checkpoint`, "checkpoint");
    }
    if (newline < 0 || header.format !== format) throw new CheckpointError("corrupt", `${path} is not an EAGLE-3 checkpoint`, "checkpoint");
    const start = newline + 1 + ((8 - ((newline + 1) % 8)) % 8);
    const layout = eagle3TensorLayout(header.config);
    const count = layout.reduce((sum, shape) => sum + shape.rows * shape.columns, 0);
    if (bytes.length - start !== 3 * count * 8) throw new CheckpointError("corrupt", `${path} is truncated`, "checkpoint");
    const data = new Float64Array(bytes.buffer.slice(bytes.byteOffset + start, bytes.byteOffset + bytes.length));
    let offset = 0;
    const read = (): Eagle3Weights => {
        const tensors: Eagle3Weights = new Map();
        for (const shape of layout) {
            const length = shape.rows * shape.columns;
            tensors.set(shape.name, data.slice(offset, offset + length));
            offset += length;
        }
        return tensors;
    };
    const weights = read();
    const first = read();
    const second = read();
    const {format: _format, ...rest} = header;
    void _format;
    return {...rest, weights, first, second};
}
