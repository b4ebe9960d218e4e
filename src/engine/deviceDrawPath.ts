import type {ArgmaxCapableSequence, BackendSequence, EvaluateOptions, ModelBackend} from "../backend/ModelBackend.js";
import {type DrawingSequence, supportsDrawing} from "../backend/drawingSequence.js";
import {evaluateRows} from "../backend/evaluateRows.js";
import {readsResiduals, type ResidualSequence} from "../backend/residualSequence.js";
import {processLogits} from "../distributions/processLogits.js";
import type {PolicyKind} from "../policies/policyConfigSchema.js";
import type {SeededChance} from "../random/SeededChance.js";
import type {GenerationOptions} from "./GenerationOptions.js";
import type {DrawnDraft} from "./drafters/Drafter.js";
import type {GenerationTelemetry, RowsCopiedReason} from "./GenerationTelemetry.js";
import {verifyOnCandidates} from "./residualDraw.js";
import {DrawingIdSource, readRows} from "./DrawingIdSource.js";

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
    /** Token trees: their multi-draft residual is renormalised over whole rows (verifyTreeSampling). */
    readonly tree?: boolean;
    /**
     * Chain drafts that carry no probabilities (q = δ): lookup drafters (n-gram, suffix, cross-tokenizer:
     * vocabularySize absent), or any drafter drafting greedily (draftSampling "greedy", minConfidence 0,
     * its ids read as argmax ids). Strict verification of them, and block verification, which reduces to
     * strict's law for them, reads only p at each drafted id and, at the first rejection, a draw from p
     * without it, which the device can give.
     */
    readonly lookupDrafts: boolean;
    /**
     * Chain drafting by a drafter with a model that samples its drafts (draftSampling "sample",
     * minConfidence 0): strict verification reads p and q at each drafted id and, at the first
     * rejection, K draws from p with q at them (verifyOnCandidates), which the devices can give.
     */
    readonly modelDrafts: boolean;
}

/** What `drafter` drafting with `options` gives verification: q-less drafts, sampled drafts with q, or neither (no chain drafter). */
export function draftReads(
    drafter: {readonly vocabularySize?: number} | undefined,
    tree: boolean,
    options: Pick<GenerationOptions, "draftSampling" | "minConfidence">
): Pick<TargetReads, "tree" | "lookupDrafts" | "modelDrafts"> {
    const chain = !tree && drafter !== undefined;
    const model = chain && drafter.vocabularySize !== undefined;
    const idsOnly = options.draftSampling === "greedy" && options.minConfidence === 0;
    return {
        tree,
        lookupDrafts: chain && (!model || idsOnly),
        modelDrafts: model && options.draftSampling === "sample" && options.minConfidence === 0
    };
}

/** The target sequence of a generation whose drafts a draft model draws on the device (verifiesDrawnDrafts). */
export interface DrawnDraftSequence extends ArgmaxCapableSequence {
    /** The next evaluateArgmax verifies these drafts (absent: the drafts carry no probabilities, q = δ). */
    expectDraft(draft: DrawnDraft | undefined): void;
}

/** Whether `sequence` verifies drafts drawn on the device (a draft model's): ChainStep then asks the drafter for such drafts. */
export function verifiesDrawnDrafts(sequence: ArgmaxCapableSequence | undefined): sequence is DrawnDraftSequence {
    return typeof (sequence as Partial<DrawnDraftSequence> | undefined)?.expectDraft === "function";
}

/**
 * Where the argmax fast path declined (argmaxFastPathSequence), at T > 0, on a target that selects
 * tokens on the device, without speculation, with strict or block verification of drafts without
 * probabilities, or with strict verification of sampled drafts: the target sequence as an id source whose ids are draws, made inside the decode graph with
 * the generation's own uniforms (NativeSequence.evaluateDrawn, evaluateVerified, evaluateCandidates),
 * so only ids and a few probabilities per row leave the device; the step's greedy policy then emits
 * them, as on the argmax fast path. Absent where rows are read: the telemetry's rowsCopied then says why.
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
    if (reads.speculative && reads.modelDrafts) {
        if (readsResiduals(sequence)) return new DrawnDraftVerifier(sequence, options, chance, telemetry);
        telemetry.noteRowsCopied("verification at T > 0 with a draft model");
        return undefined;
    }
    return new DrawnIdSequence(sequence, options, chance, telemetry, reads.speculative);
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
    const kind = options.policy.kind;
    if (!reads.speculative) return drawingPolicies.has(kind) ? null : "policy reads whole rows";
    if (rowReadingPolicies.has(kind)) return "policy reads whole rows";
    if (kind !== "strict" && kind !== "block") return "verification at T > 0";
    if (reads.tree === true) return "token tree residuals sum whole rows";
    if (reads.lookupDrafts) return null;
    if (kind === "block")
        return reads.modelDrafts ? "block verification sums both rows over the vocabulary" : "verification at T > 0 with a draft model";
    return reads.modelDrafts ? null : "verification at T > 0 with a draft model";
}

/**
 * The sequence's id reads, answered by draws: each evaluateArgmax call takes one uniform per wanted
 * position from the generation's generator and returns, per row, the id the step must emit there if
 * it gets that far, which the greedy policy then reads as the target's choice. A row whose next batch
 * token is a drafted one (strict verification of a lookup draft, q = δ) is its drafted id when
 * accepted, with probability p(drafted) (one more uniform), else a draw from p without the drafted id
 * (the residual): the greedy policy keeps the accepted prefix and emits that draw, or the last row's
 * plain draw (the bonus token), exactly as strict verification would. Only evaluateArgmax is read by
 * the step; the rest delegates.
 */
class DrawnIdSequence extends DrawingIdSource<DrawingSequence> {
    public constructor(
        inner: DrawingSequence,
        private readonly options: GenerationOptions,
        private readonly chance: SeededChance,
        private readonly telemetry: GenerationTelemetry,
        /**
         * Steps verify drafts: every evaluation reads verification rows, a step without a draft too, so the
         * sequence keeps one sampler chain (a change of chain makes llama.cpp reserve its graphs again).
         */
        private readonly verifies: boolean
    ) {
        super(inner);
    }

    public async evaluateArgmax(tokens: readonly number[], evaluateOptions: EvaluateOptions = {}): Promise<number[]> {
        const {positions, drafted} = readRows(tokens, evaluateOptions);
        const uniforms = positions.map(() => this.chance.random.nextDouble());
        if (!this.verifies) {
            const drawn = await this.inner.evaluateDrawn(tokens, this.options.sampling, uniforms, evaluateOptions);
            noteHostRows(this.telemetry, drawn.hostRows);
            return drawn.tokens;
        }
        const rows = await this.inner.evaluateVerified(tokens, this.options.sampling, drafted, uniforms, evaluateOptions);
        noteHostRows(this.telemetry, rows.hostRows);
        let rejected = false;
        return drafted.map((id, row) => {
            if (id < 0 || rejected) return rows.residualTokens[row]!;
            if (this.chance.accept(rows.draftedProbabilities[row]!)) return id;
            rejected = true;
            return rows.residualTokens[row]!;
        });
    }
}

/**
 * The target sequence of strict verification at T > 0 of a draft model's tokens drawn on the device
 * (DraftProposal.drawn): each evaluateArgmax reads per row p(drafted) and K draws from p with their
 * probabilities (ResidualSequence.evaluateCandidates, 8 + 8K bytes), and returns the ids the step
 * emits (verifyOnCandidates), which the greedy policy then reads as the target's choice. A draft
 * without probabilities (none expected) is verified as q = δ.
 */
class DrawnDraftVerifier extends DrawingIdSource<DrawingSequence & ResidualSequence> implements DrawnDraftSequence {
    private draft: DrawnDraft | undefined;

    public constructor(
        inner: DrawingSequence & ResidualSequence,
        private readonly options: GenerationOptions,
        private readonly chance: SeededChance,
        private readonly telemetry: GenerationTelemetry
    ) {
        super(inner);
    }

    public expectDraft(draft: DrawnDraft | undefined): void {
        this.draft = draft;
    }

    public async evaluateArgmax(tokens: readonly number[], evaluateOptions: EvaluateOptions = {}): Promise<number[]> {
        const draft = this.draft;
        this.draft = undefined;
        const {positions, drafted} = readRows(tokens, evaluateOptions);
        const width = this.options.residualCandidates;
        const uniforms = positions.map(() => Array.from({length: width}, () => this.chance.random.nextDouble()));
        const sampling = this.options.sampling;
        const rows = await this.inner.evaluateCandidates(tokens, sampling, drafted, uniforms, evaluateOptions);
        noteHostRows(this.telemetry, rows.hostRows);
        const {ids, fallback} = await verifyOnCandidates({
            rows,
            drafted,
            draft,
            chance: this.chance,
            targetRow: (row) => this.targetRow(tokens, positions[row]!)
        });
        if (fallback) this.telemetry.noteRowsCopied("residual from whole rows (every candidate rejected)");
        return ids;
    }

    /**
     * The sampler row of batch index `index` of the evaluation just made, decoded again (its KV before
     * it is intact); the tokens after it are decoded again too, without rows, so the sequence holds
     * what the caller expects.
     */
    private async targetRow(tokens: readonly number[], index: number): Promise<Float64Array> {
        const sampling = this.options.sampling;
        await this.inner.rollback(tokens.length - index);
        const rows = await evaluateRows(this.inner, [tokens[index]!], sampling, {withoutLogits: true});
        if (index + 1 < tokens.length) await this.inner.evaluate(tokens.slice(index + 1), {positions: []});
        return rows.probabilities?.[0] ?? processLogits(rows.logits[0]!, sampling);
    }
}

/** Rows the device declined to sample on (its sampler cannot run them) were copied whole. */
function noteHostRows(telemetry: GenerationTelemetry, rows: number): void {
    if (rows > 0) telemetry.noteRowsCopied("device declined the sampler");
}
