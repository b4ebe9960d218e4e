import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {InvalidDistributionError, InvalidInputError} from "../errors.js";
import {checkEvaluation, checkRollback, checkTokens} from "./checkEvaluation.js";
import type {DrawingSequence, DrawnTokens, VerifiedRows} from "./drawingSequence.js";
import {type CandidateRows, type GatheredRows, maxResidualWidth, type ResidualSequence, type ScoredDraws} from "./residualSequence.js";
import type {
    BackendSequence,
    BackendTimings,
    EvaluatedDistributions,
    EvaluateOptions,
    LayerSource,
    SequenceState,
    TreeEvaluation,
    TreeRows
} from "./ModelBackend.js";
import {type NativeOutputGroup, NativeOutputMode, type NativeSampling} from "./nativeAddon.js";
import {OperationQueue} from "./OperationQueue.js";
import type {SequenceSlot, SlotDecodeResult} from "./SequenceSlot.js";
import {TreeLayout} from "./TreeLayout.js";

/**
 * A Float64Array the addon will overwrite entirely: not zero-filled on the main thread (at V = 152k a
 * verification's rows are 12 MB), so the pages are first touched by the worker that writes them.
 */
function uninitializedRows(length: number): Float64Array {
    return new Float64Array(Buffer.allocUnsafeSlow(length * Float64Array.BYTES_PER_ELEMENT).buffer, 0, length);
}

/**
 * One token sequence of the native backend, on a context of its own or on one sequence id of a
 * context shared with other sequences (see SequenceSlot): the same checks, rows and timings either way.
 */
export class NativeSequence implements BackendSequence, DrawingSequence, ResidualSequence {
    public readonly timings: BackendTimings = {
        decodeMilliseconds: 0,
        transferMilliseconds: 0,
        samplingMilliseconds: 0,
        batchWaitMilliseconds: 0,
        deviceToHostBytes: 0,
        evaluations: 0
    };
    private readonly history: number[] = [];
    /** The rows of transientRows calls, reused from call to call (grown when a call needs more). */
    private transient: Float64Array = new Float64Array(0);
    private readonly queue = new OperationQueue();
    /** The open token tree (evaluateTree until keepTreePath). */
    private tree: TreeLayout | undefined;

    public constructor(
        private readonly slot: SequenceSlot,
        private readonly sizes: {readonly vocabularySize: number; readonly contextSize: number},
        private readonly onDispose: (sequence: NativeSequence) => void
    ) {}

    public get tokens(): readonly number[] {
        return this.history;
    }

    public evaluate(tokens: readonly number[], options: EvaluateOptions = {}): Promise<Float64Array[]> {
        return this.queue.run(async () => {
            const positions = this.check(tokens, options);
            if (tokens.length === 0) return [];
            const vocabularySize = this.sizes.vocabularySize;
            const rows = uninitializedRows(positions.length * vocabularySize);
            await this.decode(tokens, positions, NativeOutputMode.Logits, rows);
            return positions.map((_position, index) => rows.subarray(index * vocabularySize, (index + 1) * vocabularySize));
        });
    }

    public evaluateDistributions(
        tokens: readonly number[],
        sampling: SamplingOptions,
        options: EvaluateOptions = {}
    ): Promise<EvaluatedDistributions> {
        return this.queue.run(async () => {
            const positions = this.check(tokens, options);
            if (tokens.length === 0) return {logits: [], probabilities: []};
            const vocabularySize = this.sizes.vocabularySize;
            const limit = options.vocabularyLimit;
            if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1 && limit <= vocabularySize))
                throw new InvalidInputError(`must be an integer in [1, ${vocabularySize}], got ${limit}`, "vocabularyLimit");
            const withLogits = options.withoutLogits !== true;
            const length = (withLogits ? 2 : 1) * positions.length * vocabularySize;
            if (options.transientRows === true && this.transient.length < length) this.transient = uninitializedRows(length);
            const rows = options.transientRows === true ? this.transient.subarray(0, length) : uninitializedRows(length);
            await this.decode(
                tokens,
                positions,
                withLogits ? NativeOutputMode.Distribution : NativeOutputMode.Probabilities,
                rows,
                limit === undefined ? sampling : {...sampling, limit}
            );
            const row = (index: number): Float64Array => rows.subarray(index * vocabularySize, (index + 1) * vocabularySize);
            const first = withLogits ? positions.length : 0;
            return {
                logits: withLogits ? positions.map((_position, index) => row(index)) : [],
                probabilities: positions.map((_position, index) => row(first + index))
            };
        });
    }

    public evaluateArgmax(tokens: readonly number[], options: EvaluateOptions = {}): Promise<number[]> {
        return this.queue.run(async () => {
            const positions = this.check(tokens, options);
            if (tokens.length === 0) return [];
            const ids = new Int32Array(positions.length);
            await this.decode(tokens, positions, NativeOutputMode.Argmax, ids);
            return Array.from(ids);
        });
    }

    /**
     * Draws one id per wanted position from its sampler row with the caller's uniform (DrawingSequence):
     * inside the graph when the backend selects on the device (NativeBackendOptions.deviceSelection),
     * so 4 bytes per row leave it; else from the copied logits, counted in `hostRows`.
     */
    public evaluateDrawn(
        tokens: readonly number[],
        sampling: SamplingOptions,
        uniforms: readonly number[],
        options: Pick<EvaluateOptions, "positions"> = {}
    ): Promise<DrawnTokens> {
        return this.queue.run(async () => {
            const positions = this.checkDraws(tokens, sampling, uniforms, options);
            if (tokens.length === 0) return {tokens: [], hostRows: 0};
            const ids = new Int32Array(positions.length);
            const result = await this.slot.decode(tokens, this.history.length, {
                outputs: Int32Array.from(positions),
                mode: NativeOutputMode.Drawn,
                destination: ids,
                sampling,
                uniforms: Float64Array.from(uniforms)
            });
            for (const token of tokens) this.history.push(token);
            this.record(result);
            return {tokens: Array.from(ids), hostRows: result.hostRows ?? 0};
        });
    }

    /**
     * Per wanted position, the drafted id's probability and a draw from the row without it
     * (DrawingSequence.evaluateVerified): 8 bytes per row leave a device that selects there.
     */
    public evaluateVerified(
        tokens: readonly number[],
        sampling: SamplingOptions,
        drafted: readonly number[],
        uniforms: readonly number[],
        options: Pick<EvaluateOptions, "positions"> = {}
    ): Promise<VerifiedRows> {
        return this.queue.run(async () => {
            const positions = this.checkDraws(tokens, sampling, uniforms, options);
            if (drafted.length !== positions.length)
                throw new InvalidInputError(`must hold one id per wanted position (${positions.length}), got ${drafted.length}`, "drafted");
            for (const [index, id] of drafted.entries())
                if (!(Number.isInteger(id) && id >= -1 && id < this.sizes.vocabularySize))
                    throw new InvalidInputError(`[${index}] = ${id} is neither -1 nor an id of the vocabulary`, "drafted");
            if (tokens.length === 0) return {residualTokens: [], draftedProbabilities: [], hostRows: 0};
            const rows = new Float64Array(2 * positions.length);
            const result = await this.slot.decode(tokens, this.history.length, {
                outputs: Int32Array.from(positions),
                mode: NativeOutputMode.Verified,
                destination: rows,
                sampling,
                uniforms: Float64Array.from(uniforms),
                drafted: Int32Array.from(drafted)
            });
            for (const token of tokens) this.history.push(token);
            this.record(result);
            return {
                residualTokens: Array.from(rows.subarray(0, positions.length)),
                draftedProbabilities: Array.from(rows.subarray(positions.length)),
                hostRows: result.hostRows ?? 0
            };
        });
    }

    /**
     * A draft model's draws with their probabilities, and the rows' probabilities at `options.gather`'s
     * ids (ResidualSequence.evaluateScored): 8 + 4K bytes per row leave a device that selects there.
     */
    public evaluateScored(
        tokens: readonly number[],
        sampling: SamplingOptions,
        uniforms: readonly number[],
        options: Pick<EvaluateOptions, "positions"> & {readonly gather?: readonly (readonly number[])[]} = {}
    ): Promise<ScoredDraws> {
        return this.queue.run(async () => {
            const positions = this.checkDraws(tokens, sampling, uniforms, options);
            const gather = options.gather;
            const width = gather === undefined ? 0 : this.residualWidth(gather, "gather");
            if (gather !== undefined) {
                if (gather.length !== positions.length)
                    throw new InvalidInputError(
                        `must hold one list per wanted position (${positions.length}), got ${gather.length}`,
                        "gather"
                    );
                this.checkIds(gather.flat(), positions.length * width, "gather");
            }
            if (tokens.length === 0) return {tokens: [], probabilities: [], gathered: [], hostRows: 0};
            const stride = 2 + width;
            const rows = await this.decodeResidual(tokens, positions, stride, {
                mode: NativeOutputMode.Scored,
                sampling,
                uniforms: Float64Array.from(uniforms),
                ...(gather === undefined ? {} : {drafted: Int32Array.from(gather.flat()), width})
            });
            const at = (offset: number): number[] => positions.map((_position, row) => rows.values[stride * row + offset]!);
            const gathered = positions.map((_position, row) => Array.from(rows.values.subarray(stride * row + 2, stride * (row + 1))));
            return {tokens: at(0), probabilities: at(1), gathered, hostRows: rows.hostRows};
        });
    }

    /** p(drafted) and K draws with their probabilities per row (ResidualSequence.evaluateCandidates): 8 + 8K bytes per row on the device. */
    public evaluateCandidates(
        tokens: readonly number[],
        sampling: SamplingOptions,
        drafted: readonly number[],
        uniforms: readonly (readonly number[])[],
        options: Pick<EvaluateOptions, "positions"> = {}
    ): Promise<CandidateRows> {
        return this.queue.run(async () => {
            const width = this.residualWidth(uniforms, "uniforms");
            const positions = this.checkDraws(tokens, sampling, uniforms.flat(), options, width);
            this.checkIds(drafted, positions.length, "drafted");
            if (tokens.length === 0) return {draftedProbabilities: [], candidates: [], candidateProbabilities: [], hostRows: 0};
            const stride = 1 + 2 * width;
            const rows = await this.decodeResidual(tokens, positions, stride, {
                mode: NativeOutputMode.Candidates,
                sampling,
                uniforms: Float64Array.from(uniforms.flat()),
                drafted: Int32Array.from(drafted),
                width
            });
            const slice = (row: number, from: number): number[] =>
                Array.from(rows.values.subarray(row * stride + from, row * stride + from + width));
            return {
                draftedProbabilities: positions.map((_position, row) => rows.values[row * stride]!),
                candidates: positions.map((_position, row) => slice(row, 1)),
                candidateProbabilities: positions.map((_position, row) => slice(row, 1 + width)),
                hostRows: rows.hostRows
            };
        });
    }

    /** The rows' probabilities at given ids (ResidualSequence.evaluateGathered): 4 + 4K bytes per row on the device. */
    public evaluateGathered(
        tokens: readonly number[],
        sampling: SamplingOptions,
        ids: readonly (readonly number[])[],
        options: Pick<EvaluateOptions, "positions"> = {}
    ): Promise<GatheredRows> {
        return this.queue.run(async () => {
            const width = this.residualWidth(ids, "ids");
            const positions = this.checkDraws(tokens, sampling, [], options, 0);
            if (ids.length !== positions.length)
                throw new InvalidInputError(`must hold one list per wanted position (${positions.length}), got ${ids.length}`, "ids");
            this.checkIds(ids.flat(), positions.length * width, "ids", false);
            if (tokens.length === 0) return {probabilities: [], hostRows: 0};
            const rows = await this.decodeResidual(tokens, positions, width, {
                mode: NativeOutputMode.Gathered,
                sampling,
                drafted: Int32Array.from(ids.flat()),
                width
            });
            const probabilities = positions.map((_position, row) => Array.from(rows.values.subarray(row * width, (row + 1) * width)));
            return {probabilities, hostRows: rows.hostRows};
        });
    }

    /** K of a residual read: every list of `lists` the same length, 1..maxResidualWidth. */
    private residualWidth(lists: readonly (readonly number[])[], field: string): number {
        const width = lists[0]?.length ?? 1;
        if (!(width >= 1 && width <= maxResidualWidth) || lists.some((list) => list.length !== width))
            throw new InvalidInputError(`must hold lists of one length in [1, ${maxResidualWidth}]`, field);
        return width;
    }

    /** `count` ids of the vocabulary (or -1 where `none` allows it). */
    private checkIds(ids: readonly number[], count: number, field: string, none = true): void {
        if (ids.length !== count) throw new InvalidInputError(`must hold ${count} ids, got ${ids.length}`, field);
        for (const [index, id] of ids.entries())
            if (!(Number.isInteger(id) && id >= (none ? -1 : 0) && id < this.sizes.vocabularySize))
                throw new InvalidInputError(`[${index}] = ${id} is ${none ? "neither -1 nor " : "not "}an id of the vocabulary`, field);
    }

    /** One residual decode: `stride` doubles per wanted position. */
    private async decodeResidual(
        tokens: readonly number[],
        positions: readonly number[],
        stride: number,
        group: Omit<NativeOutputGroup, "outputs" | "destination">
    ): Promise<{values: Float64Array; hostRows: number}> {
        const values = new Float64Array(stride * positions.length);
        const result = await this.slot.decode(tokens, this.history.length, {
            ...group,
            outputs: Int32Array.from(positions),
            destination: values
        });
        for (const token of tokens) this.history.push(token);
        this.record(result);
        return {values, hostRows: result.hostRows ?? 0};
    }

    /** evaluateDrawn's and evaluateVerified's checks: the evaluation's, a uniform in [0, 1) per wanted position, T > 0. */
    private checkDraws(
        tokens: readonly number[],
        sampling: SamplingOptions,
        uniforms: readonly number[],
        options: Pick<EvaluateOptions, "positions">,
        perPosition = 1
    ): number[] {
        const positions = this.check(tokens, options);
        if (uniforms.length !== positions.length * perPosition)
            throw new InvalidInputError(
                `must hold ${perPosition === 1 ? "one uniform" : `${perPosition} uniforms`} per wanted position (${positions.length}), got ${uniforms.length}`,
                "uniforms"
            );
        for (const [index, uniform] of uniforms.entries())
            if (!(uniform >= 0 && uniform < 1)) throw new InvalidInputError(`[${index}] = ${uniform} is outside [0, 1)`, "uniforms");
        if (!(sampling.temperature > 0))
            throw new InvalidInputError(`must be above 0 to draw, got ${sampling.temperature}`, "sampling.temperature");
        return positions;
    }

    public get treeBranches(): number {
        return this.slot.branches ?? 1;
    }

    public evaluateTree(tokens: readonly number[], parents: readonly number[], rows: TreeRows): Promise<TreeEvaluation> {
        return this.queue.run(async () => {
            const slot = this.slot;
            if (slot.decodeTree === undefined || this.treeBranches < 2)
                throw new InvalidInputError("has no branches for a token tree (create it with branches > 1)", "sequence");
            if (tokens.length === 0) return {logits: []};
            checkTokens(tokens, this.sizes.vocabularySize);
            const layout = this.tree ?? new TreeLayout(this.treeBranches, this.history.length, this.sizes.contextSize);
            const plan = layout.add(tokens, parents);
            this.tree = layout;
            for (const copy of plan.copies) if (copy.to > 0) await slot.copyBranch!(copy.source, copy.destination, 0, copy.to);
            const vocabularySize = this.sizes.vocabularySize;
            const count = tokens.length;
            const mode =
                rows.kind === "argmax"
                    ? NativeOutputMode.Argmax
                    : rows.kind === "logits"
                      ? NativeOutputMode.Logits
                      : NativeOutputMode.Distribution;
            const destination =
                rows.kind === "argmax"
                    ? new Int32Array(count)
                    : uninitializedRows((rows.kind === "logits" ? 1 : 2) * count * vocabularySize);
            const outputs = Int32Array.from(tokens, (_token, index) => index);
            this.record(
                await slot.decodeTree(tokens, plan.positions, plan.branches, plan.shared, {
                    outputs,
                    mode,
                    destination,
                    sampling: rows.kind === "distributions" ? rows.sampling : undefined
                })
            );
            if (destination instanceof Int32Array) return {argmax: Array.from(destination), logits: []};
            const row = (index: number): Float64Array => destination.subarray(index * vocabularySize, (index + 1) * vocabularySize);
            const logits = Array.from(outputs, (index) => row(index));
            return rows.kind === "logits" ? {logits} : {logits, probabilities: Array.from(outputs, (index) => row(count + index))};
        });
    }

    public keepTreePath(path: readonly number[]): Promise<void> {
        return this.queue.run(async () => {
            const layout = this.tree;
            if (layout === undefined) throw new InvalidInputError("no token tree is open", "sequence");
            const tokens = layout.pathTokens(path);
            const plan = layout.keep(path);
            const slot = this.slot;
            slot.removeBranch!(0, plan.dropFrom);
            if (plan.copy !== undefined) await slot.copyBranch!(plan.copy.source, 0, plan.copy.from, plan.copy.to);
            for (const branch of plan.empty) slot.removeBranch!(branch, 0);
            this.tree = undefined;
            for (const token of tokens) this.history.push(token);
        });
    }

    private check(tokens: readonly number[], options: EvaluateOptions): number[] {
        this.refuseOpenTree();
        return checkEvaluation(tokens, options, {
            vocabularySize: this.sizes.vocabularySize,
            contextSize: this.sizes.contextSize,
            length: this.history.length
        });
    }

    private async decode(
        tokens: readonly number[],
        outputs: readonly number[],
        mode: NativeOutputMode,
        destination?: Float64Array | Int32Array,
        sampling?: NativeSampling
    ): Promise<void> {
        const result = await this.slot.decode(tokens, this.history.length, {
            outputs: Int32Array.from(outputs),
            mode,
            destination,
            sampling
        });
        for (const token of tokens) this.history.push(token);
        this.record(result);
    }

    private refuseOpenTree(): void {
        if (this.tree !== undefined)
            throw new InvalidInputError("has an open token tree: keep a path of it first (keepTreePath)", "sequence");
    }

    private record(result: SlotDecodeResult): void {
        this.timings.decodeMilliseconds += result.decodeMilliseconds;
        this.timings.transferMilliseconds += result.transferMilliseconds;
        this.timings.samplingMilliseconds += result.samplingMilliseconds;
        this.timings.batchWaitMilliseconds! += result.batchWaitMilliseconds ?? 0;
        this.timings.deviceToHostBytes! += result.deviceToHostBytes ?? 0;
        this.timings.evaluations++;
        // processRow's refusals (NaN or +Infinity logits, an all-masked row) are what processLogits refuses.
        if (result.error !== undefined) throw new InvalidDistributionError(result.error, "logits");
    }

    public rollback(count: number): Promise<void> {
        return this.queue.run(() => {
            this.refuseOpenTree();
            checkRollback(count, this.history.length);
            if (count > 0) {
                this.slot.removeFrom(this.history.length - count);
                this.history.length -= count;
            }
            return Promise.resolve();
        });
    }

    public idle(): void {
        this.slot.idle();
    }

    public layerSource(): LayerSource | undefined {
        return this.slot.layerSource?.();
    }

    public clear(): Promise<void> {
        return this.queue.run(() => {
            for (let branch = 1; this.tree !== undefined && branch < this.treeBranches; branch++) this.slot.removeBranch!(branch, 0);
            this.tree = undefined;
            this.slot.removeFrom(0);
            this.history.length = 0;
            return Promise.resolve();
        });
    }

    /** The tokens and a host-memory copy of their KV cells, after the evaluations queued before it. */
    public saveState(): Promise<SequenceState> {
        return this.queue.run(async () => {
            this.refuseOpenTree();
            const tokens = [...this.history];
            return {tokens, data: await this.slot.saveState()};
        });
    }

    /**
     * Replaces the sequence's tokens and KV cells by a saved state (of this backend's sequences), after
     * the evaluations queued before it. A state the backend refuses leaves the sequence empty.
     */
    public restoreState(state: SequenceState): Promise<void> {
        return this.queue.run(async () => {
            const tokens = Array.from(state.tokens);
            checkEvaluation(tokens, {}, {vocabularySize: this.sizes.vocabularySize, contextSize: this.sizes.contextSize, length: 0});
            if (!(state.data instanceof Uint8Array)) throw new InvalidInputError("must be a Uint8Array", "state.data");
            try {
                await this.slot.restoreState(state.data);
            } catch (error) {
                // The slot emptied the sequence, or left it as it was (a malformed state): either way its cells no longer match the history.
                this.history.length = 0;
                this.slot.removeFrom(0);
                throw error;
            }
            this.history.length = 0;
            for (const token of tokens) this.history.push(token);
        });
    }

    public dispose(): Promise<void> {
        return this.queue.close(() => {
            this.slot.release();
            this.onDispose(this);
            return Promise.resolve();
        });
    }
}
