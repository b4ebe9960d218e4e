import {GgmlTensorType, ggmlTensorByteLength, q8_0BlockSize} from "./GgmlTensorType.js";
import type {GgufReader} from "./GgufReader.js";
import type {StreamedTensor} from "./GgufStreamWriter.js";
import {encodeTensorValues} from "./GgufWriter.js";
import type {LlamaHyperparameters} from "./llamaGgufMetadata.js";
import {TiledNoise} from "./widenLlamaModelTile.js";
import type {WidenPlacement} from "./widenLlamaModelShape.js";

/** Everything the twin's tensors are built from. */
export interface TwinTensorSources {
    readonly reader: GgufReader;
    readonly source: LlamaHyperparameters;
    readonly twin: LlamaHyperparameters;
    readonly placement: WidenPlacement;
    readonly weightType: GgmlTensorType;
    /** Fills the parts whose values do not reach the output (extra heads', units' and layers' inputs). */
    readonly dense: TiledNoise;
    /** Fills the zero output projections, times the scales below (0: exactly zero). */
    readonly noise: TiledNoise;
    readonly noiseScale: {readonly attention: number; readonly feedForward: number};
    /** Whether the source has its own output matrix (else the embedding is tied, and so is the twin's). */
    readonly hasOutput: boolean;
}

/** Values produced per chunk (at most 16 MiB stored), so no tensor of any size is held whole. */
const chunkValues = 1 << 22;

/** A row copied from a tiled stream (already encoded), or a function that writes it as floats. */
type RowContent = {tile: TiledNoise; index: number; scale: number} | ((out: Float32Array) => void);

/** A run of columns copied from the source: twin columns [twin, twin + length) ← source [source, …). */
interface ColumnRun {
    readonly twin: number;
    readonly source: number;
    readonly length: number;
}

/** The twin's tensors in file order, each producing its values when written. */
export function twinTensors(sources: TwinTensorSources): StreamedTensor[] {
    const {twin, hasOutput} = sources;
    const builder = new TensorBuilder(sources);
    const tensors = [builder.reads("token_embd.weight", "token_embd.weight", twin.vocabularySize, (row) => row)];
    const sourceLayerOf = inverse(sources.placement.layers, twin.blockCount);
    for (let layer = 0; layer < twin.blockCount; layer++) tensors.push(...builder.layer(layer, sourceLayerOf[layer]));
    tensors.push(builder.norm("output_norm.weight", "output_norm.weight"));
    if (hasOutput) tensors.push(builder.reads("output.weight", "output.weight", twin.vocabularySize, (row) => row));
    return tensors;
}

/** source index → twin index, turned into twin index → source index (-1 where none). */
function inverse(placement: readonly number[], size: number): Int32Array {
    const map = new Int32Array(size).fill(-1);
    placement.forEach((twinIndex, sourceIndex) => (map[twinIndex] = sourceIndex));
    return map;
}

class TensorBuilder {
    private readonly headSize: number;
    private readonly sourceHeadOf: Int32Array;
    private readonly sourceKvHeadOf: Int32Array;
    private readonly denseScale: number;
    private tensorOrdinal = 0;

    public constructor(private readonly sources: TwinTensorSources) {
        const {source, twin, placement} = sources;
        this.headSize = source.embeddingLength / source.headCount;
        this.sourceHeadOf = inverse(placement.heads, twin.headCount);
        this.sourceKvHeadOf = inverse(placement.kvHeads, twin.headCountKv);
        this.denseScale = 1 / Math.sqrt(twin.embeddingLength);
    }

    /** One twin block: a source block widened, or (sourceLayer -1) a dense block whose writes are zero. */
    public layer(layer: number, sourceLayer: number): StreamedTensor[] {
        const {twin, source, noiseScale} = this.sources;
        const name = (tensor: string): string => `blk.${layer}.${tensor}.weight`;
        const from = (tensor: string): string | undefined => (sourceLayer < 0 ? undefined : `blk.${sourceLayer}.${tensor}.weight`);
        const headRow = (map: Int32Array) => (row: number) => {
            const sourceHead = map[Math.floor(row / this.headSize)];
            return sourceHead < 0 ? -1 : sourceHead * this.headSize + (row % this.headSize);
        };
        const headRuns = this.sources.placement.heads.map((twinHead, head) => ({
            twin: twinHead * this.headSize,
            source: head * this.headSize,
            length: this.headSize
        }));
        const unitRuns = [{twin: 0, source: 0, length: source.feedForwardLength}];
        const unitRow = (row: number): number => (row < source.feedForwardLength ? row : -1);
        const kvWidth = twin.headCountKv * this.headSize;
        return [
            this.norm(name("attn_norm"), from("attn_norm")),
            this.reads(name("attn_q"), from("attn_q"), twin.embeddingLength, headRow(this.sourceHeadOf)),
            this.reads(name("attn_k"), from("attn_k"), kvWidth, headRow(this.sourceKvHeadOf)),
            this.reads(name("attn_v"), from("attn_v"), kvWidth, headRow(this.sourceKvHeadOf)),
            this.writes(name("attn_output"), from("attn_output"), twin.embeddingLength, headRuns, noiseScale.attention),
            this.norm(name("ffn_norm"), from("ffn_norm")),
            this.reads(name("ffn_gate"), from("ffn_gate"), twin.feedForwardLength, unitRow),
            this.reads(name("ffn_up"), from("ffn_up"), twin.feedForwardLength, unitRow),
            this.writes(name("ffn_down"), from("ffn_down"), twin.feedForwardLength, unitRuns, noiseScale.feedForward)
        ];
    }

    /**
     * An RMSNorm gain vector (F32), times sqrt(d/D): the source's gains on the source's coordinates,
     * sqrt(d/D) elsewhere (those coordinates of the residual are zero, so any gain gives zero).
     */
    public norm(name: string, sourceName: string | undefined): StreamedTensor {
        const {reader, source, twin} = this.sources;
        const gain = Math.sqrt(source.embeddingLength / twin.embeddingLength);
        return {
            name,
            dimensions: [twin.embeddingLength],
            type: GgmlTensorType.F32,
            *chunks() {
                const values = new Float32Array(twin.embeddingLength).fill(gain);
                if (sourceName !== undefined) {
                    const sourceValues = reader.readTensor(sourceName);
                    for (let i = 0; i < sourceValues.length; i++) values[i] = sourceValues[i] * gain;
                }
                yield encodeTensorValues(GgmlTensorType.F32, values);
            }
        };
    }

    /**
     * A matrix reading the residual ([D, rows]): a row with a source row (`sourceRow(row)` >= 0) is
     * that row on the source's coordinates and zero elsewhere; any other row is dense random values.
     */
    public reads(name: string, sourceName: string | undefined, rows: number, sourceRow: (row: number) => number): StreamedTensor {
        const {reader, source, twin, dense} = this.sources;
        const columns = twin.embeddingLength;
        const offset = this.nextOffset();
        const scale = this.denseScale;
        return this.matrix(name, columns, rows, () => {
            const sourceValues = sourceName === undefined ? undefined : reader.readTensor(sourceName);
            const width = source.embeddingLength;
            return (row) => {
                const copied = sourceValues === undefined ? -1 : sourceRow(row);
                if (copied < 0) return {tile: dense, index: offset + row * columns, scale};
                return (out) => {
                    out.set(sourceValues!.subarray(copied * width, (copied + 1) * width));
                    out.fill(0, width);
                };
            };
        });
    }

    /**
     * A matrix writing the residual ([columns, D]): the source's columns placed by `runs` on the
     * source's coordinates (rows < d) and zero below them; every other column is the noise at
     * `noiseScale` (zero when it is 0), so its inputs never reach the residual unless perturbed.
     */
    public writes(
        name: string,
        sourceName: string | undefined,
        columns: number,
        runs: readonly ColumnRun[],
        noiseScale: number
    ): StreamedTensor {
        const {reader, source, twin, noise} = this.sources;
        const offset = this.nextOffset();
        return this.matrix(name, columns, twin.embeddingLength, () => {
            const sourceValues = sourceName === undefined ? undefined : reader.readTensor(sourceName);
            const height = source.embeddingLength;
            const width = sourceValues === undefined ? 0 : sourceValues.length / height;
            return (row) => {
                const background = {tile: noise, index: offset + row * columns, scale: noiseScale};
                if (sourceValues === undefined || (row >= height && noiseScale === 0)) return background;
                return (out) => {
                    noise.fill(out, 0, columns, background.index, noiseScale);
                    for (const run of runs)
                        if (row < height)
                            out.set(sourceValues.subarray(row * width + run.source, row * width + run.source + run.length), run.twin);
                        else out.fill(0, run.twin, run.twin + run.length);
                };
            };
        });
    }

    /** A [columns, rows] matrix produced a chunk of rows at a time, each row tiled or built as floats. */
    private matrix(name: string, columns: number, rows: number, prepare: () => (row: number) => RowContent): StreamedTensor {
        const type = this.sources.weightType;
        return {
            name,
            dimensions: [columns, rows],
            type,
            *chunks() {
                const rowContent = prepare();
                const rowBytes = ggmlTensorByteLength(type, columns);
                const rowsPerChunk = Math.max(1, Math.floor(chunkValues / columns));
                const buffer = new Uint8Array(Math.min(rows, rowsPerChunk) * rowBytes);
                const floats = new Float32Array(columns);
                for (let start = 0; start < rows; start += rowsPerChunk) {
                    const count = Math.min(rowsPerChunk, rows - start);
                    for (let row = 0; row < count; row++) {
                        const content = rowContent(start + row);
                        if (typeof content !== "function")
                            content.tile.copyEncoded(type, content.scale, buffer, row * rowBytes, content.index, columns);
                        else {
                            content(floats);
                            buffer.set(encodeTensorValues(type, floats), row * rowBytes);
                        }
                    }
                    yield count === rowsPerChunk ? buffer : buffer.subarray(0, count * rowBytes);
                }
            }
        };
    }

    /** Each tensor reads the tiled streams from its own starting point (a whole Q8_0 block). */
    private nextOffset(): number {
        return ((this.tensorOrdinal++ * 7_919) % (TiledNoise.length / q8_0BlockSize)) * q8_0BlockSize;
    }
}
