import type {ArgmaxCapableSequence, BackendSequence, EvaluateOptions, ModelBackend} from "../backend/ModelBackend.js";
import {type DrawingSequence, supportsDrawing} from "../backend/drawingSequence.js";
import type {PolicyKind} from "../policies/policyConfigSchema.js";
import type {SeededChance} from "../random/SeededChance.js";
import type {GenerationOptions} from "./GenerationOptions.js";
import type {GenerationTelemetry, RowsCopiedReason} from "./GenerationTelemetry.js";

/**
 * Policies whose target-only step emits a draw from the target's sampler row with one uniform of the
 * generation's generator (sampleFromRow): the backend can make that draw itself. Not greedy (it emits
 * the argmax at any temperature) nor calibrated (its memory reads rows).
 */
const drawingPolicies = new Set<PolicyKind>(["strict", "block", "match", "typical", "fuzzy", "lossy", "random"]);

/** Policies whose verification reads whole rows by design (divergences, the correction memory, entropy). */
const rowReadingPolicies = new Set<PolicyKind>(["fuzzy", "calibrated", "typical"]);

/** What a generation reads of the target, as argmaxFastPathSequence and deviceDrawPath judge it. */
export interface TargetReads {
    readonly policyGiven: boolean;
    readonly constrained: boolean;
    /** A drafter or a token tree: verification reads rows. */
    readonly speculative: boolean;
}

/**
 * Where the argmax fast path declined (argmaxFastPathSequence), at T > 0 without speculation, on a
 * target that selects tokens on the device: the target sequence as an id source whose ids are draws,
 * made inside the decode graph with the generation's own uniforms (NativeSequence.evaluateDrawn), so
 * only ids leave the device; the step's greedy policy then emits the id, as on the argmax fast path.
 * Absent where rows are read: the telemetry's rowsCopied then says why.
 */
export function deviceDrawSequence(
    setup: {
        readonly sequence: BackendSequence;
        readonly target: ModelBackend;
        readonly options: GenerationOptions;
        readonly telemetry: GenerationTelemetry;
    },
    reads: TargetReads,
    chance: SeededChance
): ArgmaxCapableSequence | undefined {
    const {sequence, target, options, telemetry} = setup;
    const reason = rowsCopiedReason(target, options, reads) ?? (supportsDrawing(sequence) ? null : "the sequence cannot draw");
    if (reason !== null) telemetry.noteRowsCopied(reason);
    if (reason !== null || target.tokenSelection !== "device" || !supportsDrawing(sequence)) return undefined;
    return new DrawnIdSequence(sequence, options, chance, telemetry);
}

/**
 * Why a target that selects tokens on the device still has whole rows copied in this generation; null
 * where ids alone can cross (or the host selects). Asked where the argmax fast path declined: at T = 0
 * that is a policy not exact at T = 0, minConfidence, or the fast path turned off.
 */
export function rowsCopiedReason(target: ModelBackend, options: GenerationOptions, reads: TargetReads): RowsCopiedReason | null {
    if (target.tokenSelection !== "device") return null;
    if (options.logprobs !== undefined) return "logprobs";
    if (reads.constrained) return "grammar";
    if (reads.policyGiven) return "custom policy";
    if (options.sampling.temperature === 0) return options.argmaxFastPath ? "policy reads whole rows" : "argmax fast path off";
    if (reads.speculative) return rowReadingPolicies.has(options.policy.kind) ? "policy reads whole rows" : "verification at T > 0";
    return drawingPolicies.has(options.policy.kind) ? null : "policy reads whole rows";
}

/**
 * The sequence's id reads, answered by draws: each evaluateArgmax call takes one uniform per wanted
 * position from the generation's generator (where the host path's policy would take it to sample the
 * row) and returns the drawn ids. Only evaluateArgmax is read by the step; the rest delegates.
 */
class DrawnIdSequence implements ArgmaxCapableSequence {
    public constructor(
        private readonly inner: DrawingSequence,
        private readonly options: GenerationOptions,
        private readonly chance: SeededChance,
        private readonly telemetry: GenerationTelemetry
    ) {}

    public get tokens(): readonly number[] {
        return this.inner.tokens;
    }

    public get timings() {
        return this.inner.timings;
    }

    public async evaluateArgmax(tokens: readonly number[], evaluateOptions: EvaluateOptions = {}): Promise<number[]> {
        const count = evaluateOptions.positions?.length ?? 1;
        const uniforms = Array.from({length: count}, () => this.chance.random.nextDouble());
        const drawn = await this.inner.evaluateDrawn(tokens, this.options.sampling, uniforms, evaluateOptions);
        if (drawn.hostRows > 0) this.telemetry.noteRowsCopied("device declined the sampler");
        return drawn.tokens;
    }

    public evaluate(tokens: readonly number[], options?: EvaluateOptions): Promise<Float64Array[]> {
        return this.inner.evaluate(tokens, options);
    }

    public rollback(count: number): Promise<void> {
        return this.inner.rollback(count);
    }

    public clear(): Promise<void> {
        return this.inner.clear();
    }

    public dispose(): Promise<void> {
        return this.inner.dispose();
    }
}
