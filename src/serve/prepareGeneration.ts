import {randomInt} from "node:crypto";
import type {ModelBackend} from "../backend/ModelBackend.js";
import type {GenerationOptionsInput} from "../engine/GenerationOptions.js";
import {InvalidInputError, ModelNotFoundError, PromptExceedsContextError} from "../errors.js";
import type {ToolCallSyntax} from "../chat/toolCalls.js";
import type {ChatCompletionRequest} from "./chatCompletionRequestSchema.js";
import type {CompletionRequest} from "./completionRequestSchema.js";
import {resolveDecodePath, type ResolvedDecodePath} from "./resolveDecodePath.js";
import type {ServeState} from "./ServeState.js";
import {type CheckedSchema, responseFormatSchema} from "../constraints/jsonSchemaGrammar.js";
import {assertConstrainable} from "../constraints/constraintFor.js";

/** A validated request turned into what the engine runs. */
export interface PreparedGeneration {
    readonly promptTokens: number[];
    /** Prompt tokens as the engine counts them (BOS included where the engine adds it). */
    readonly promptLength: number;
    readonly path: ResolvedDecodePath;
    readonly options: GenerationOptionsInput;
    readonly stream: boolean;
    readonly includeUsage: boolean;
    readonly continuousUsage: boolean;
    /** Set for chat requests with tools whose template has a known call syntax: the reply is parsed into tool_calls. */
    readonly toolCalls?: ToolCallSyntax;
    /** Who sent it (the API key's tenant): the drafter cache, correction memory and cached prompts it uses. */
    readonly tenant: string;
    /** Run on a cached sequence sharing a prefix with the prompt (the request's cache_prompt, default true). */
    readonly cachePrompt: boolean;
    /** The schema the output must match (response_format json_object or json_schema), checked; compiled by serveGeneration. */
    readonly responseSchema?: CheckedSchema;
}

/** The default of ServeAppOptions.maxPromptBytesPerToken. */
export const defaultMaxPromptBytesPerToken = 16;

/**
 * The most UTF-8 bytes of prompt text the context could hold: context tokens × the bytes one token
 * can stand for, which is the vocabulary's longest token (an exact bound) capped at
 * `maxBytesPerToken` (natural text averages 3–6; a vocabulary with 100-byte tokens would otherwise
 * make the bound useless). Text beyond it is refused before it is tokenized: llama.cpp's tokenizers
 * take time quadratic in some inputs (one repeated letter: 300 KB 4 s, so 1 MB near a minute), and
 * tokenizing runs on the event loop, where it would stall every other request.
 */
export function promptByteLimit(
    target: ModelBackend,
    maxBytesPerToken: number
): {readonly bytes: number; readonly bytesPerToken: number; readonly capped: boolean} {
    if (!Number.isSafeInteger(maxBytesPerToken) || maxBytesPerToken < 1)
        throw new InvalidInputError(`must be a positive integer, got ${maxBytesPerToken}`, "maxPromptBytesPerToken");
    let longest = 1;
    // One detokenize per id (≈ 3 µs natively): an incomplete UTF-8 byte decodes as U+FFFD, 3 bytes, which only overestimates.
    for (let id = 0; id < target.vocabularySize; id++) longest = Math.max(longest, Buffer.byteLength(target.detokenize([id])));
    const bytesPerToken = Math.min(longest, maxBytesPerToken);
    return {bytes: target.contextSize * bytesPerToken, bytesPerToken, capped: longest > maxBytesPerToken};
}

/** Refuses prompt text longer than the state's promptByteLimit, without tokenizing it. */
export function checkPromptText(state: ServeState, texts: readonly string[], field: "prompt" | "messages"): void {
    const limit = state.promptByteLimit;
    let bytes = 0;
    for (const text of texts) bytes += Buffer.byteLength(text);
    if (bytes > limit.bytes)
        throw new PromptExceedsContextError(
            undefined,
            state.target.contextSize,
            field,
            `has ${bytes} bytes of text; this model's context of ${state.target.contextSize} tokens holds at most ${limit.bytes} ` +
                `(${limit.bytesPerToken} bytes per token${limit.capped ? "; a prompt of longer tokens can be sent as token ids" : ""})`
        );
}

/** Prompt token ids of a completion request: text is tokenized, ids are checked against the vocabulary. */
export function completionPromptTokens(state: ServeState, prompt: CompletionRequest["prompt"]): number[] {
    const single = Array.isArray(prompt) && (typeof prompt[0] === "string" || Array.isArray(prompt[0])) ? prompt[0] : prompt;
    if (typeof single === "string") {
        checkPromptText(state, [single], "prompt");
        return state.target.tokenize(single);
    }
    const tokens = single as number[];
    const outside = tokens.findIndex((token) => token >= state.target.vocabularySize);
    if (outside >= 0)
        throw new InvalidInputError(`token ${tokens[outside]} is outside the vocabulary [0, ${state.target.vocabularySize})`, "prompt");
    return [...tokens];
}

/**
 * The server's default tree gives way to a chain where trees cannot serve the request (a lossy policy,
 * log-probabilities, a response_format grammar); a tree the request names itself is kept, and the
 * engine then says what it cannot do.
 */
function withoutDefaultTree(path: ResolvedDecodePath, request: CompletionRequest | ChatCompletionRequest): ResolvedDecodePath {
    if (path.mode !== "speculative" || path.tree === undefined) return path;
    const named = typeof request.speculative === "object" && request.speculative?.tree !== undefined;
    const lossless = path.policy.kind === "strict" || path.policy.kind === "greedy";
    if (named || (lossless && requestedLogprobs(request) === undefined && request.response_format == null)) return path;
    const {tree: _tree, ...chain} = path;
    return chain;
}

/**
 * The checked schema of a request's response_format (converted later, off the event loop); a 400
 * before the request waits for a slot when it breaks a limit or the target cannot be constrained.
 */
function responseSchema(state: ServeState, request: CompletionRequest | ChatCompletionRequest): CheckedSchema | undefined {
    const schema = responseFormatSchema(request.response_format);
    if (schema !== undefined) assertConstrainable(state.target, "response_format");
    return schema;
}

/** How many alternatives a request wants with each token's log-probability; undefined: none. */
function requestedLogprobs(request: CompletionRequest | ChatCompletionRequest): number | undefined {
    if (!("messages" in request)) return request.logprobs ?? undefined;
    if (request.top_logprobs != null && request.logprobs !== true)
        throw new InvalidInputError("needs logprobs: true (it says how many alternatives to return with each token)", "top_logprobs");
    return request.logprobs === true ? (request.top_logprobs ?? 0) : undefined;
}

/**
 * Checks the model name and the context budget (as vLLM: prompt + max_tokens must fit the context;
 * without max_tokens the rest of the context is the limit) and maps OpenAI parameters to
 * generation options. Without a seed each request draws a random one, as OpenAI's API does.
 */
export function prepareGeneration(
    state: ServeState,
    request: CompletionRequest | ChatCompletionRequest,
    promptTokens: number[],
    promptField: "prompt" | "messages",
    tenant: string
): PreparedGeneration {
    if (request.model != null && request.model !== state.modelName)
        throw new ModelNotFoundError(`the model "${request.model}" does not exist; this server serves "${state.modelName}"`, "model");
    const path = withoutDefaultTree(
        resolveDecodePath(request.speculative, state.speculativeDefaults, state.draftPairing, state.permissions),
        request
    );

    const target = state.target;
    const addsBos = target.bosToken != null && promptTokens[0] !== target.bosToken;
    const promptLength = promptTokens.length + (addsBos ? 1 : 0);
    const room = target.contextSize - promptLength;
    if (room < 1)
        throw new PromptExceedsContextError(
            promptLength,
            target.contextSize,
            promptField,
            `has ${promptLength} tokens; this model's context holds ${target.contextSize} including at least one generated token`
        );
    const maxTokensField =
        "max_completion_tokens" in request && request.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens";
    const requested =
        maxTokensField === "max_completion_tokens" ? (request as ChatCompletionRequest).max_completion_tokens : request.max_tokens;
    if (requested != null && requested > room)
        throw new PromptExceedsContextError(
            promptLength,
            target.contextSize,
            maxTokensField,
            `this model's maximum context length is ${target.contextSize} tokens; you requested ${promptLength + requested} ` +
                `(${promptLength} in the ${promptField === "prompt" ? "prompt" : "messages"}, ${requested} for the completion)`
        );

    const defaults = state.samplerDefaults;
    const speculative = path.mode === "speculative";
    const options: GenerationOptionsInput = {
        policy: speculative ? path.policy : {kind: "strict"},
        gamma: speculative ? path.gamma : 0,
        draftSampling: speculative ? path.draftSampling : "sample",
        draftLength: speculative ? path.draftLength : "fixed",
        ...(speculative && path.maxGamma !== undefined ? {maxGamma: path.maxGamma} : {}),
        minConfidence: speculative ? path.minConfidence : 0,
        ...(speculative && path.tree !== undefined ? {tree: path.tree} : {}),
        sampling: {
            temperature: request.temperature ?? defaults.temperature,
            topK: request.top_k == null ? defaults.topK : Math.max(0, request.top_k),
            topP: request.top_p ?? defaults.topP,
            minP: request.min_p ?? defaults.minP
        },
        maxTokens: requested ?? room,
        stop: request.stop == null ? [] : typeof request.stop === "string" ? [request.stop] : request.stop,
        seed: request.seed ?? randomInt(0, 2 ** 48 - 1),
        ignoreEos: request.ignore_eos === true,
        logprobs: requestedLogprobs(request),
        // Time to first token as llama-server's: the prompt's row gives it, drafting starts after.
        firstTokenFromPrompt: true
    };
    return {
        promptTokens,
        promptLength,
        path,
        options,
        stream: request.stream === true,
        includeUsage: request.stream_options?.include_usage === true,
        continuousUsage: request.stream_options?.continuous_usage_stats === true,
        tenant,
        cachePrompt: request.cache_prompt !== false,
        responseSchema: responseSchema(state, request)
    };
}
