import {randomUUID} from "node:crypto";
import {SpeculationLoad} from "../engine/SpeculationLoad.js";
import {defaultGrammarBudget, type GrammarBudget} from "../constraints/GrammarBudget.js";
import {setMaxListeners} from "node:events";
import {type ErrorHandler, Hono} from "hono";
import {cors} from "hono/cors";
import {Eagle3HeadBackend} from "../backend/Eagle3HeadBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {defaultSamplingOptions} from "../distributions/SamplingOptions.js";
import {PayloadTooLargeError, RouteNotFoundError, ServerShuttingDownError} from "../errors.js";
import type {CorrectionMemory} from "../policies/CorrectionMemory.js";
import type {PolicyKind} from "../policies/policyConfigSchema.js";
import type {SingleDrafterSpec} from "../engine/drafters/parseDrafterSpec.js";
import {ApiKeys, checkJsonContentType, type HostAllowList, MetricsKey} from "./accessControl.js";
import {chatCompletionRequestSchema} from "./chatCompletionRequestSchema.js";
import {type ChatTemplate, chatRequestTexts, defaultChatTemplate} from "../chat/ChatTemplate.js";
import {completionRequestSchema} from "./completionRequestSchema.js";
import {RequestPermissions} from "./RequestPermissions.js";
import {TenantResources, serverTenant} from "./TenantResources.js";
import {GenerationSlots} from "./GenerationSlots.js";
import {PromptCache} from "./PromptCache.js";
import {reportError} from "./reportError.js";
import {parseRequestBody} from "./parseRequestBody.js";
import {readRequestBody} from "./readRequestBody.js";
import {
    checkPromptText,
    completionPromptTokens,
    defaultMaxPromptBytesPerToken,
    prepareGeneration,
    promptByteLimit
} from "./prepareGeneration.js";
import {pairServeDraft, type SpeculativeDefaults} from "./resolveDecodePath.js";
import {chatFormat, completionFormat} from "./ResponseFormat.js";
import {serveGeneration} from "./serveGeneration.js";
import {ServeMetrics} from "./ServeMetrics.js";
import {defaultCacheRamBytes, fullContextStateBytes} from "./defaultCacheRam.js";
import type {ServeEnv, ServeState} from "./ServeState.js";
import {type SamplerDefaults, SystemFingerprints} from "./systemFingerprint.js";
import {drafterLabel} from "../engine/drafters/parseDrafterSpec.js";

export interface ServeAppOptions {
    readonly target: ModelBackend;
    /** Without a draft every request decodes target-only. */
    readonly draft?: ModelBackend;
    /** The id clients send as `model` and /v1/models lists. */
    readonly modelName: string;
    /** The GGUF files, hashed into `system_fingerprint` (in-memory backends use their vocabulary identity). */
    readonly modelFiles?: {readonly target: string; readonly draft?: string};
    readonly speculative?: Partial<SpeculativeDefaults>;
    readonly samplerDefaults?: Partial<SamplerDefaults>;
    /** Default: the plain-text template of defaultChatTemplate. */
    readonly chatTemplate?: ChatTemplate;
    /** Generations decoded at once. Default 4. */
    readonly maxConcurrency?: number;
    /**
     * Host memory for KV caches saved from slots given to other prompts, restored when a prompt shares
     * a prefix with one (llama-server's --cache-ram); 0 keeps none. Default: the least of 8 GiB, an
     * eighth of the machine's memory and 64 of the target's full-context KV states (defaultCacheRamBytes).
     */
    readonly promptCacheBytes?: number;
    /** Requests waiting for a slot before new ones get 429. Default 64. */
    readonly maxQueue?: number;
    /** Largest accepted request body in bytes. Default 1 MiB. */
    readonly maxBodyBytes?: number;
    /**
     * Prompt text is refused, untokenized, beyond context size × this many bytes per token (or the
     * vocabulary's longest token, if shorter). Default 16.
     */
    readonly maxPromptBytesPerToken?: number;
    /** Also export Node process metrics (RSS, event-loop lag, GC) on /metrics. Default false. */
    readonly processMetrics?: boolean;
    /** Bearer tokens accepted on every route but /health; none (the default) leaves the server open. */
    readonly apiKeys?: readonly string[];
    /**
     * The operator's key for /metrics (Prometheus' bearer token). When set, /metrics answers only this
     * key (no API key reads it) and adds per-tenant series; without it /metrics holds no per-tenant
     * series and answers like every other route.
     */
    readonly metricsApiKey?: string;
    /** Host header values answered (see HostAllowList); default: any (startServeServer narrows it on loopback). */
    readonly allowedHosts?: HostAllowList;
    /** Origins allowed to call the API from a browser (CORS); default none, so no CORS headers are sent. */
    readonly corsOrigins?: readonly string[];
    /** Policy kinds a request may name (default: the lossless ones, defaultRequestPolicies); the server's own policy is always allowed. */
    readonly requestPolicies?: readonly PolicyKind[];
    /** Drafter kinds a request may name (default: every kind); the server's own drafter is always allowed. */
    readonly requestDrafters?: ReadonlyArray<SingleDrafterSpec["kind"]>;
    /** One drafter cache for all API keys instead of one per key (lets one key's outputs show in another's drafts). */
    readonly shareDrafterCache?: boolean;
    /** Calibrated requests update a correction memory kept per API key; otherwise their updates last one request. */
    readonly learnFromRequests?: boolean;
    /** Where every key's correction memory starts (default: empty). */
    readonly correctionMemory?: CorrectionMemory;
    /** What one structured-output request may spend on its grammar (default defaultGrammarBudget). */
    readonly grammarBudget?: Partial<GrammarBudget>;
    /** Where unexpected errors (500s) are reported, with their stack and request id. Default: stderr. */
    readonly logError?: (message: string) => void;
}

export interface ServeApp {
    readonly app: Hono<ServeEnv>;
    readonly state: ServeState;
    /**
     * Graceful shutdown: new and queued requests get 503, running ones finish; after `timeoutMs`
     * (default: no limit) the remaining generations are stopped (503, or a stream's last events say
     * so). Settles when none is left.
     */
    shutdown(timeoutMs?: number): Promise<void>;
}

/**
 * The OpenAI-compatible HTTP app (Hono, runtime-agnostic: tests call `app.request` in-process;
 * startServeServer puts it on a port). Routes: POST /v1/completions, POST /v1/chat/completions,
 * GET /v1/models, GET /health, GET /metrics. Every exception becomes a response in `onError`,
 * through openAiError, and nowhere else.
 */
export function createServeApp(options: ServeAppOptions): ServeApp {
    const shutdownController = new AbortController();
    // Every running request listens to it; the default cap of 10 listeners would warn under load.
    setMaxListeners(0, shutdownController.signal);
    const state = createServeState(options, shutdownController.signal);
    const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
    const completionSchema = completionRequestSchema(options.target.contextSize, options.target.vocabularySize);

    const app = new Hono<ServeEnv>();
    app.onError(errorResponder(state));
    installAccessControl(app, state, options);
    installInfoRoutes(app, state);

    app.post("/v1/completions", async (c) => {
        const arrival = performance.now();
        checkJsonContentType(c.req.header("content-type"));
        const request = parseRequestBody(await readRequestBody(c.req.raw, maxBodyBytes), completionSchema);
        const prepared = prepareGeneration(state, request, completionPromptTokens(state, request.prompt), "prompt", c.get("tenant"));
        return serveGeneration(c, state, prepared, completionFormat, arrival);
    });
    app.post("/v1/chat/completions", async (c) => {
        const arrival = performance.now();
        checkJsonContentType(c.req.header("content-type"));
        const request = parseRequestBody(await readRequestBody(c.req.raw, maxBodyBytes), chatCompletionRequestSchema);
        checkPromptText(state, chatRequestTexts(request), "messages");
        const prepared = prepareGeneration(
            state,
            request,
            state.chatTemplate.render(request.messages, request.tools),
            "messages",
            c.get("tenant")
        );
        const toolCalls = (request.tools?.length ?? 0) > 0 && request.tool_choice !== "none" ? state.chatTemplate.toolCalls : undefined;
        return serveGeneration(c, state, toolCalls !== undefined ? {...prepared, toolCalls} : prepared, chatFormat, arrival);
    });

    // Unknown routes go through onError too, so every error body has the same OpenAI shape.
    app.all("*", (c) => {
        throw new RouteNotFoundError(`no route for ${c.req.method} ${c.req.path}`);
    });

    return {
        app,
        state,
        async shutdown(timeoutMs?: number) {
            state.slots.close();
            const idle = state.slots.idle();
            if (timeoutMs === undefined) return idle;
            const timer = setTimeout(() => shutdownController.abort(), timeoutMs);
            try {
                await idle;
            } finally {
                clearTimeout(timer);
            }
        }
    };
}

/** What every handler shares: models, defaults, slots, metrics, fingerprints and the per-tenant state. */
function createServeState(options: ServeAppOptions, shutdownSignal: AbortSignal): ServeState {
    const slots = new GenerationSlots(options.maxConcurrency ?? 4, options.maxQueue ?? 64);
    const promptCache = new PromptCache(options.target, options.draft, slots.maxConcurrency, {
        savedStateBytes:
            options.promptCacheBytes ??
            defaultCacheRamBytes(
                options.modelFiles === undefined
                    ? undefined
                    : fullContextStateBytes(
                          options.modelFiles.target,
                          options.target.contextSize,
                          options.draft instanceof Eagle3HeadBackend
                      )
            )
    });
    const samplerDefaults: SamplerDefaults = {...defaultSamplingOptions, ...options.samplerDefaults};
    const chatTemplate = options.chatTemplate ?? defaultChatTemplate(options.target);
    const tenants = new TenantResources(options.draft, options.target.vocabularySize, options.target.vocabularyIdentity(), {
        shareDrafterCache: options.shareDrafterCache,
        learnFromRequests: options.learnFromRequests,
        baseMemory: options.correctionMemory
    });
    const speculativeDefaults: SpeculativeDefaults = {
        ...(options.draft !== undefined ? {drafter: {kind: "model"}} : {}),
        policy: {kind: "strict"},
        gamma: 4,
        draftSampling: "sample",
        draftLength: "fixed",
        minConfidence: 0,
        ...options.speculative
    };
    return {
        modelName: options.modelName,
        target: options.target,
        draft: options.draft,
        draftPairing: pairServeDraft(options.target, options.draft, speculativeDefaults.drafter),
        speculativeDefaults,
        permissions: new RequestPermissions(options.requestPolicies, options.requestDrafters),
        tenants,
        speculationLoad: new SpeculationLoad(),
        samplerDefaults,
        chatTemplate,
        slots,
        promptCache,
        metrics: new ServeMetrics(options.modelName, slots, {
            processMetrics: options.processMetrics,
            suffixCacheNodes: () => tenants.suffixCacheNodes,
            promptCache: () => ({...promptCache.saved, restores: promptCache.restores}),
            batchStatistics: () => ({target: options.target.batchStatistics, draft: options.draft?.batchStatistics}),
            tenantSeries: options.metricsApiKey !== undefined
        }),
        fingerprints: new SystemFingerprints({
            target: options.target,
            draft: options.draft,
            files: options.modelFiles,
            samplerDefaults,
            chatTemplate: chatTemplate.name
        }),
        promptByteLimit: promptByteLimit(options.target, options.maxPromptBytesPerToken ?? defaultMaxPromptBytesPerToken),
        shutdownSignal,
        created: Math.floor(Date.now() / 1000),
        grammarBudget: {...defaultGrammarBudget, ...options.grammarBudget},
        logError: options.logError ?? ((message) => console.error(message))
    };
}

/**
 * The one place exceptions become responses (OpenAI's error body, through openAiError). The first
 * middleware gives every reply, this one's too, its X-Request-Id; an unexpected error (500) is logged with its stack
 * and that id, which its message repeats, so a client's report finds the log line. Requests
 * refused before generation are counted by status.
 */
function errorResponder(state: ServeState): ErrorHandler<ServeEnv> {
    return (error, c) => {
        const mapped = reportError(error, c.get("requestId"), state.logError);
        const body = mapped.body;
        state.metrics.recordRefusal(mapped.status);
        const headers: Record<string, string> = {"Content-Type": "application/json"};
        if (mapped.retryAfter !== undefined) headers["Retry-After"] = String(mapped.retryAfter);
        // The body of a 413 may not have been read to its end: the connection is not reused.
        if (error instanceof PayloadTooLargeError) headers.Connection = "close";
        return new Response(JSON.stringify(body), {status: mapped.status, headers});
    };
}

function newRequestId(): string {
    return `req_${randomUUID().replaceAll("-", "")}`;
}

/**
 * A request id first (every reply has one), then a foreign Host header is refused on every route,
 * then CORS (when configured) answers preflights, then every route but /health needs an API key when
 * the server has some; the key names the request's tenant. With a metrics key, /metrics needs that
 * key instead, and no API key reads it. While draining only /metrics answers
 * normally; /health reports 503 so load balancers stop sending.
 */
function installAccessControl(app: Hono<ServeEnv>, state: ServeState, options: ServeAppOptions): void {
    app.use("*", async (c, next) => {
        const requestId = newRequestId();
        c.set("requestId", requestId);
        await next();
        c.res.headers.set("X-Request-Id", requestId);
    });
    const allowedHosts = options.allowedHosts;
    if (allowedHosts !== undefined)
        app.use("*", async (c, next) => {
            allowedHosts.check(c.req.header("host"));
            await next();
        });
    const corsOrigins = options.corsOrigins ?? [];
    if (corsOrigins.length > 0)
        app.use(
            "*",
            cors({
                origin: [...corsOrigins],
                allowMethods: ["GET", "POST", "OPTIONS"],
                allowHeaders: ["Authorization", "Content-Type"],
                exposeHeaders: ["X-Request-Id"],
                maxAge: 600
            })
        );
    const apiKeys = new ApiKeys(options.apiKeys ?? []);
    const metricsKey = options.metricsApiKey !== undefined ? new MetricsKey(options.metricsApiKey) : undefined;
    app.use("*", async (c, next) => {
        const authorization = c.req.header("authorization");
        if (c.req.path === "/health") c.set("tenant", serverTenant);
        else if (c.req.path === "/metrics" && metricsKey !== undefined) c.set("tenant", metricsKey.check(authorization));
        else c.set("tenant", apiKeys.check(authorization));
        await next();
    });
    app.use("*", async (c, next) => {
        if (!state.slots.accepting && c.req.path !== "/metrics") throw new ServerShuttingDownError("the server is shutting down");
        await next();
    });
}

function installInfoRoutes(app: Hono<ServeEnv>, state: ServeState): void {
    app.get("/health", (c) => c.json({status: "ok", running: state.slots.running, waiting: state.slots.waiting}));
    app.get("/metrics", async (c) => c.body(await state.metrics.text(), 200, {"Content-Type": state.metrics.contentType}));
    app.get("/v1/models", (c) =>
        c.json({
            object: "list",
            data: [
                {
                    id: state.modelName,
                    object: "model",
                    created: state.created,
                    owned_by: "specgate",
                    max_model_len: state.target.contextSize,
                    speculative: state.speculativeDefaults.drafter !== undefined,
                    drafter: state.speculativeDefaults.drafter === undefined ? null : drafterLabel(state.speculativeDefaults.drafter),
                    chat_template: state.chatTemplate.name
                }
            ]
        })
    );
}
