import {randomUUID} from "node:crypto";
import {setImmediate as yieldToEventLoop} from "node:timers/promises";
import type {Context} from "hono";
import {streamSSE} from "hono/streaming";
import {type GenerationChunk, type GenerationResult, streamGeneration} from "../engine/generate.js";
import {drafterLabel} from "../engine/drafters/parseDrafterSpec.js";
import {policyLabel} from "../policies/parsePolicySpec.js";
import {ServerOverloadedError, ServerShuttingDownError} from "../errors.js";
import type {FailureReason} from "./ServeMetrics.js";
import {openAiError} from "./openAiError.js";
import type {PreparedGeneration} from "./prepareGeneration.js";
import {type OpenAiFinishReason, openAiFinishReason, type ResponseFormat} from "./ResponseFormat.js";
import type {ServeState} from "./ServeState.js";
import {finishWithToolCalls, openAiToolCalls, ToolCallStream} from "./toolCalls.js";

/**
 * Runs one prepared generation in a slot and answers it, whole or as server-sent events.
 *
 * Lifecycle: wait for a slot (429 when the queue is full) → start the engine and compute its first
 * step before any byte is sent, so a request the engine refuses still gets a proper status →
 * decode, yielding to the event loop after every step so concurrent requests take turns (a fake
 * backend that never awaits I/O would otherwise run one request to the end) → release the slot.
 * The client closing the connection, or a shutdown that runs out of time, aborts the engine, which
 * disposes its sequences; the slot is freed in every case. A generation cut by the shutdown is
 * answered 503 (Retry-After), or, once streaming, ends with finish_reason "abort", an error event
 * and [DONE].
 */
export async function serveGeneration(c: Context, state: ServeState, prepared: PreparedGeneration, format: ResponseFormat, arrival: number): Promise<Response> {
    const controller = new AbortController();
    // Abort with a DOMException whatever the source's reason (node-server aborts with a string).
    const abort = (): void => controller.abort(new DOMException("the client closed the connection or the server is stopping", "AbortError"));
    const sources = [c.req.raw.signal, state.shutdownSignal];
    for (const source of sources) {
        if (source.aborted) abort();
        else source.addEventListener("abort", abort, {once: true});
    }
    const detach = (): void => sources.forEach((source) => source.removeEventListener("abort", abort));
    // A drain that ran out of time, not a client that left: the client is still there to be told.
    const cutByShutdown = (): boolean => state.shutdownSignal.aborted && !c.req.raw.signal.aborted;

    let release: (() => void) | undefined;
    let generator: AsyncGenerator<GenerationChunk, GenerationResult> | undefined;
    const finish = async (): Promise<void> => {
        // return() runs the engine's finally (sequence disposal) if it stopped mid-way; a no-op otherwise.
        await generator?.return(undefined as never).catch(() => undefined);
        release?.();
        detach();
    };

    let handedToStream = false;
    let run: GenerationRun | undefined;
    try {
        release = await state.slots.acquire(controller.signal);
        const started = performance.now();
        const {path, tenant} = prepared;
        const calibrated = path.mode === "speculative" && path.policy.kind === "calibrated";
        // Read together, so the version a reply reports is the one its generation started from.
        const correctionMemory = calibrated ? state.tenants.correctionMemory(tenant) : undefined;
        const memoryState = correctionMemory !== undefined ? {learning: state.tenants.learnsFromRequests, version: correctionMemory.version} : undefined;
        const fingerprint = await state.fingerprints.for(path, memoryState);
        run = new GenerationRun(state, prepared, format, fingerprint, arrival, started, memoryState?.version);
        const drafter = path.mode === "speculative" ? state.tenants.drafters(tenant).get(path.drafter) : undefined;
        generator = streamGeneration(state.target, undefined, prepared.promptTokens,
            prepared.options, {signal: controller.signal, correctionMemory, drafter});
        let next = await generator.next();

        if (!prepared.stream) {
            while (!next.done) {
                run.observe(next.value);
                await yieldToEventLoop();
                next = await generator.next();
            }
            run.complete(next.value);
            return c.json(run.response(next.value));
        }

        handedToStream = true;
        const firstStep = next;
        const streamRun = run;
        return streamSSE(c, async (stream) => {
            const run = streamRun;
            stream.onAbort(abort);
            try {
                if (format.opensWithRole) await stream.writeSSE({data: JSON.stringify(run.chunk(format.chunkChoice("", null, true)))});
                const send = (text: string) => stream.writeSSE({data: JSON.stringify(run.chunk(format.chunkChoice(text, null, false), prepared.continuousUsage))});
                // With tools, text that may be a call is held back until the reply can be parsed.
                const calls = prepared.toolCalls !== undefined ? new ToolCallStream(prepared.toolCalls) : undefined;
                let step = firstStep;
                while (!step.done) {
                    const text = run.observe(step.value);
                    const ready = calls !== undefined ? calls.push(text) : text;
                    if (ready !== "") await send(ready);
                    await yieldToEventLoop();
                    step = await generator!.next();
                }
                const result = step.value;
                run.complete(result);
                let finishReason: OpenAiFinishReason = openAiFinishReason(result.finishReason);
                const held = calls?.finish();
                if (held !== undefined && held.text !== "") await send(held.text);
                if (held !== undefined && held.calls.length > 0 && format.toolCallsChunkChoice !== undefined) {
                    await stream.writeSSE({data: JSON.stringify(run.chunk(format.toolCallsChunkChoice(openAiToolCalls(held.calls)), prepared.continuousUsage))});
                    finishReason = finishWithToolCalls(finishReason);
                }
                await stream.writeSSE({data: JSON.stringify({
                    ...run.chunk(format.chunkChoice("", finishReason, false), prepared.continuousUsage),
                    speculative: run.speculativeSummary(result)
                })});
                if (prepared.includeUsage) await stream.writeSSE({data: JSON.stringify({...run.chunk(undefined), usage: run.usage(result)})});
                await stream.writeSSE({data: "[DONE]"});
            } catch (error) {
                if (cutByShutdown()) {
                    run.recordCut("shutdown");
                    // The choice ends with a finish_reason (vLLM's "abort"), then the reason as an error event.
                    await stream.writeSSE({data: JSON.stringify(run.chunk(format.chunkChoice("", "abort", false), prepared.continuousUsage))}).catch(() => undefined);
                    await stream.writeSSE({data: JSON.stringify(openAiError(new ServerShuttingDownError("the server is shutting down; the generation was stopped at the drain timeout")).body)}).catch(() => undefined);
                    await stream.writeSSE({data: "[DONE]"}).catch(() => undefined);
                } else if (controller.signal.aborted) run.recordCut("aborted");
                else {
                    run.recordCut("error");
                    // Headers are sent: the error travels as a last event, in the same format as any other.
                    await stream.writeSSE({data: JSON.stringify(openAiError(error).body)}).catch(() => undefined);
                    await stream.writeSSE({data: "[DONE]"}).catch(() => undefined);
                }
            } finally {
                await finish();
            }
        });
    } catch (error) {
        const record = (reason: FailureReason): void => run !== undefined ? run.recordCut(reason) : state.metrics.recordFailure(reason);
        if (cutByShutdown() || error instanceof ServerShuttingDownError) {
            record("shutdown");
            throw error instanceof ServerShuttingDownError ? error : new ServerShuttingDownError("the server is shutting down; the generation was stopped at the drain timeout");
        }
        if (controller.signal.aborted) {
            record("aborted");
            throw controller.signal.reason;
        }
        record(error instanceof ServerOverloadedError ? "overloaded" : "error");
        throw error;
    } finally {
        if (!handedToStream) await finish();
    }
}

/** The bookkeeping of one generation: ids, timings, the text so far, and the response bodies. */
class GenerationRun {
    private readonly id: string;
    private readonly created = Math.floor(Date.now() / 1000);
    private firstTokenAt: number | undefined;
    private completionTokens = 0;

    public constructor(
        private readonly state: ServeState,
        private readonly prepared: PreparedGeneration,
        private readonly format: ResponseFormat,
        private readonly fingerprint: string,
        private readonly arrival: number,
        private readonly started: number,
        /** The correction memory's version when a calibrated generation started (its reply reports it). */
        private readonly correctionMemoryVersion?: number
    ) {
        this.id = `${format.idPrefix}${randomUUID().replaceAll("-", "")}`;
    }

    /** A generation that ended without completing: counted as a failure, with the tokens it had generated. */
    public recordCut(reason: FailureReason): void {
        this.state.metrics.recordFailure(reason, {mode: this.prepared.path.mode, promptTokens: this.prepared.promptLength, completionTokens: this.completionTokens});
    }

    /** Records a step and returns its text. */
    public observe(chunk: GenerationChunk): string {
        if (chunk.tokens.length > 0) this.firstTokenAt ??= performance.now();
        this.completionTokens += chunk.tokens.length;
        return chunk.text;
    }

    public complete(result: GenerationResult): void {
        const end = performance.now();
        this.state.metrics.recordCompletion({
            mode: this.prepared.path.mode,
            finishReason: result.finishReason,
            telemetry: result.telemetry,
            promptTokens: result.promptTokens,
            completionTokens: result.tokens.length,
            timeToFirstToken: ((this.firstTokenAt ?? end) - this.arrival) / 1000,
            latency: (end - this.arrival) / 1000,
            queueTime: (this.started - this.arrival) / 1000
        });
    }

    public usage(result: GenerationResult): Record<string, number> {
        return {prompt_tokens: result.promptTokens, completion_tokens: result.tokens.length, total_tokens: result.promptTokens + result.tokens.length};
    }

    /** Per-request spec-decode counters (vLLM's names), so a canary can read acceptance per response. */
    public speculativeSummary(result: GenerationResult): Record<string, unknown> {
        const path = this.prepared.path;
        if (path.mode === "target_only") return {mode: "target_only"};
        const telemetry = result.telemetry;
        return {
            mode: "speculative",
            drafter: drafterLabel(path.drafter),
            policy: policyLabel(path.policy),
            gamma: path.gamma,
            num_drafts: telemetry.drafts,
            num_draft_tokens: telemetry.draftTokens,
            num_accepted_tokens: telemetry.acceptedTokens,
            acceptance_rate: telemetry.acceptanceRate,
            mean_acceptance_length: telemetry.meanAcceptanceLength,
            drafters: telemetry.drafters.toJSON(),
            // The memory changes with every online update, so its state is reported here rather than in system_fingerprint.
            ...(this.correctionMemoryVersion !== undefined ? {correction_memory: {learning: this.state.tenants.learnsFromRequests, version: this.correctionMemoryVersion}} : {})
        };
    }

    public response(result: GenerationResult): Record<string, unknown> {
        const finishReason = openAiFinishReason(result.finishReason);
        const reply = this.prepared.toolCalls?.parse(result.text);
        const choice = reply !== undefined && reply.calls.length > 0
            ? this.format.choice(reply.content, finishWithToolCalls(finishReason), openAiToolCalls(reply.calls))
            : this.format.choice(result.text, finishReason);
        return {
            id: this.id,
            object: this.format.object,
            created: this.created,
            model: this.state.modelName,
            system_fingerprint: this.fingerprint,
            choices: [choice],
            usage: this.usage(result),
            speculative: this.speculativeSummary(result)
        };
    }

    /** A stream chunk; `choice` undefined gives the usage chunk's empty choices. */
    public chunk(choice: Record<string, unknown> | undefined, withUsage = false): Record<string, unknown> {
        const promptTokens = this.prepared.promptLength;
        return {
            id: this.id,
            object: this.format.chunkObject,
            created: this.created,
            model: this.state.modelName,
            system_fingerprint: this.fingerprint,
            choices: choice === undefined ? [] : [choice],
            ...(withUsage ? {usage: {prompt_tokens: promptTokens, completion_tokens: this.completionTokens, total_tokens: promptTokens + this.completionTokens}} : {})
        };
    }
}
