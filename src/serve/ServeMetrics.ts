import type {BatchStatistics} from "../backend/ModelBackend.js";
import {collectDefaultMetrics, Counter, Gauge, Histogram, Registry} from "prom-client";
import type {GenerationTelemetry} from "../engine/GenerationTelemetry.js";
import type {GenerationSlots} from "./GenerationSlots.js";
import {drafterMetricLabel} from "./drafterMetricLabel.js";

/** "speculative" when a draft proposed tokens for the request, "target_only" otherwise (the canary's two arms). */
export type DecodeMode = "speculative" | "target_only";

export interface CompletedRequest {
    /** Who sent it (`key-<i>` for the i-th API key, or "server"): counted per tenant where tenant series are on. */
    readonly tenant: string;
    readonly mode: DecodeMode;
    readonly finishReason: string;
    readonly telemetry: GenerationTelemetry;
    /** As reported in the response's usage (stop strings can cut tokens the telemetry counted as emitted). */
    readonly promptTokens: number;
    readonly completionTokens: number;
    /** Seconds from arrival to the first generated token, to the last, and spent waiting for a slot. */
    readonly timeToFirstToken: number;
    readonly latency: number;
    readonly queueTime: number;
}

/**
 * `aborted`: the client left; `overloaded`: refused with 429 (queue full); `shutdown`: refused
 * or cut by a drain (503, or a stream ended early); `error`: anything else.
 */
export type FailureReason = "aborted" | "overloaded" | "shutdown" | "error";

/** What a generation that did not complete had decoded when it stopped. */
export interface CutGeneration {
    readonly tenant: string;
    readonly mode: DecodeMode;
    readonly promptTokens: number;
    readonly completionTokens: number;
}

const latencyBuckets = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160];
const tokenLatencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5];
const throughputBuckets = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];
/** Draft lengths (0: the step had no draft); --gamma allows up to 64. */
const draftLengthBuckets = [0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 64];

/**
 * The server's Prometheus registry (its own, so two apps in one process never share counters).
 * Spec-decode counters follow vLLM's (`vllm:spec_decode_*`) and are exposed with `_total`; acceptance rate
 * = accepted / draft tokens, mean acceptance length = 1 + accepted / drafts. They are added when a
 * request completes, from its telemetry, so they always agree with the responses' usage. A
 * generation cut short (client gone, drain, error) adds to `request_failure_total` and its tokens
 * to the token counters; a request refused before generation adds to `request_refused_total` by
 * HTTP status.
 *
 * Every label takes values from a set fixed by the server, never from what a request says: the
 * `drafter` label is the drafter's kind (drafterMetricLabel), not the spec a client sent. Per-tenant
 * series (`tenant` = `key-<i>`, the API key's position, never the key) exist only with
 * `tenantSeries`, which the server turns on when /metrics is kept to the operator's metrics key.
 */
export class ServeMetrics {
    public readonly registry = new Registry();
    private readonly drafts: Counter<"model_name">;
    private readonly draftTokens: Counter<"model_name">;
    private readonly acceptedTokens: Counter<"model_name">;
    private readonly acceptedPerPosition: Counter<"model_name" | "position">;
    private readonly draftedPerPosition: Counter<"model_name" | "position">;
    private readonly draftLength: Histogram<"model_name">;
    private readonly skippedSteps: Counter<"model_name">;
    private readonly probeSteps: Counter<"model_name">;
    private readonly drafterLookups: Counter<"model_name" | "drafter">;
    private readonly drafterProposals: Counter<"model_name" | "drafter">;
    private readonly drafterDraftTokens: Counter<"model_name" | "drafter">;
    private readonly drafterAcceptedTokens: Counter<"model_name" | "drafter">;
    private readonly drafterAcceptedPerPosition: Counter<"model_name" | "drafter" | "position">;
    private readonly drafterUnavailableSteps: Counter<"model_name" | "drafter">;
    private readonly promptTokens: Counter<"model_name" | "decode_mode">;
    private readonly prefixCacheQueries: Counter<"model_name">;
    private readonly prefixCacheHits: Counter<"model_name">;
    private readonly promptCacheHitRequests: Counter<"model_name">;
    private readonly generationTokens: Counter<"model_name" | "decode_mode">;
    private readonly successes: Counter<"model_name" | "decode_mode" | "finished_reason">;
    private readonly failures: Counter<"model_name" | "reason">;
    private readonly refusals: Counter<"model_name" | "status">;
    private readonly latency: Histogram<"model_name" | "decode_mode">;
    private readonly timeToFirstToken: Histogram<"model_name" | "decode_mode">;
    private readonly timePerOutputToken: Histogram<"model_name" | "decode_mode">;
    private readonly throughput: Histogram<"model_name" | "decode_mode">;
    private readonly queueTime: Histogram<"model_name" | "decode_mode">;
    private readonly tenantCounters: TenantCounters | undefined;

    /**
     * `suffixCacheNodes`: read at scrape time, the trie nodes the server's suffix caches hold (their
     * memory bound). `batchStatistics`: read at scrape time, each model's continuous-batching counters.
     */
    public constructor(
        private readonly modelName: string,
        slots: GenerationSlots,
        options: {
            processMetrics?: boolean;
            suffixCacheNodes?: () => number;
            promptCache?: () => {
                readonly bytes: number;
                readonly layerRowBytes: number;
                readonly count: number;
                readonly restores: number;
            };
            batchStatistics?: () => Record<"target" | "draft", BatchStatistics | undefined>;
            /** Also count requests and tokens per tenant (API key); only an operator should read them. */
            tenantSeries?: boolean;
        } = {}
    ) {
        const registers = [this.registry];
        const counter = <Label extends string>(name: string, help: string, labelNames: Label[]) =>
            new Counter<Label>({name, help, labelNames, registers});
        const histogram = (name: string, help: string, buckets: number[]) =>
            new Histogram<"model_name" | "decode_mode">({name, help, labelNames: ["model_name", "decode_mode"], buckets, registers});

        this.drafts = counter("spec_decode_num_drafts_total", "Speculative steps that proposed at least one draft token.", ["model_name"]);
        this.draftTokens = counter("spec_decode_num_draft_tokens_total", "Draft tokens proposed.", ["model_name"]);
        this.acceptedTokens = counter("spec_decode_num_accepted_tokens_total", "Draft tokens accepted by verification.", ["model_name"]);
        this.acceptedPerPosition = counter(
            "spec_decode_num_accepted_tokens_per_pos_total",
            "Draft tokens accepted at each draft position (0-based).",
            ["model_name", "position"]
        );
        this.draftedPerPosition = counter(
            "spec_decode_num_draft_tokens_per_pos_total",
            "Draft tokens proposed at each draft position (0-based): the denominator of acceptance per position when draft lengths vary.",
            ["model_name", "position"]
        );
        this.draftLength = new Histogram({
            name: "spec_decode_draft_length",
            help: "Draft length chosen for each decoding step of speculative requests (a tree's depth; 0: no draft).",
            labelNames: ["model_name"],
            buckets: draftLengthBuckets,
            registers
        });
        this.skippedSteps = counter(
            "spec_decode_num_skipped_steps_total",
            "Decoding steps on which --gamma auto drafted nothing because no draft was predicted to pay.",
            ["model_name"]
        );
        this.probeSteps = counter(
            "spec_decode_num_probe_steps_total",
            "Decoding steps --gamma auto ran at a draft length it did not choose (tries that time another length and keep acceptance measured).",
            ["model_name"]
        );
        // Per drafter (a chain's members apart): how often it was asked, proposed, and what was accepted.
        this.drafterLookups = counter("spec_decode_drafter_lookups_total", "Steps on which the drafter was asked for a proposal.", [
            "model_name",
            "drafter"
        ]);
        this.drafterProposals = counter("spec_decode_drafter_proposals_total", "Steps on which the drafter proposed at least one token.", [
            "model_name",
            "drafter"
        ]);
        this.drafterDraftTokens = counter("spec_decode_drafter_draft_tokens_total", "Draft tokens the drafter proposed.", [
            "model_name",
            "drafter"
        ]);
        this.drafterAcceptedTokens = counter(
            "spec_decode_drafter_accepted_tokens_total",
            "Draft tokens of the drafter accepted by verification.",
            ["model_name", "drafter"]
        );
        this.drafterAcceptedPerPosition = counter(
            "spec_decode_drafter_accepted_tokens_per_pos_total",
            "The drafter's tokens accepted at each draft position (0-based).",
            ["model_name", "drafter", "position"]
        );
        this.drafterUnavailableSteps = counter(
            "spec_decode_drafter_unavailable_steps_total",
            "Steps on which the drafter could not draft at all (an EAGLE-3 head without the target's layer rows for the history).",
            ["model_name", "drafter"]
        );
        this.promptTokens = counter("prompt_tokens_total", "Prompt tokens of requests that reached the engine (completed or cut short).", [
            "model_name",
            "decode_mode"
        ]);
        // vLLM's prefix-cache counters, in tokens: hits ÷ queries is the share of prompt tokens not decoded again.
        this.prefixCacheQueries = counter(
            "prefix_cache_queries_total",
            "Prompt tokens of completed requests, looked up in the prompt cache.",
            ["model_name"]
        );
        this.prefixCacheHits = counter("prefix_cache_hits_total", "Prompt tokens a cached sequence already held (not decoded again).", [
            "model_name"
        ]);
        this.promptCacheHitRequests = counter(
            "prompt_cache_hit_requests_total",
            "Completed requests that reused at least one cached prompt token.",
            ["model_name"]
        );
        this.generationTokens = counter("generation_tokens_total", "Generated tokens, those of requests cut short included.", [
            "model_name",
            "decode_mode"
        ]);
        this.successes = counter("request_success_total", "Completed requests by finish reason.", [
            "model_name",
            "decode_mode",
            "finished_reason"
        ]);
        this.failures = counter(
            "request_failure_total",
            "Requests that ended without completing, by reason (aborted, overloaded, shutdown, error).",
            ["model_name", "reason"]
        );
        this.refusals = counter(
            "request_refused_total",
            "Requests answered with an error status (400, 401, 403, 404, 413, 415, 429, 503, …), by status.",
            ["model_name", "status"]
        );
        this.latency = histogram("e2e_request_latency_seconds", "Arrival to last token, queueing included.", latencyBuckets);
        this.timeToFirstToken = histogram(
            "time_to_first_token_seconds",
            "Arrival to first generated token, queueing included.",
            latencyBuckets
        );
        this.timePerOutputToken = histogram(
            "time_per_output_token_seconds",
            "Mean time between generated tokens after the first, per request.",
            tokenLatencyBuckets
        );
        this.throughput = histogram(
            "request_generation_tokens_per_second",
            "Generated tokens per second of decoding, per request.",
            throughputBuckets
        );
        this.queueTime = histogram("request_queue_time_seconds", "Time a request waited for a generation slot.", latencyBuckets);
        if (options.tenantSeries === true) this.tenantCounters = tenantCounters(counter);

        new Gauge({
            name: "num_requests_running",
            help: "Requests decoding now.",
            labelNames: ["model_name"],
            registers,
            collect() {
                this.set({model_name: modelName}, slots.running);
            }
        });
        new Gauge({
            name: "num_requests_waiting",
            help: "Requests queued for a generation slot.",
            labelNames: ["model_name"],
            registers,
            collect() {
                this.set({model_name: modelName}, slots.waiting);
            }
        });
        const suffixCacheNodes = options.suffixCacheNodes;
        if (suffixCacheNodes != null)
            new Gauge({
                name: "spec_decode_suffix_cache_nodes",
                help: "Trie nodes held by the server's suffix caches (bounded by their MAX_NODES).",
                labelNames: ["model_name"],
                registers,
                collect() {
                    this.set({model_name: modelName}, suffixCacheNodes());
                }
            });
        const promptCache = options.promptCache;
        if (promptCache != null) {
            new Gauge({
                name: "prompt_cache_saved_bytes",
                help: "Host memory held by KV caches saved from slots given to other prompts (--cache-ram bounds it).",
                labelNames: ["model_name"],
                registers,
                collect() {
                    this.set({model_name: modelName}, promptCache().bytes);
                }
            });
            new Gauge({
                name: "prompt_cache_saved_layer_row_bytes",
                help: "Of prompt_cache_saved_bytes, the target's layer rows saved with the KV for an EAGLE-3 head (3 x hidden size x 4 bytes per token).",
                labelNames: ["model_name"],
                registers,
                collect() {
                    this.set({model_name: modelName}, promptCache().layerRowBytes);
                }
            });
            new Counter({
                name: "prompt_cache_restores_total",
                help: "Saved KV caches restored into a slot for a prompt sharing a prefix with them.",
                labelNames: ["model_name"],
                registers,
                collect() {
                    this.reset();
                    this.inc({model_name: modelName}, promptCache().restores);
                }
            });
        }
        const batchStatistics = options.batchStatistics;
        if (batchStatistics != null) {
            // Totals kept by the schedulers, copied at scrape time.
            const batchCounter = (name: string, help: string, value: (statistics: BatchStatistics) => number): void => {
                new Counter({
                    name,
                    help,
                    labelNames: ["model_name", "model"],
                    registers,
                    collect() {
                        this.reset();
                        for (const [model, statistics] of Object.entries(batchStatistics()))
                            if (statistics !== undefined) this.inc({model_name: modelName, model}, value(statistics));
                    }
                });
            };
            batchCounter(
                "batch_steps_total",
                "llama_decode calls of the shared context (continuous batching), by model (target, draft).",
                (statistics) => statistics.steps
            );
            batchCounter("batch_tokens_total", "Tokens decoded in shared steps.", (statistics) => statistics.tokens);
            batchCounter(
                "batch_evaluations_total",
                "Sequence evaluations (and prompt chunks) served by shared steps; ÷ steps = mean batch.",
                (statistics) => statistics.submissions
            );
            batchCounter(
                "batch_decode_seconds_total",
                "Time inside the shared steps' llama_decode.",
                (statistics) => statistics.decodeMilliseconds / 1000
            );
            batchCounter(
                "batch_gather_seconds_total",
                "Time with an evaluation pending and no step running, waiting for the other sequences to join.",
                (statistics) => statistics.gatherMilliseconds / 1000
            );
        }
        if (options.processMetrics === true) collectDefaultMetrics({register: this.registry});
    }

    /** Whether requests and tokens are also counted per tenant. */
    public get tenantSeries(): boolean {
        return this.tenantCounters !== undefined;
    }

    public recordCompletion(request: CompletedRequest): void {
        const model = {model_name: this.modelName};
        const labels = {model_name: this.modelName, decode_mode: request.mode};
        const telemetry = request.telemetry;
        if (request.mode === "speculative") {
            this.drafts.inc(model, telemetry.drafts);
            this.draftTokens.inc(model, telemetry.draftTokens);
            this.acceptedTokens.inc(model, telemetry.acceptedTokens);
            telemetry.acceptedPerPosition.forEach((count, position) =>
                this.acceptedPerPosition.inc({...model, position: String(position)}, count)
            );
            telemetry.draftedPerPosition.forEach((count, position) =>
                this.draftedPerPosition.inc({...model, position: String(position)}, count)
            );
            telemetry.draftLengths.counts.forEach((count, length) => {
                for (let step = 0; step < count; step++) this.draftLength.observe(model, length);
            });
            this.skippedSteps.inc(model, telemetry.draftLengths.skipped);
            this.probeSteps.inc(model, telemetry.draftLengths.probes);
            for (const [member, counters] of telemetry.drafters.byDrafter) {
                const labels = {...model, drafter: drafterMetricLabel(member)};
                this.drafterLookups.inc(labels, counters.lookups);
                this.drafterProposals.inc(labels, counters.proposals);
                this.drafterDraftTokens.inc(labels, counters.draftTokens);
                this.drafterAcceptedTokens.inc(labels, counters.acceptedTokens);
                counters.acceptedPerPosition.forEach((count, position) =>
                    this.drafterAcceptedPerPosition.inc({...labels, position: String(position)}, count)
                );
                const unavailable = telemetry.drafters.unavailable.get(member);
                if (unavailable !== undefined) this.drafterUnavailableSteps.inc(labels, unavailable.steps);
            }
        }
        const generated = request.completionTokens;
        this.promptTokens.inc(labels, request.promptTokens);
        this.prefixCacheQueries.inc(model, telemetry.promptTokens);
        this.prefixCacheHits.inc(model, telemetry.cachedPromptTokens);
        if (telemetry.cachedPromptTokens > 0) this.promptCacheHitRequests.inc(model);
        this.generationTokens.inc(labels, generated);
        this.successes.inc({...labels, finished_reason: request.finishReason});
        this.latency.observe(labels, request.latency);
        this.timeToFirstToken.observe(labels, request.timeToFirstToken);
        this.queueTime.observe(labels, request.queueTime);
        if (generated > 1) this.timePerOutputToken.observe(labels, (request.latency - request.timeToFirstToken) / (generated - 1));
        const decodeSeconds = (telemetry.time.total - telemetry.time.prompt) / 1000;
        if (generated > 0 && decodeSeconds > 0) this.throughput.observe(labels, generated / decodeSeconds);
        this.countForTenant(request.tenant, request.promptTokens, generated, true);
    }

    /** A request that did not complete, with what it had decoded if it reached the engine. */
    public recordFailure(reason: FailureReason, cut?: CutGeneration): void {
        this.failures.inc({model_name: this.modelName, reason});
        if (cut === undefined) return;
        const labels = {model_name: this.modelName, decode_mode: cut.mode};
        this.promptTokens.inc(labels, cut.promptTokens);
        this.generationTokens.inc(labels, cut.completionTokens);
        this.countForTenant(cut.tenant, cut.promptTokens, cut.completionTokens, false);
    }

    /** A reply with an error status (every one goes through the app's error handler). */
    public recordRefusal(status: number): void {
        this.refusals.inc({model_name: this.modelName, status: String(status)});
    }

    private countForTenant(tenant: string, promptTokens: number, generationTokens: number, completed: boolean): void {
        const counters = this.tenantCounters;
        if (counters === undefined) return;
        const labels = {model_name: this.modelName, tenant};
        if (completed) counters.successes.inc(labels);
        counters.promptTokens.inc(labels, promptTokens);
        counters.generationTokens.inc(labels, generationTokens);
    }

    public text(): Promise<string> {
        return this.registry.metrics();
    }

    public get contentType(): string {
        return this.registry.contentType;
    }
}

interface TenantCounters {
    readonly successes: Counter<"model_name" | "tenant">;
    readonly promptTokens: Counter<"model_name" | "tenant">;
    readonly generationTokens: Counter<"model_name" | "tenant">;
}

/** Per-tenant counterparts of request_success_total and the token counters. */
function tenantCounters(
    counter: <Label extends string>(name: string, help: string, labelNames: Label[]) => Counter<Label>
): TenantCounters {
    const labels: Array<"model_name" | "tenant"> = ["model_name", "tenant"];
    return {
        successes: counter("tenant_request_success_total", "Completed requests per tenant (API key key-<i>).", labels),
        promptTokens: counter("tenant_prompt_tokens_total", "Prompt tokens per tenant, requests cut short included.", labels),
        generationTokens: counter("tenant_generation_tokens_total", "Generated tokens per tenant, requests cut short included.", labels)
    };
}
