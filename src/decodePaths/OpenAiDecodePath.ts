import {setTimeout as sleep} from "node:timers/promises";
import {z} from "zod";
import {DecodePathError, InvalidInputError, PromptExceedsContextError} from "../errors.js";
import {type ParsedToolCall, replyText, toolCallOfReply} from "../chat/toolCalls.js";
import {ConcurrencyLimiter} from "./ConcurrencyLimiter.js";
import type {Completion, CompletionRequest, DecodePath, DecodePathDescription} from "./DecodePath.js";
import {type BackoffOptions, retryDelay} from "./retryDelay.js";

export interface OpenAiDecodePathOptions {
    /** Up to and including the API version, e.g. http://127.0.0.1:8000/v1. */
    readonly baseUrl: string;
    readonly model: string;
    /** Name of the environment variable holding the API key (never the key itself). */
    readonly apiKeyEnv?: string;
    /** Fields merged into every request body (e.g. vLLM's `spec_decode`, `top_k`); they override specgate's. */
    readonly extraBody?: Readonly<Record<string, unknown>>;
    /**
     * "chat" → /chat/completions (a prompt becomes one user message); "completions" → /completions
     * (messages are refused); "auto" (default) → prompts to /completions, messages to /chat/completions,
     * so raw prompts reach the model unwrapped.
     */
    readonly endpoint?: "auto" | "chat" | "completions";
    readonly concurrency?: number;
    /** Retries after the first attempt, on 429, 5xx, timeouts and connection errors. Default 4. */
    readonly maxRetries?: number;
    readonly timeoutMs?: number;
    readonly backoff?: Partial<BackoffOptions>;
    /** For tests: random source of the jitter. */
    readonly random?: () => number;
}

const replySchema = z.object({
    choices: z
        .array(
            z.object({
                text: z.string().optional(),
                message: z.object({content: z.string().nullable().optional(), tool_calls: z.array(z.unknown()).optional()}).optional(),
                finish_reason: z.string().nullable().optional()
            })
        )
        .min(1),
    system_fingerprint: z.string().nullable().optional(),
    usage: z.record(z.string(), z.unknown()).nullable().optional()
});

/**
 * Any OpenAI-compatible server (vLLM, SGLang, llama-server, `specgate serve`, OpenAI) as a decode
 * path, with at most `concurrency` requests in flight, a per-attempt timeout, and retries with
 * exponential backoff and jitter on 429 and 5xx (honouring Retry-After). Other 4xx fail at once:
 * retrying a bad request only repeats it.
 */
export class OpenAiDecodePath implements DecodePath {
    private readonly limiter: ConcurrencyLimiter;
    private readonly apiKey: string | undefined;
    private readonly backoff: BackoffOptions;
    private readonly maxRetries: number;
    private readonly timeoutMs: number;

    public constructor(
        public readonly name: string,
        private readonly options: OpenAiDecodePathOptions
    ) {
        try {
            new URL(options.baseUrl);
        } catch {
            throw new InvalidInputError(`is not a URL: "${options.baseUrl}"`, "base");
        }
        if (options.model === "") throw new InvalidInputError("is required", "model");
        if (options.apiKeyEnv !== undefined) {
            this.apiKey = process.env[options.apiKeyEnv];
            if (this.apiKey === undefined || this.apiKey === "")
                throw new InvalidInputError(`environment variable ${options.apiKeyEnv} is not set`, "key-env");
        }
        this.limiter = new ConcurrencyLimiter(options.concurrency ?? 4);
        this.maxRetries = options.maxRetries ?? 4;
        this.timeoutMs = options.timeoutMs ?? 120_000;
        if (!Number.isInteger(this.maxRetries) || this.maxRetries < 0)
            throw new InvalidInputError(`must be a non-negative integer, got ${this.maxRetries}`, "retries");
        if (!(this.timeoutMs > 0)) throw new InvalidInputError(`must be positive, got ${this.timeoutMs}`, "timeout-ms");
        this.backoff = {baseDelayMs: 500, maxDelayMs: 30_000, maxRetryAfterMs: 120_000, ...options.backoff};
    }

    public describe(): DecodePathDescription {
        return {
            kind: "openai",
            parameters: {
                baseUrl: this.options.baseUrl.replace(/\/+$/, ""),
                model: this.options.model,
                endpoint: this.options.endpoint ?? "auto",
                extraBody: this.options.extraBody ?? {}
            },
            files: {}
        };
    }

    public complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
        return this.limiter.run(() => this.completeWithRetries(request, signal));
    }

    public async dispose(): Promise<void> {}

    private async completeWithRetries(request: CompletionRequest, signal: AbortSignal | undefined): Promise<Completion> {
        const {url, body} = this.buildRequest(request);
        for (let attempt = 0; ; attempt++) {
            signal?.throwIfAborted();
            const outcome = await this.attempt(url, body, signal);
            if ("completion" in outcome) return outcome.completion;
            if (!outcome.retryable || attempt >= this.maxRetries) throw outcome.error;
            await sleep(retryDelay(attempt, outcome.retryAfter, this.backoff, this.options.random), undefined, {signal});
        }
    }

    private buildRequest(request: CompletionRequest): {url: string; body: Record<string, unknown>} {
        const base = this.options.baseUrl.replace(/\/+$/, "");
        const endpoint = this.options.endpoint ?? "auto";
        const common: Record<string, unknown> = {
            model: this.options.model,
            max_tokens: request.maxTokens,
            temperature: request.temperature
        };
        if (request.seed !== undefined) common.seed = request.seed;
        if (request.stop !== undefined && request.stop.length > 0) common.stop = [...request.stop];
        const useChat = endpoint === "chat" || (endpoint === "auto" && request.messages !== undefined);
        if (useChat) {
            const messages = request.messages ?? [{role: "user", content: request.prompt ?? ""}];
            const tools = request.tools !== undefined && request.tools.length > 0 ? {tools: request.tools} : {};
            return {url: `${base}/chat/completions`, body: {...common, messages, ...tools, ...this.options.extraBody}};
        }
        if (request.messages !== undefined) throw new InvalidInputError("has messages but the path uses endpoint=completions", "request");
        return {url: `${base}/completions`, body: {...common, prompt: request.prompt ?? "", ...this.options.extraBody}};
    }

    private async attempt(
        url: string,
        body: Record<string, unknown>,
        signal: AbortSignal | undefined
    ): Promise<
        {completion: Completion} | {error: DecodePathError | PromptExceedsContextError; retryable: boolean; retryAfter: string | null}
    > {
        const timeout = AbortSignal.timeout(this.timeoutMs);
        const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
        const headers: Record<string, string> = {"content-type": "application/json"};
        if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
        let status: number;
        let retryAfter: string | null;
        let text: string;
        try {
            const response = await fetch(url, {method: "POST", headers, body: JSON.stringify(body), signal: combined});
            status = response.status;
            retryAfter = response.headers.get("retry-after");
            text = await response.text();
        } catch (error) {
            if (signal?.aborted === true) throw signal.reason;
            if (timeout.aborted) {
                return {
                    error: new DecodePathError("timeout", `${url}: no complete reply within ${this.timeoutMs} ms`),
                    retryable: true,
                    retryAfter: null
                };
            }
            const cause = (error as {cause?: {code?: string; message?: string}}).cause;
            return {
                error: new DecodePathError("network", `${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`),
                retryable: true,
                retryAfter: null
            };
        }
        if (status === 400 && refusesForContext(text))
            return {
                error: new PromptExceedsContextError(undefined, undefined, "prompt", `${url}: HTTP 400: ${text.slice(0, 200)}`),
                retryable: false,
                retryAfter: null
            };
        if (status !== 200) {
            const retryable = status === 429 || status >= 500;
            return {
                error: new DecodePathError("http_status", `${url}: HTTP ${status}: ${text.slice(0, 200)}`, status),
                retryable,
                retryAfter
            };
        }
        // A malformed 200 reply is thrown at once, not retried: a broken server is not a busy one.
        return {completion: parseReply(url, text)};
    }
}

/**
 * Whether a 400 says the prompt does not fit the context: OpenAI's code "context_length_exceeded",
 * llama-server's "exceed_context_size_error", or the message vLLM and specgate serve write.
 */
function refusesForContext(text: string): boolean {
    let error: {code?: unknown; type?: unknown; message?: unknown} | undefined;
    try {
        error = (JSON.parse(text) as {error?: typeof error}).error;
    } catch {
        return false;
    }
    if (typeof error !== "object" || error === null) return false;
    if (error.code === "context_length_exceeded" || error.type === "exceed_context_size_error") return true;
    return (
        typeof error.message === "string" &&
        /maximum context length|context holds|context of \d+ tokens holds|exceeds the available context size/i.test(error.message)
    );
}

function parseReply(url: string, text: string): Completion {
    let json: unknown;
    try {
        json = JSON.parse(text);
    } catch (error) {
        throw new DecodePathError("malformed_response", `${url}: reply is not JSON (${(error as Error).message}): ${text.slice(0, 120)}`);
    }
    const parsed = replySchema.safeParse(json);
    if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new DecodePathError("malformed_response", `${url}: reply ${issue.path.join(".") || "body"}: ${issue.message}`);
    }
    const [choice] = parsed.data.choices;
    const content = choice.message !== undefined ? (choice.message.content ?? "") : choice.text;
    if (content === undefined) throw new DecodePathError("malformed_response", `${url}: reply choices.0 has neither message nor text`);
    // Tool calls come back structured on chat endpoints: in the text form embedded paths give them too,
    // so audits compare them (a call the reply does not name properly is kept as JSON as it came).
    const entries = choice.message?.tool_calls ?? [];
    const calls = entries.map(toolCallOfReply);
    const fullText =
        entries.length === 0
            ? content
            : calls.every((call) => call !== undefined)
              ? replyText(content, calls as ParsedToolCall[])
              : `${content}${content === "" ? "" : "\n"}${JSON.stringify(entries)}`;
    return {
        text: fullText,
        finishReason: choice.finish_reason ?? "unknown",
        ...(parsed.data.system_fingerprint != null ? {systemFingerprint: parsed.data.system_fingerprint} : {}),
        ...(parsed.data.usage != null ? {diagnostics: {usage: parsed.data.usage}} : {})
    };
}
