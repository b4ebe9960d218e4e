import {setMaxListeners} from "node:events";
import {Hono} from "hono";
import {bodyLimit} from "hono/body-limit";
import {cors} from "hono/cors";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {defaultSamplingOptions} from "../distributions/SamplingOptions.js";
import {PayloadTooLargeError, RouteNotFoundError, ServerShuttingDownError} from "../errors.js";
import {CorrectionMemory} from "../policies/CorrectionMemory.js";
import {ApiKeys, checkJsonContentType, type HostAllowList} from "./accessControl.js";
import {chatCompletionRequestSchema} from "./chatCompletionRequestSchema.js";
import {type ChatTemplate, chatRequestTexts, defaultChatTemplate} from "./ChatTemplate.js";
import {completionRequestSchema} from "./completionRequestSchema.js";
import {GenerationSlots} from "./GenerationSlots.js";
import {openAiError} from "./openAiError.js";
import {parseRequestBody} from "./parseRequestBody.js";
import {checkPromptText, completionPromptTokens, defaultMaxPromptBytesPerToken, prepareGeneration, promptByteLimit} from "./prepareGeneration.js";
import {pairServeDraft, type SpeculativeDefaults} from "./resolveDecodePath.js";
import {chatFormat, completionFormat} from "./ResponseFormat.js";
import {serveGeneration} from "./serveGeneration.js";
import {ServeMetrics} from "./ServeMetrics.js";
import type {ServeState} from "./ServeState.js";
import {type SamplerDefaults, SystemFingerprints} from "./systemFingerprint.js";
import {DrafterPool} from "../engine/drafters/DrafterPool.js";
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
    /** Host header values answered (see HostAllowList); default: any (startServeServer narrows it on loopback). */
    readonly allowedHosts?: HostAllowList;
    /** Origins allowed to call the API from a browser (CORS); default none, so no CORS headers are sent. */
    readonly corsOrigins?: readonly string[];
}

export interface ServeApp {
    readonly app: Hono;
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
    const slots = new GenerationSlots(options.maxConcurrency ?? 4, options.maxQueue ?? 64);
    const shutdownController = new AbortController();
    // Every running request listens to it; the default cap of 10 listeners would warn under load.
    setMaxListeners(0, shutdownController.signal);
    const samplerDefaults: SamplerDefaults = {...defaultSamplingOptions, ...options.samplerDefaults};
    const chatTemplate = options.chatTemplate ?? defaultChatTemplate(options.target);
    const drafters = new DrafterPool(options.draft);
    const speculativeDefaults: SpeculativeDefaults = {
        ...(options.draft !== undefined ? {drafter: {kind: "model"}} : {}),
        policy: {kind: "strict"}, gamma: 4, draftSampling: "sample", draftLength: "fixed", minConfidence: 0,
        ...options.speculative
    };
    const state: ServeState = {
        modelName: options.modelName,
        target: options.target,
        draft: options.draft,
        draftPairing: pairServeDraft(options.target, options.draft, speculativeDefaults.drafter),
        speculativeDefaults,
        drafters,
        samplerDefaults,
        chatTemplate,
        slots,
        metrics: new ServeMetrics(options.modelName, slots, {
            processMetrics: options.processMetrics, suffixCacheNodes: () => drafters.suffixCacheNodes,
            batchStatistics: () => ({target: options.target.batchStatistics, draft: options.draft?.batchStatistics})
        }),
        fingerprints: new SystemFingerprints({
            target: options.target, draft: options.draft, files: options.modelFiles, samplerDefaults, chatTemplate: chatTemplate.name
        }),
        correctionMemory: new CorrectionMemory(options.target.vocabularySize, options.target.vocabularyIdentity()),
        promptByteLimit: promptByteLimit(options.target, options.maxPromptBytesPerToken ?? defaultMaxPromptBytesPerToken),
        shutdownSignal: shutdownController.signal,
        created: Math.floor(Date.now() / 1000)
    };
    const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;

    const app = new Hono();
    app.onError((error) => {
        const mapped = openAiError(error);
        const headers: Record<string, string> = {"Content-Type": "application/json"};
        if (mapped.retryAfter !== undefined) headers["Retry-After"] = String(mapped.retryAfter);
        return new Response(JSON.stringify(mapped.body), {status: mapped.status, headers});
    });

    // Access first: a foreign Host header is refused on every route, then CORS (when configured)
    // answers preflights, then every route but /health needs an API key when the server has some.
    const apiKeys = new ApiKeys(options.apiKeys ?? []);
    const allowedHosts = options.allowedHosts;
    if (allowedHosts !== undefined)
        app.use("*", async (c, next) => {
            allowedHosts.check(c.req.header("host"));
            await next();
        });
    const corsOrigins = options.corsOrigins ?? [];
    if (corsOrigins.length > 0)
        app.use("*", cors({origin: [...corsOrigins], allowMethods: ["GET", "POST", "OPTIONS"], allowHeaders: ["Authorization", "Content-Type"], maxAge: 600}));
    if (apiKeys.required)
        app.use("*", async (c, next) => {
            if (c.req.path !== "/health") apiKeys.check(c.req.header("authorization"));
            await next();
        });

    // While draining only /metrics answers normally; /health reports 503 so load balancers stop sending.
    app.use("*", async (c, next) => {
        if (!slots.accepting && c.req.path !== "/metrics") throw new ServerShuttingDownError("the server is shutting down");
        await next();
    });
    app.use("/v1/*", bodyLimit({
        maxSize: maxBodyBytes,
        onError: () => {
            throw new PayloadTooLargeError(`the request body exceeds ${maxBodyBytes} bytes`);
        }
    }));

    app.get("/health", (c) => c.json({status: "ok", running: slots.running, waiting: slots.waiting}));
    app.get("/metrics", async (c) => c.body(await state.metrics.text(), 200, {"Content-Type": state.metrics.contentType}));
    app.get("/v1/models", (c) => c.json({
        object: "list",
        data: [{
            id: state.modelName,
            object: "model",
            created: state.created,
            owned_by: "specgate",
            max_model_len: options.target.contextSize,
            speculative: state.speculativeDefaults.drafter !== undefined,
            drafter: state.speculativeDefaults.drafter === undefined ? null : drafterLabel(state.speculativeDefaults.drafter),
            chat_template: chatTemplate.name
        }]
    }));

    app.post("/v1/completions", async (c) => {
        const arrival = performance.now();
        checkJsonContentType(c.req.header("content-type"));
        const request = parseRequestBody(await c.req.text(), completionRequestSchema);
        const prepared = prepareGeneration(state, request, completionPromptTokens(state, request.prompt), "prompt");
        return serveGeneration(c, state, prepared, completionFormat, arrival);
    });
    app.post("/v1/chat/completions", async (c) => {
        const arrival = performance.now();
        checkJsonContentType(c.req.header("content-type"));
        const request = parseRequestBody(await c.req.text(), chatCompletionRequestSchema);
        checkPromptText(state, chatRequestTexts(request), "messages");
        const prepared = prepareGeneration(state, request, chatTemplate.render(request.messages, request.tools), "messages");
        const toolCalls = (request.tools?.length ?? 0) > 0 && request.tool_choice !== "none" ? chatTemplate.toolCalls : undefined;
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
            slots.close();
            const idle = slots.idle();
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
