import {randomUUID} from "node:crypto";
import {setImmediate as yieldToEventLoop} from "node:timers/promises";
import type {Context} from "hono";
import {type SSEStreamingApi, streamSSE} from "hono/streaming";
import {type GenerationChunk, type GenerationResult, streamGeneration} from "../engine/generate.js";
import {drafterLabel} from "../engine/drafters/parseDrafterSpec.js";
import {policyLabel} from "../policies/parsePolicySpec.js";
import {GrammarTooComplexError, ServerOverloadedError, ServerShuttingDownError} from "../errors.js";
import type {FailureReason} from "./ServeMetrics.js";
import {type OpenAiError, openAiError} from "./openAiError.js";
import {reportError} from "./reportError.js";
import type {PreparedGeneration} from "./prepareGeneration.js";
import {type OpenAiFinishReason, openAiFinishReason, type ResponseFormat} from "./ResponseFormat.js";
import type {ServeEnv, ServeState} from "./ServeState.js";
import {finishWithToolCalls, openAiToolCalls, ToolCallStream} from "../chat/toolCalls.js";
import {withBos} from "../backend/addsBos.js";
import type {PromptCacheLease} from "./PromptCache.js";
import type {TokenLogprob} from "../distributions/tokenLogprobs.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";
import {compileConstraint} from "../constraints/compileConstraint.js";
import {treeShapeLabel} from "../engine/drafters/TreeDraftSession.js";

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
export async function serveGeneration(
    c: Context<ServeEnv>,
    state: ServeState,
    prepared: PreparedGeneration,
    format: ResponseFormat,
    arrival: number
): Promise<Response> {
    const cancel = new GenerationCancel(c.req.raw.signal, state.shutdownSignal);
    let release: (() => void) | undefined;
    let started: StartedGeneration | undefined;
    // Cleared when the engine fails: its sequences may then hold tokens their KV does not.
    let intact = true;
    let constraint: TokenConstraint | undefined;
    // The constraint and the slot are freed even when handing the sequences back throws.
    const finish = async (): Promise<void> => {
        try {
            // return() runs the engine's finally if it stopped mid-way (after the call in flight, if any); a no-op otherwise.
            await started?.generator.return(undefined as never).catch(() => undefined);
            await started?.lease.release(intact);
        } finally {
            constraint?.dispose();
            release?.();
            cancel.detach();
        }
    };

    let handedToStream = false;
    try {
        // The grammar is compiled off the event loop, within its budget, before the request takes a slot
        // (none while draining); a client that leaves or a drain that runs out of time stops the wait at once.
        if (prepared.responseSchema !== undefined && !state.slots.accepting)
            throw new ServerShuttingDownError("the server is shutting down");
        constraint =
            prepared.responseSchema !== undefined
                ? await compileConstraint(state.target, prepared.responseSchema, state.grammarBudget, {signal: cancel.signal})
                : undefined;
        release = await state.slots.acquire(cancel.signal);
        started = await startGeneration(state, prepared, format, arrival, cancel.signal, constraint);
        const first = await started.generator.next();
        if (!prepared.stream) return c.json(await decodeWhole(started, first));
        handedToStream = true;
        const {run, generator} = started;
        return streamSSE(c, async (stream) => {
            stream.onAbort(() => cancel.abort());
            try {
                await streamReply(stream, run, generator, first, prepared, format);
            } catch (error) {
                intact = cancel.signal.aborted;
                logGrammarRefusal(error, c.get("requestId"), state);
                await endCutStream(stream, run, error, cancel, prepared, format, (cut) =>
                    reportError(cut, c.get("requestId"), state.logError)
                );
            } finally {
                await finish();
            }
        });
    } catch (error) {
        const record = (reason: FailureReason): void =>
            started !== undefined ? started.run.recordCut(reason) : state.metrics.recordFailure(reason);
        if (cancel.cutByShutdown || error instanceof ServerShuttingDownError) {
            record("shutdown");
            throw error instanceof ServerShuttingDownError ? error : drainTimeoutError();
        }
        if (cancel.signal.aborted) {
            record("aborted");
            throw cancel.signal.reason;
        }
        logGrammarRefusal(error, c.get("requestId"), state);
        record(error instanceof ServerOverloadedError ? "overloaded" : "error");
        intact = false;
        throw error;
    } finally {
        if (!handedToStream) await finish();
    }
}

/** What a structured-output request's grammar cost (response_format): masked rows, and milliseconds in all and per token. */
function grammarSummary(result: GenerationResult): Record<string, number> {
    const telemetry = result.telemetry;
    return {masks: telemetry.grammarMasks, time_ms: telemetry.time.grammar, time_ms_per_token: telemetry.grammarMillisecondsPerToken};
}

/** A grammar over its limits or budget is the client's doing, but logged with the request's id: the operator sees who sends them. */
function logGrammarRefusal(error: unknown, requestId: string, state: ServeState): void {
    if (error instanceof GrammarTooComplexError)
        state.logError(`specgate serve: request ${requestId} refused: ${error.field ?? "response_format"}: ${error.message}`);
}

/** Aborts a generation when its client leaves or a drain runs out of time; says which it was. */
class GenerationCancel {
    private readonly controller = new AbortController();
    private readonly sources: readonly AbortSignal[];
    private readonly onAbort = (): void => this.abort();

    public constructor(
        private readonly client: AbortSignal,
        private readonly shutdown: AbortSignal
    ) {
        this.sources = [client, shutdown];
        for (const source of this.sources) {
            if (source.aborted) this.abort();
            else source.addEventListener("abort", this.onAbort, {once: true});
        }
    }

    public get signal(): AbortSignal {
        return this.controller.signal;
    }

    /** A drain that ran out of time, not a client that left: the client is still there to be told. */
    public get cutByShutdown(): boolean {
        return this.shutdown.aborted && !this.client.aborted;
    }

    public abort(): void {
        // A DOMException whatever the source's reason (node-server aborts with a string).
        this.controller.abort(new DOMException("the client closed the connection or the server is stopping", "AbortError"));
    }

    public detach(): void {
        for (const source of this.sources) source.removeEventListener("abort", this.onAbort);
    }
}

interface StartedGeneration {
    readonly run: GenerationRun;
    readonly generator: AsyncGenerator<GenerationChunk, GenerationResult>;
    /** The cached sequences it runs on, handed back when it ends. */
    readonly lease: PromptCacheLease;
}

/** The engine on this request's decode path, with its tenant's drafter and correction memory. */
async function startGeneration(
    state: ServeState,
    prepared: PreparedGeneration,
    format: ResponseFormat,
    arrival: number,
    signal: AbortSignal,
    constraint: TokenConstraint | undefined
): Promise<StartedGeneration> {
    const started = performance.now();
    const {path, tenant} = prepared;
    const calibrated = path.mode === "speculative" && path.policy.kind === "calibrated";
    // Read together, so the version a reply reports is the one its generation started from.
    const correctionMemory = calibrated ? state.tenants.correctionMemory(tenant) : undefined;
    const memoryState =
        correctionMemory !== undefined ? {learning: state.tenants.learnsFromRequests, version: correctionMemory.version} : undefined;
    const fingerprint = await state.fingerprints.for(path, memoryState);
    const run = new GenerationRun(state, prepared, format, fingerprint, arrival, started, memoryState?.version);
    const drafter = path.mode === "speculative" ? state.tenants.drafters(tenant).get(path.drafter) : undefined;
    const lease = await state.promptCache.lease(
        tenant,
        withBos(state.target, prepared.promptTokens),
        prepared.cachePrompt,
        drafter?.members.includes("model") === true
    );
    const generator = streamGeneration(state.target, undefined, prepared.promptTokens, prepared.options, {
        signal,
        correctionMemory,
        drafter,
        sequence: lease.target,
        draftSequence: lease.draft,
        constraint,
        speculationLoad: state.speculationLoad,
        speculationPriorKey: tenant
    });
    return {run, generator, lease};
}

type Step = IteratorResult<GenerationChunk, GenerationResult>;

async function decodeWhole({run, generator}: StartedGeneration, first: Step): Promise<Record<string, unknown>> {
    let step = first;
    while (!step.done) {
        run.observe(step.value);
        await yieldToEventLoop();
        step = await generator.next();
    }
    run.complete(step.value);
    return run.response(step.value);
}

/** The events of a stream that runs to its end: role, text as it comes, tool calls, finish, usage, [DONE]. */
async function streamReply(
    stream: SSEStreamingApi,
    run: GenerationRun,
    generator: AsyncGenerator<GenerationChunk, GenerationResult>,
    first: Step,
    prepared: PreparedGeneration,
    format: ResponseFormat
): Promise<void> {
    if (format.opensWithRole) await stream.writeSSE({data: JSON.stringify(run.chunk(format.chunkChoice("", null, true)))});
    const send = (text: string, logprobs?: unknown) =>
        stream.writeSSE({data: JSON.stringify(run.chunk(format.chunkChoice(text, null, false, logprobs), prepared.continuousUsage))});
    // With tools, text that may be a call is held back until the reply can be parsed.
    const calls = prepared.toolCalls !== undefined ? new ToolCallStream(prepared.toolCalls) : undefined;
    let step = first;
    while (!step.done) {
        const text = run.observe(step.value);
        const ready = calls !== undefined ? calls.push(text) : text;
        const logprobs = run.chunkLogprobs(step.value);
        if (ready !== "" || logprobs !== undefined) await send(ready, logprobs);
        await yieldToEventLoop();
        step = await generator.next();
    }
    const result = step.value;
    run.complete(result);
    let finishReason: OpenAiFinishReason = openAiFinishReason(result.finishReason);
    const held = calls?.finish();
    if (held !== undefined && held.text !== "") await send(held.text);
    if (held !== undefined && held.calls.length > 0 && format.toolCallsChunkChoice !== undefined) {
        await stream.writeSSE({
            data: JSON.stringify(run.chunk(format.toolCallsChunkChoice(openAiToolCalls(held.calls)), prepared.continuousUsage))
        });
        finishReason = finishWithToolCalls(finishReason);
    }
    await stream.writeSSE({
        data: JSON.stringify({
            ...run.chunk(format.chunkChoice("", finishReason, false), prepared.continuousUsage),
            speculative: run.speculativeSummary(result)
        })
    });
    if (prepared.includeUsage) await stream.writeSSE({data: JSON.stringify({...run.chunk(undefined), usage: run.usage(result)})});
    await stream.writeSSE({data: "[DONE]"});
}

/**
 * A stream whose generation stopped early. Headers are sent, so the reason travels as last events:
 * a drain's cut ends the choice with finish_reason "abort" (vLLM's) and an error event; an error
 * becomes an error event; a client that left is only counted.
 */
async function endCutStream(
    stream: SSEStreamingApi,
    run: GenerationRun,
    error: unknown,
    cancel: GenerationCancel,
    prepared: PreparedGeneration,
    format: ResponseFormat,
    report: (error: unknown) => OpenAiError
): Promise<void> {
    const write = (data: string): Promise<void> => stream.writeSSE({data}).catch(() => undefined);
    if (cancel.cutByShutdown) {
        run.recordCut("shutdown");
        await write(JSON.stringify(run.chunk(format.chunkChoice("", "abort", false), prepared.continuousUsage)));
        await write(JSON.stringify(openAiError(drainTimeoutError()).body));
        await write("[DONE]");
    } else if (cancel.signal.aborted) {
        run.recordCut("aborted");
    } else {
        run.recordCut("error");
        await write(JSON.stringify(report(error).body));
        await write("[DONE]");
    }
}

function drainTimeoutError(): ServerShuttingDownError {
    return new ServerShuttingDownError("the server is shutting down; the generation was stopped at the drain timeout");
}

/** The bookkeeping of one generation: ids, timings, the text so far, and the response bodies. */
class GenerationRun {
    private readonly id: string;
    private readonly created = Math.floor(Date.now() / 1000);
    private firstTokenAt: number | undefined;
    private completionTokens = 0;
    /** Every emitted token's log-probability, when the request asked for them. */
    private readonly logprobEntries: TokenLogprob[] = [];
    /** Characters of the reply covered by the logprobs sent so far (a stream's text_offset). */
    private logprobOffset = 0;

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
        this.state.metrics.recordFailure(reason, {
            tenant: this.prepared.tenant,
            mode: this.prepared.path.mode,
            promptTokens: this.prepared.promptLength,
            completionTokens: this.completionTokens
        });
    }

    /** Records a step and returns its text. */
    public observe(chunk: GenerationChunk): string {
        if (chunk.tokens.length > 0) this.firstTokenAt ??= performance.now();
        this.completionTokens += chunk.tokens.length;
        if (chunk.logprobs !== undefined) this.logprobEntries.push(...chunk.logprobs);
        return chunk.text;
    }

    /** The `logprobs` of a stream chunk carrying this step's tokens; undefined when none were asked for or emitted. */
    public chunkLogprobs(chunk: GenerationChunk): unknown {
        if (chunk.logprobs === undefined || chunk.logprobs.length === 0) return undefined;
        const logprobs = this.format.logprobs(chunk.logprobs, this.tokenText, this.logprobOffset);
        for (const entry of chunk.logprobs) this.logprobOffset += this.tokenText(entry.token).length;
        return logprobs;
    }

    private readonly tokenText = (token: number): string => this.state.target.detokenize([token]);

    public complete(result: GenerationResult): void {
        const end = performance.now();
        this.state.metrics.recordCompletion({
            tenant: this.prepared.tenant,
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

    /** OpenAI's usage; prompt_tokens_details.cached_tokens: prompt tokens a cached sequence already held. */
    public usage(result: GenerationResult): Record<string, unknown> {
        return {
            prompt_tokens: result.promptTokens,
            completion_tokens: result.tokens.length,
            total_tokens: result.promptTokens + result.tokens.length,
            prompt_tokens_details: {cached_tokens: result.telemetry.cachedPromptTokens}
        };
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
            ...(path.tree !== undefined
                ? {tree: treeShapeLabel(path.tree)}
                : {gamma: path.draftLength === "auto" ? `auto:${path.maxGamma ?? 2 * path.gamma}` : path.gamma}),
            draft_length: path.draftLength,
            num_drafts: telemetry.drafts,
            num_draft_tokens: telemetry.draftTokens,
            num_accepted_tokens: telemetry.acceptedTokens,
            acceptance_rate: telemetry.acceptanceRate,
            mean_acceptance_length: telemetry.meanAcceptanceLength,
            // Per draft position (0-based): drafted and accepted, so acceptance per position is their ratio.
            num_draft_tokens_per_pos: telemetry.draftedPerPosition,
            num_accepted_tokens_per_pos: telemetry.acceptedPerPosition,
            // Steps by the draft length chosen for them (a tree's depth), and those that skipped speculation.
            draft_lengths: telemetry.draftLengths.counts,
            mean_draft_length: telemetry.draftLengths.mean,
            num_skipped_steps: telemetry.draftLengths.skipped,
            num_probe_steps: telemetry.draftLengths.probes,
            drafters: telemetry.drafters.toJSON(),
            // The memory changes with every online update, so its state is reported here rather than in system_fingerprint.
            ...(this.correctionMemoryVersion !== undefined
                ? {correction_memory: {learning: this.state.tenants.learnsFromRequests, version: this.correctionMemoryVersion}}
                : {})
        };
    }

    public response(result: GenerationResult): Record<string, unknown> {
        const finishReason = openAiFinishReason(result.finishReason);
        const reply = this.prepared.toolCalls?.parse(result.text);
        const choice =
            reply !== undefined && reply.calls.length > 0
                ? this.format.choice(reply.content, finishWithToolCalls(finishReason), openAiToolCalls(reply.calls))
                : this.format.choice(
                      result.text,
                      finishReason,
                      undefined,
                      this.prepared.options.logprobs !== undefined
                          ? this.format.logprobs(this.logprobEntries, this.tokenText, 0)
                          : undefined
                  );
        return {
            id: this.id,
            object: this.format.object,
            created: this.created,
            model: this.state.modelName,
            system_fingerprint: this.fingerprint,
            choices: [choice],
            usage: this.usage(result),
            speculative: this.speculativeSummary(result),
            ...(this.prepared.responseSchema !== undefined ? {grammar: grammarSummary(result)} : {})
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
            ...(withUsage
                ? {
                      usage: {
                          prompt_tokens: promptTokens,
                          completion_tokens: this.completionTokens,
                          total_tokens: promptTokens + this.completionTokens
                      }
                  }
                : {})
        };
    }
}
