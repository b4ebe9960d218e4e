import type {NativeEagle3DrawOptions, NativeEagle3HeadHandle} from "../../backend/Eagle3HeadHandle.js";
import {InlineDecodeChooser} from "../../backend/InlineDecodeChooser.js";
import type {EvaluationSplit} from "../../backend/ModelBackend.js";
import type {NativeDecodeResult} from "../../backend/nativeAddon.js";
import type {GenerationTelemetry} from "../GenerationTelemetry.js";

/** The EAGLE-3 head's drafter label (telemetry, proposals). */
export const eagle3Label = "eagle3";

/**
 * An open EAGLE-3 head's calls, each timed into the generation's draft telemetry. Small calls (γ ids
 * after a verification's few tokens) run on the JS thread while they are cheap (InlineDecodeChooser).
 */
export class Eagle3HeadCalls {
    private readonly chooser: InlineDecodeChooser;
    /** Target tokens the head has caught up with: the next draft's largest batch is the rest (a prompt, or a verification's few). */
    private caughtUp = 0;

    public constructor(
        private readonly head: NativeEagle3HeadHandle,
        inlineBelowMilliseconds: number,
        private readonly telemetry: GenerationTelemetry
    ) {
        this.chooser = new InlineDecodeChooser(inlineBelowMilliseconds);
    }

    /** Logit rows' length: the head's vocabulary. */
    public get vocabularySize(): number {
        return this.head.vocabularySize;
    }

    /**
     * The head catches up with `history` (the target holds all of it but the pending last token) and
     * writes `count` greedy ids or the first draft position's row into `destination`; false when the
     * target's layers for that history were not captured (no draft this time, noted in the
     * telemetry's drafters as unavailable, with the reason).
     */
    public async draft(history: Int32Array, count: number, destination: Int32Array | Float64Array): Promise<boolean> {
        const head = this.head;
        const work = history.length - this.caughtUp;
        const result = await this.timed(
            (now) => (now ? head.draftNow(history, count, destination) : head.draft(history, count, destination)),
            count,
            work
        );
        return this.drafted(result, history);
    }

    /**
     * Catches up as draft does and draws uniforms.length sampled tokens in one call (NativeEagle3HeadHandle.drawDrafts);
     * false when the target's layers for that history were not captured.
     */
    public async drawDrafts(
        history: Int32Array,
        uniforms: Float64Array,
        options: NativeEagle3DrawOptions,
        destinations: {ids: Int32Array; probabilities: Float64Array; logits: Float64Array}
    ): Promise<boolean> {
        const {head} = this;
        const {ids, probabilities, logits} = destinations;
        const work = history.length - this.caughtUp;
        this.draws++;
        const result = await this.timed(
            (now) =>
                now
                    ? head.drawDraftsNow(history, uniforms, options, ids, probabilities, logits)
                    : head.drawDrafts(history, uniforms, options, ids, probabilities, logits),
            uniforms.length,
            work
        );
        return this.drafted(result, history);
    }

    /** drawDrafts calls made: a DrawnDraft reads the rows its own call kept (drawnAt), never a later call's. */
    private draws = 0;

    /** Whether drawDrafts can keep its rows in the head (NativeEagle3DrawOptions.keepRows) for drawnAt. */
    public get keepsRows(): boolean {
        return typeof this.head.drawnAt === "function";
    }

    /** The number of the last drawDrafts call, which drawnAt checks. */
    public get lastDraw(): number {
        return this.draws;
    }

    /**
     * Row `row` of drawDrafts call `draw` (made with keepRows) at `ids`, or whole without them: read from
     * the rows the head kept, which were copied out of its graph when it drew (no decode).
     */
    public drawnAt(draw: number, row: number, ids: readonly number[] | undefined, size: number): Float64Array {
        const {drawnAt} = this.head;
        if (drawnAt === undefined) throw new Error("this EAGLE-3 head does not keep its rows");
        if (draw !== this.draws) throw new Error(`the EAGLE-3 head drew again since draft ${draw}: its rows are gone`);
        const values = new Float64Array(ids?.length ?? size);
        drawnAt.call(this.head, row, ids === undefined ? null : Int32Array.from(ids), values);
        return values;
    }

    /** Whether the call drafted; when not (the target's rows are missing), the head catches up from 0 next time and the telemetry says why. */
    private drafted(result: NativeDecodeResult, history: Int32Array): boolean {
        const error = result.groups[0]?.error;
        this.caughtUp = error === undefined ? history.length - 1 : 0;
        if (error !== undefined) this.telemetry.drafters.noteUnavailable(eagle3Label, error);
        return error === undefined;
    }

    /** Feeds a drafted token; the following row (or id) goes into `destination`. */
    public async next(token: number, destination: Int32Array | Float64Array): Promise<void> {
        const head = this.head;
        await this.timed((now) => (now ? head.nextNow(token, destination) : head.next(token, destination)), 1, 1);
    }

    public dispose(): void {
        this.head.dispose();
    }

    private async timed(
        call: (now: boolean) => Promise<NativeDecodeResult> | NativeDecodeResult | null,
        tokens: number,
        work: number
    ): Promise<NativeDecodeResult> {
        const started = performance.now();
        const result = (this.chooser.inline(work) ? await call(true) : null) ?? (await call(false))!;
        this.chooser.record(work, result.decodeMilliseconds);
        const split: EvaluationSplit = {
            decodeMilliseconds: result.decodeMilliseconds,
            transferMilliseconds: result.transferMilliseconds,
            samplingMilliseconds: 0,
            deviceToHostBytes: result.deviceToHostBytes
        };
        this.telemetry.recordDraftEvaluation(performance.now() - started, tokens, split);
        return result;
    }
}
