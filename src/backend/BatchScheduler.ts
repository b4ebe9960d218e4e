import {InlineDecodeChooser} from "./InlineDecodeChooser.js";
import {InvalidInputError} from "../errors.js";
import type {NativeContextHandle, NativeOutputGroup} from "./nativeAddon.js";
import {NativeOutputMode} from "./nativeAddon.js";
import type {SequenceSlot, SlotDecodeResult} from "./SequenceSlot.js";

export interface BatchSchedulerOptions {
    /**
     * Tokens one step decodes at most, verifications first; prompts are cut into chunks that fill the
     * rest (chunked prefill), so a long prompt cannot stall the other sequences' next tokens. A
     * submission whose requested rows would straddle a chunk boundary is decoded whole.
     */
    readonly stepTokens: number;
    /** A submission of at most this many tokens is a decode (a verification or a single token), taken before prompts. */
    readonly decodeTokens?: number;
    /** Small steps may run on the main thread below this native cost (InlineDecodeChooser): a tiny draft model's steps with few streams. Default 0. */
    readonly inlineBelowMilliseconds?: number;
    /**
     * Sequence ids each slot owns for token trees (its branches): slot s decodes on context ids
     * s · branches … s · branches + branches − 1, of a context with a unified KV cache. Default 1.
     */
    readonly branches?: number;
}

interface Submission {
    readonly sequence: number;
    readonly tokens: Int32Array;
    /** Position of tokens[0] in the sequence. */
    readonly start: number;
    /** A token tree's layout (SequenceSlot.decodeTree): each token's position and branch, and the branches `shared` adds. */
    readonly tree?: {readonly positions: Int32Array; readonly branches: Int32Array; readonly shared: Int32Array};
    readonly group: NativeOutputGroup;
    /** The first index whose row is wanted: chunks end at or before it, or take everything left. */
    readonly firstOutput: number;
    readonly resolve: (result: SlotDecodeResult) => void;
    readonly reject: (error: unknown) => void;
    /** Tokens decoded so far (chunked prefill). */
    next: number;
    /** When it last started waiting for a step. */
    waitingSince: number;
    result: {
        decodeMilliseconds: number;
        transferMilliseconds: number;
        samplingMilliseconds: number;
        batchWaitMilliseconds: number;
        deviceToHostBytes: number;
        hostRows: number;
        error?: string;
    };
}

interface Chunk {
    readonly submission: Submission;
    readonly from: number;
    readonly to: number;
    /** Batch index of tokens[from]. */
    readonly offset: number;
}

/**
 * Continuous batching on one llama.cpp context shared by many sequences (vLLM's iteration-level
 * scheduling, llama-server's slots): every sequence's pending evaluation — a verification of γ + 1
 * tokens, one token of target-only decoding, a draft token, or a chunk of a prompt — is laid out in
 * one llama_batch and decoded in one llama_decode on a worker thread; each submitter then gets its
 * own rows (logits, argmax ids or sampler rows for its own sampling settings) as an output group.
 *
 * When a step starts: at once when no step is running and every sequence of the previous steps has
 * submitted again (the steady state of N streams in lockstep); otherwise when those still doing their
 * own work (verification, draft steps, streaming a chunk) should be back by how long each took before,
 * so that they join this step instead of trailing into the next, as llama-server's slots all join
 * each of its iterations. A sequence that has left or is slow is waited for half a step at most.
 *
 * Rollbacks of a sequence arrive while another step may be running: they are applied at once when the
 * context is idle, else handed to the next decode, which applies them on its worker before decoding
 * (the event loop never blocks on a running decode). Saving or restoring a sequence's KV cells
 * (a prompt cache) is likewise done at once when the context is idle, else right after the running
 * step and before the next, the rollbacks that arrived meanwhile applied first.
 */
export class BatchScheduler {
    private readonly free: number[];
    private readonly inUse = new Set<number>();
    private pending: Submission[] = [];
    /** Sequences of a step that have not submitted since, and when that step's results were handed out. */
    private readonly expected = new Map<number, number>();
    /** How long each sequence takes to submit again after its step (its verification and draft steps), smoothed. */
    private readonly returnMilliseconds = new Map<number, number>();
    /** (sequence, from) pairs waiting for the context to be idle. */
    private removals: number[] = [];
    /** State saves and restores that arrived while a step ran, run (in arrival order) before the next. */
    private edits: Array<{run: () => void; reject: (error: unknown) => void}> = [];
    private running = false;
    private timer: NodeJS.Timeout | undefined;
    private launch: NodeJS.Immediate | undefined;
    private lastStepMilliseconds = 2;
    private readonly inline: InlineDecodeChooser;
    private disposed = false;
    private readonly decodeTokens: number;
    private readonly branches: number;
    /** Sequences (slots) the context holds. */
    private readonly slots: number;

    /**
     * Steps decoded, tokens and submissions in them, the largest step (submissions), and milliseconds
     * spent with a submission pending but no step running (gathering the others), and rollbacks deferred to the next step, for telemetry and tests.
     */
    public readonly stats = {
        steps: 0,
        tokens: 0,
        submissions: 0,
        largestStep: 0,
        gatherMilliseconds: 0,
        decodeMilliseconds: 0,
        deferredRemovals: 0,
        /** State saves and restores that arrived while a step ran, run after it. */
        deferredStateEdits: 0
    };
    /** When the oldest pending submission arrived while no step ran. */
    private gatherSince: number | undefined;

    public constructor(
        private readonly context: NativeContextHandle,
        sequences: number,
        private readonly options: BatchSchedulerOptions
    ) {
        if (!Number.isSafeInteger(options.stepTokens) || options.stepTokens < 1)
            throw new InvalidInputError(`must be a positive integer, got ${options.stepTokens}`, "stepTokens");
        this.branches = options.branches ?? 1;
        this.free = Array.from({length: sequences}, (_value, index) => sequences - 1 - index);
        this.slots = sequences;
        this.decodeTokens = options.decodeTokens ?? 16;
        this.inline = new InlineDecodeChooser(options.inlineBelowMilliseconds ?? 0);
    }

    /** Sequences in use. */
    public get active(): number {
        return this.inUse.size;
    }

    /** A slot on a free sequence id, or undefined when all are taken. */
    public acquire(): SequenceSlot | undefined {
        if (this.disposed) return undefined;
        const sequence = this.free.pop();
        if (sequence === undefined) return undefined;
        this.inUse.add(sequence);
        let released = false;
        const own = this.contextId(sequence, 0);
        return {
            decode: (tokens, start, group) => this.submit(sequence, tokens, start, group),
            removeFrom: (from) => this.remove(own, from),
            branches: this.branches,
            decodeTree: (tokens, positions, branches, shared, group) =>
                this.submit(sequence, tokens, 0, group, {positions, branches, shared}),
            copyBranch: (source, destination, from, to) =>
                this.edit(() => this.context.copyTokens(this.contextId(sequence, source), this.contextId(sequence, destination), from, to)),
            removeBranch: (branch, from) => this.remove(this.contextId(sequence, branch), from),
            layerSource: () => ({context: this.context, sequence: own, slots: this.slots}),
            // A sequence parked between requests is not coming back with a submission soon.
            idle: () => {
                this.expected.delete(sequence);
                this.schedule();
            },
            saveState: () => this.edit(() => this.context.saveSequence(own)),
            restoreState: (data) => this.edit(() => this.context.restoreSequence(own, data)),
            release: () => {
                if (released) return;
                released = true;
                for (let branch = 0; branch < this.branches; branch++) this.remove(this.contextId(sequence, branch), 0);
                this.inUse.delete(sequence);
                this.expected.delete(sequence);
                this.returnMilliseconds.delete(sequence);
                this.free.push(sequence);
                this.schedule();
            }
        };
    }

    /** Frees the context once no step is running; pending submissions are refused. */
    public dispose(): void {
        this.disposed = true;
        clearTimeout(this.timer);
        clearImmediate(this.launch);
        for (const submission of this.pending.splice(0)) submission.reject(new InvalidInputError("the model is disposed", "backend"));
        if (!this.running) this.context.dispose();
    }

    /**
     * Runs a KV-cache edit of one sequence (saveSequence, restoreSequence) when no step runs: at once,
     * or after the running step, and always after the rollbacks handed in before it.
     */
    private edit<T>(operation: () => T): Promise<T> {
        if (this.disposed) return Promise.reject(new InvalidInputError("the model is disposed", "backend"));
        return new Promise<T>((resolve, reject) => {
            const run = (): void => {
                try {
                    this.applyRemovals();
                    resolve(operation());
                } catch (error) {
                    reject(error);
                }
            };
            if (this.running) {
                this.edits.push({run, reject});
                this.stats.deferredStateEdits++;
            } else run();
        });
    }

    /** Rollbacks deferred while a step ran, applied now (the context must be idle). */
    private applyRemovals(): void {
        const removals = this.removals.splice(0);
        for (let index = 0; index < removals.length; index += 2) this.context.removeTokens(removals[index]!, removals[index + 1]!, -1);
    }

    /** The context's sequence id of a slot's branch. */
    private contextId(sequence: number, branch: number): number {
        return sequence * this.branches + branch;
    }

    private submit(
        sequence: number,
        tokens: readonly number[],
        start: number,
        group: NativeOutputGroup,
        tree?: Submission["tree"]
    ): Promise<SlotDecodeResult> {
        if (this.disposed) return Promise.reject(new InvalidInputError("the model is disposed", "backend"));
        return new Promise((resolve, reject) => {
            const outputs = group.mode === NativeOutputMode.None ? [] : Array.from(group.outputs);
            this.pending.push({
                sequence,
                tokens: Int32Array.from(tokens),
                start,
                tree,
                group,
                resolve,
                reject,
                firstOutput: outputs.reduce((first, index) => Math.min(first, index), tokens.length),
                next: 0,
                waitingSince: performance.now(),
                result: {
                    decodeMilliseconds: 0,
                    transferMilliseconds: 0,
                    samplingMilliseconds: 0,
                    batchWaitMilliseconds: 0,
                    deviceToHostBytes: 0,
                    hostRows: 0
                }
            });
            const handedOut = this.expected.get(sequence);
            if (handedOut !== undefined) {
                this.expected.delete(sequence);
                const took = performance.now() - handedOut;
                const before = this.returnMilliseconds.get(sequence);
                this.returnMilliseconds.set(sequence, before === undefined ? took : (before + took) / 2);
            }
            this.schedule();
        });
    }

    private remove(sequence: number, from: number): void {
        if (this.running) {
            this.removals.push(sequence, from);
            this.stats.deferredRemovals++;
        } else this.context.removeTokens(sequence, from, -1);
    }

    private schedule(): void {
        if (this.running || this.disposed || this.pending.length === 0) return;
        this.gatherSince ??= performance.now();
        const waitingFor = [...this.expected].filter(([sequence]) => this.inUse.has(sequence));
        if (waitingFor.length === 0) {
            // After this turn's promise callbacks: submissions made in the same turn join the step.
            this.launch ??= setImmediate(() => this.start());
            return;
        }
        // Wait until the sequences of earlier steps should be back (their verification and draft steps
        // take about as long as they took before; a sequence not seen yet may take any time), never more
        // than half a step: a step launched without them makes them wait a whole step, and that is the
        // most a slow or departed sequence costs the others.
        const due = Math.max(
            ...waitingFor.map(([sequence, handedOut]) => {
                const usual = this.returnMilliseconds.get(sequence);
                return handedOut + (usual === undefined ? Infinity : 1.5 * usual + 1);
            })
        );
        this.timer ??= setTimeout(
            () => this.start(),
            Math.min(Math.max(1, this.lastStepMilliseconds / 2), Math.max(1, due - performance.now()))
        );
    }

    private start(): void {
        clearTimeout(this.timer);
        clearImmediate(this.launch);
        this.timer = undefined;
        this.launch = undefined;
        if (!this.running && !this.disposed && this.pending.length > 0) void this.step();
    }

    /**
     * Which tokens of which submissions this step decodes: every decode, then prompt chunks in arrival
     * order while the step has room; laid out in sequence-id order.
     */
    private layout(): Chunk[] {
        const decodes = this.pending.filter((submission) => submission.tokens.length - submission.next <= this.decodeTokens);
        const prompts = this.pending.filter((submission) => submission.tokens.length - submission.next > this.decodeTokens);
        const taken: Array<{submission: Submission; from: number; to: number}> = decodes.map((submission) => ({
            submission,
            from: submission.next,
            to: submission.tokens.length
        }));
        let count = taken.reduce((total, chunk) => total + chunk.to - chunk.from, 0);
        for (const submission of prompts) {
            const budget = this.options.stepTokens - count;
            if (budget <= 0 && taken.length > 0) break;
            const left = submission.tokens.length - submission.next;
            let take = Math.min(left, Math.max(budget, 1));
            // A chunk short of the end must not contain a requested row: stop before the first, or take it all.
            if (take < left && submission.next + take > submission.firstOutput)
                take = submission.firstOutput > submission.next ? submission.firstOutput - submission.next : left;
            taken.push({submission, from: submission.next, to: submission.next + take});
            count += take;
        }
        // With one KV stream per sequence llama.cpp splits a batch into ubatches of consecutive sequence
        // ids (in batch order) taking equally many tokens from each: each ubatch is a pass over the
        // weights. Sequence order keeps a step's sequences in as few runs as their ids allow.
        taken.sort((a, b) => a.submission.sequence - b.submission.sequence);
        let offset = 0;
        return taken.map((chunk) => {
            const laid = {...chunk, offset};
            offset += chunk.to - chunk.from;
            return laid;
        });
    }

    private async step(): Promise<void> {
        this.running = true;
        if (this.gatherSince !== undefined) this.stats.gatherMilliseconds += performance.now() - this.gatherSince;
        this.gatherSince = undefined;
        const chunks = this.layout();
        const count = chunks.reduce((total, chunk) => total + chunk.to - chunk.from, 0);
        const tokens = new Int32Array(count);
        const sequences = new Int32Array(count);
        const positions = new Int32Array(count);
        const groups: NativeOutputGroup[] = [];
        const grouped: Chunk[] = [];
        const shared: number[] = [];
        const started = performance.now();
        for (const chunk of chunks) {
            const {submission} = chunk;
            tokens.set(submission.tokens.subarray(chunk.from, chunk.to), chunk.offset);
            const tree = submission.tree;
            for (let index = chunk.from; index < chunk.to; index++) {
                sequences[chunk.offset + index - chunk.from] = this.contextId(submission.sequence, tree?.branches[index] ?? 0);
                positions[chunk.offset + index - chunk.from] = tree?.positions[index] ?? submission.start + index;
            }
            // A tree is decoded whole (all its rows are wanted), so its indexes are the chunk's.
            for (let pair = 0; tree !== undefined && pair < tree.shared.length; pair += 2)
                shared.push(chunk.offset + tree.shared[pair], this.contextId(submission.sequence, tree.shared[pair + 1]));
            submission.result.batchWaitMilliseconds += started - submission.waitingSince;
            if (chunk.to === submission.tokens.length && submission.group.mode !== NativeOutputMode.None) {
                groups.push({...submission.group, outputs: submission.group.outputs.map((index) => chunk.offset + index - chunk.from)});
                grouped.push(chunk);
            }
        }
        const removals = Int32Array.from(this.removals.splice(0));
        this.stats.steps++;
        this.stats.tokens += count;
        this.stats.submissions += chunks.length;
        this.stats.largestStep = Math.max(this.stats.largestStep, chunks.length);
        const participants = new Set(chunks.map((chunk) => chunk.submission));
        this.pending = this.pending.filter((submission) => !participants.has(submission));
        try {
            const extra = shared.length > 0 ? Int32Array.from(shared) : undefined;
            const result =
                (this.inline.inline(count) ? this.context.decodeNow(tokens, sequences, positions, groups, removals, extra) : null) ??
                (await this.context.decode(tokens, sequences, positions, groups, removals, extra));
            this.lastStepMilliseconds = performance.now() - started;
            this.stats.decodeMilliseconds += result.decodeMilliseconds;
            this.inline.record(count, result.decodeMilliseconds + result.transferMilliseconds + result.samplingMilliseconds);
            const finished = performance.now();
            grouped.forEach((chunk, index) => {
                const group = result.groups[index]!;
                chunk.submission.result.transferMilliseconds += group.transferMilliseconds;
                chunk.submission.result.samplingMilliseconds += group.samplingMilliseconds;
                chunk.submission.result.deviceToHostBytes += group.deviceToHostBytes ?? 0;
                chunk.submission.result.hostRows += group.hostRows ?? 0;
                if (group.error !== undefined) chunk.submission.result.error = group.error;
            });
            const unfinished: Submission[] = [];
            for (const chunk of chunks) {
                const {submission} = chunk;
                submission.result.decodeMilliseconds += result.decodeMilliseconds;
                submission.next = chunk.to;
                if (submission.next < submission.tokens.length) {
                    submission.waitingSince = finished;
                    unfinished.push(submission);
                } else {
                    this.expected.set(submission.sequence, finished);
                    submission.resolve(submission.result);
                }
            }
            // A prompt's next chunk keeps its place ahead of later arrivals.
            this.pending = [...unfinished, ...this.pending];
        } catch (error) {
            // The step's tokens may be partly in the KV cache: drop them, the submitters hold none of them.
            for (const {submission} of chunks) {
                const from = submission.tree?.positions.reduce((first, position) => Math.min(first, position)) ?? submission.start;
                for (let branch = 0; branch < (submission.tree !== undefined ? this.branches : 1); branch++)
                    this.removals.push(this.contextId(submission.sequence, branch), from);
            }
            for (const chunk of chunks) chunk.submission.reject(error);
        } finally {
            this.running = false;
        }
        if (this.disposed) {
            for (const edit of this.edits.splice(0)) edit.reject(new InvalidInputError("the model is disposed", "backend"));
            this.context.dispose();
            return;
        }
        this.applyRemovals();
        for (const edit of this.edits.splice(0)) edit.run();
        this.schedule();
    }
}
