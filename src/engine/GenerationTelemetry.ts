import type {EvaluationSplit} from "../backend/ModelBackend.js";
import {DraftLengthTelemetry} from "./DraftLengthTelemetry.js";
import {DrafterTelemetry} from "./drafters/DrafterTelemetry.js";

/**
 * What made whole target rows cross from a target that selects tokens on the device: log-probabilities,
 * a grammar's masks, a caller's own policy, a policy that reads whole rows (fuzzy, calibrated, typical;
 * greedy verification at T > 0; at T = 0 any policy the argmax fast path does not cover), the fast
 * path turned off (GenerationOptions.argmaxFastPath), verification at T > 0 by match, lossy or random,
 * strict or block verification of drafts the device route cannot verify (drafts under minConfidence,
 * or a drafter that cannot draw on the device or draft on ids), block verification of sampled drafts
 * (its residual mass sums max(w·p − q, 0) over both whole rows), token trees at T > 0 (their
 * multi-draft residual is renormalised over whole rows), strict's rare fallback to whole rows when every target draw a
 * rejection proposed was rejected too (src/engine/residualDraw.ts), the device declining the sampler
 * chain (an op it lacks), or a sequence that cannot draw ids itself.
 */
export type RowsCopiedReason =
    | "logprobs"
    | "grammar"
    | "custom policy"
    | "policy reads whole rows"
    | "verification at T > 0"
    | "verification at T > 0 with a draft model"
    | "block verification sums both rows over the vocabulary"
    | "token tree residuals sum whole rows"
    | "residual from whole rows (every candidate rejected)"
    | "argmax fast path off"
    | "device declined the sampler"
    | "the sequence cannot draw";

/**
 * Counters of one generation (or many, merged), with vLLM's spec-decode metric definitions:
 * acceptance rate = accepted / draft tokens; mean acceptance length = 1 + accepted / drafts, counting
 * the recovered or bonus token.
 */
export class GenerationTelemetry {
    /** Speculative steps that proposed at least one draft token (vLLM's num_drafts). */
    public drafts = 0;
    public steps = 0;
    public draftTokens = 0;
    public acceptedTokens = 0;
    /** Accepted count per draft position (vLLM's num_accepted_tokens_per_pos). */
    public acceptedPerPosition: number[] = [];
    /** Proposed count per draft position (positions are reached less often when γ adapts). */
    public draftedPerPosition: number[] = [];
    public emittedTokens = 0;
    public promptTokens = 0;
    /** Prompt tokens whose KV a reused sequence already held (prompt caching): not decoded again. */
    public cachedPromptTokens = 0;
    /**
     * Wall milliseconds by phase: prompt evaluation, drafting, target verification (the whole call:
     * model, row transfer, thread hops), sampling (turning target logit rows into sampler rows), grammar
     * (a constraint's masks, awaited on their worker, and its checks of drafts and rows), the policy's
     * decision, everything else (rollback, stop handling).
     */
    public time = {prompt: 0, draft: 0, verify: 0, sampling: 0, grammar: 0, policy: 0, other: 0, total: 0};
    /** Logit rows a constraint masked (each a pass over the vocabulary on a worker thread). */
    public grammarMasks = 0;
    /**
     * What the backend measured inside its evaluations, where it can (the native backend): model time
     * (llama_decode), row transfer (copying logits out, or reducing them to argmax ids) and sampler rows
     * computed natively, for target and draft. Null parts were not measured; then model time falls back to the evaluations' wall time.
     * With continuous batching (serve), decode is each shared step's whole llama_decode and batchWait the
     * time queued for a step to start (see EvaluationSplit.batchWaitMilliseconds).
     */
    public backend = {
        targetDecode: 0,
        targetTransfer: 0,
        targetSampling: 0,
        targetBatchWait: 0,
        draftDecode: 0,
        draftTransfer: 0,
        draftSampling: 0,
        draftBatchWait: 0,
        measured: false
    };
    /**
     * Bytes copied out of the models' compute graphs (EvaluationSplit.deviceToHostBytes): logit rows
     * whole, or 4 bytes per id where the argmax or the draw was made on the device. Whole rows cross
     * wherever something on the host reads them (rowsCopied names it). Null parts were not measured (a
     * backend that does not report them).
     */
    public deviceToHost = {target: 0, draft: 0, measured: false};
    /**
     * Why whole target rows were copied although the target selects tokens on the device (null: only
     * ids crossed, or the host selects): what read them (RowsCopiedReason).
     */
    public rowsCopied: RowsCopiedReason | null = null;
    /** Batch size → [total ms, count] of target evaluations, for the cost curve t_target(k). */
    public targetEvaluations = new Map<number, [number, number]>();
    /** [total ms, count] of single draft-token evaluations, for t_draft. */
    public draftEvaluations: [number, number] = [0, 0];
    /** Milliseconds of every draft evaluation, single tokens and catch-up batches alike (model time). */
    public draftModelMilliseconds = 0;
    /** Lookups, proposals, accepted tokens and per-position counts of each drafter (chain members apart). */
    public drafters = new DrafterTelemetry();
    /** The draft length chosen for each decoding step, and the steps draftLength "auto" left without speculation. */
    public draftLengths = new DraftLengthTelemetry();

    public recordStep(proposed: number, accepted: number, emitted: number): void {
        this.steps++;
        if (proposed > 0) this.drafts++;
        this.draftTokens += proposed;
        this.acceptedTokens += accepted;
        this.emittedTokens += emitted;
        for (let position = 0; position < proposed; position++) {
            this.draftedPerPosition[position] = (this.draftedPerPosition[position] ?? 0) + 1;
            if (position < accepted) this.acceptedPerPosition[position] = (this.acceptedPerPosition[position] ?? 0) + 1;
            else this.acceptedPerPosition[position] ??= 0;
        }
    }

    public recordTargetEvaluation(batchSize: number, milliseconds: number, native?: EvaluationSplit): void {
        if (native !== undefined) {
            this.backend.targetDecode += native.decodeMilliseconds;
            this.backend.targetTransfer += native.transferMilliseconds;
            this.backend.targetSampling += native.samplingMilliseconds;
            this.backend.targetBatchWait += native.batchWaitMilliseconds ?? 0;
            this.backend.measured = true;
            this.recordBytes("target", native);
        }
        const entry = this.targetEvaluations.get(batchSize) ?? [0, 0];
        entry[0] += milliseconds;
        entry[1]++;
        this.targetEvaluations.set(batchSize, entry);
    }

    /** One draft evaluation of `batchSize` tokens; single-token ones also feed t_draft. */
    public recordDraftEvaluation(milliseconds: number, batchSize = 1, native?: EvaluationSplit): void {
        this.draftModelMilliseconds += milliseconds;
        if (native !== undefined) {
            this.backend.draftDecode += native.decodeMilliseconds;
            this.backend.draftTransfer += native.transferMilliseconds;
            this.backend.draftSampling += native.samplingMilliseconds;
            this.backend.draftBatchWait += native.batchWaitMilliseconds ?? 0;
            this.backend.measured = true;
            this.recordBytes("draft", native);
        }
        if (batchSize !== 1) return;
        this.draftEvaluations[0] += milliseconds;
        this.draftEvaluations[1]++;
    }

    private recordBytes(model: "target" | "draft", native: EvaluationSplit): void {
        if (native.deviceToHostBytes === undefined) return;
        this.deviceToHost[model] += native.deviceToHostBytes;
        this.deviceToHost.measured = true;
    }

    /** Records why target rows crossed whole (the first reason stays). */
    public noteRowsCopied(reason: RowsCopiedReason): void {
        this.rowsCopied ??= reason;
    }

    /** Bytes copied out of the compute graphs per emitted token (target and draft); null where not measured. */
    public get deviceToHostBytesPerToken(): number | null {
        if (!this.deviceToHost.measured || this.emittedTokens === 0) return null;
        return (this.deviceToHost.target + this.deviceToHost.draft) / this.emittedTokens;
    }

    public get acceptanceRate(): number {
        return this.draftTokens === 0 ? 0 : this.acceptedTokens / this.draftTokens;
    }

    public get meanAcceptanceLength(): number {
        return this.drafts === 0 ? 1 : 1 + this.acceptedTokens / this.drafts;
    }

    /** Generated tokens per second of decoding (prompt evaluation excluded). */
    public get tokensPerSecond(): number {
        const decodeMilliseconds = this.time.total - this.time.prompt;
        return decodeMilliseconds <= 0 ? 0 : (this.emittedTokens * 1000) / decodeMilliseconds;
    }

    /**
     * Milliseconds of model computation: llama_decode alone where the backend measures it (target and
     * draft), else the wall time of every evaluation call (which then hides transfer and call costs).
     */
    public get modelMilliseconds(): number {
        if (this.backend.measured) return this.backend.targetDecode + this.backend.draftDecode;
        let model = this.draftModelMilliseconds;
        for (const [total] of this.targetEvaluations.values()) model += total;
        return model;
    }

    /**
     * Share of decode time (prompt excluded) spent outside the model: logit transfer, thread hops and
     * JS glue of each evaluation call, sampling, the policy, drafting logic, rollback and stop handling —
     * the overhead specgate adds on top of llama.cpp.
     */
    public get overheadShare(): number {
        const decode = this.time.total - this.time.prompt;
        return decode <= 0 ? 0 : Math.max(0, decode - this.modelMilliseconds) / decode;
    }

    /** Milliseconds of grammar work (time.grammar) per emitted token: what a constraint costs each token. */
    public get grammarMillisecondsPerToken(): number {
        return this.emittedTokens === 0 ? 0 : this.time.grammar / this.emittedTokens;
    }

    /** Mean ms of a target evaluation of k tokens, for each k seen. */
    public costCurve(): Record<number, number> {
        return Object.fromEntries(
            [...this.targetEvaluations].sort(([a], [b]) => a - b).map(([size, [total, count]]) => [size, total / count])
        );
    }

    public merge(other: GenerationTelemetry): void {
        this.drafts += other.drafts;
        this.steps += other.steps;
        this.draftTokens += other.draftTokens;
        this.acceptedTokens += other.acceptedTokens;
        this.emittedTokens += other.emittedTokens;
        this.promptTokens += other.promptTokens;
        this.cachedPromptTokens += other.cachedPromptTokens;
        this.grammarMasks += other.grammarMasks;
        other.acceptedPerPosition.forEach(
            (count, position) => (this.acceptedPerPosition[position] = (this.acceptedPerPosition[position] ?? 0) + count)
        );
        other.draftedPerPosition.forEach(
            (count, position) => (this.draftedPerPosition[position] = (this.draftedPerPosition[position] ?? 0) + count)
        );
        for (const key of Object.keys(this.time) as Array<keyof typeof this.time>) this.time[key] += other.time[key];
        this.backend.targetDecode += other.backend.targetDecode;
        this.backend.targetTransfer += other.backend.targetTransfer;
        this.backend.targetSampling += other.backend.targetSampling;
        this.backend.targetBatchWait += other.backend.targetBatchWait;
        this.backend.draftDecode += other.backend.draftDecode;
        this.backend.draftTransfer += other.backend.draftTransfer;
        this.backend.draftSampling += other.backend.draftSampling;
        this.backend.draftBatchWait += other.backend.draftBatchWait;
        this.backend.measured ||= other.backend.measured;
        this.deviceToHost.target += other.deviceToHost.target;
        this.deviceToHost.draft += other.deviceToHost.draft;
        this.deviceToHost.measured ||= other.deviceToHost.measured;
        this.rowsCopied ??= other.rowsCopied;
        for (const [size, [total, count]] of other.targetEvaluations) {
            const entry = this.targetEvaluations.get(size) ?? [0, 0];
            this.targetEvaluations.set(size, [entry[0] + total, entry[1] + count]);
        }
        this.draftEvaluations = [
            this.draftEvaluations[0] + other.draftEvaluations[0],
            this.draftEvaluations[1] + other.draftEvaluations[1]
        ];
        this.draftModelMilliseconds += other.draftModelMilliseconds;
        this.drafters.merge(other.drafters);
        this.draftLengths.merge(other.draftLengths);
    }

    public toJSON() {
        return {
            steps: this.steps,
            drafts: this.drafts,
            draftTokens: this.draftTokens,
            acceptedTokens: this.acceptedTokens,
            acceptedPerPosition: this.acceptedPerPosition,
            draftedPerPosition: this.draftedPerPosition,
            emittedTokens: this.emittedTokens,
            promptTokens: this.promptTokens,
            cachedPromptTokens: this.cachedPromptTokens,
            acceptanceRate: this.acceptanceRate,
            meanAcceptanceLength: this.meanAcceptanceLength,
            tokensPerSecond: this.tokensPerSecond,
            overheadShare: this.overheadShare,
            timeMilliseconds: this.time,
            grammarMasks: this.grammarMasks,
            modelMilliseconds: this.modelMilliseconds,
            backendMilliseconds: this.backend.measured
                ? {
                      targetDecode: this.backend.targetDecode,
                      targetTransfer: this.backend.targetTransfer,
                      targetSampling: this.backend.targetSampling,
                      targetBatchWait: this.backend.targetBatchWait,
                      draftDecode: this.backend.draftDecode,
                      draftTransfer: this.backend.draftTransfer,
                      draftSampling: this.backend.draftSampling,
                      draftBatchWait: this.backend.draftBatchWait
                  }
                : null,
            deviceToHostBytes: this.deviceToHost.measured
                ? {
                      target: this.deviceToHost.target,
                      draft: this.deviceToHost.draft,
                      total: this.deviceToHost.target + this.deviceToHost.draft,
                      perToken: this.deviceToHostBytesPerToken
                  }
                : null,
            rowsCopied: this.rowsCopied,
            targetCostCurveMilliseconds: this.costCurve(),
            draftTokenMilliseconds: this.draftEvaluations[1] === 0 ? null : this.draftEvaluations[0] / this.draftEvaluations[1],
            drafters: this.drafters.toJSON(),
            draftLengths: this.draftLengths.toJSON()
        };
    }
}
