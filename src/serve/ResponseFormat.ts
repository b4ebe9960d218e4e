import type {FinishReason} from "../engine/StopDetector.js";
import type {openAiToolCalls} from "../chat/toolCalls.js";
import type {TokenLogprob} from "../distributions/tokenLogprobs.js";
import {chatLogprobs, completionLogprobs, type TokenText} from "./logprobFormats.js";

type ToolCalls = ReturnType<typeof openAiToolCalls>;
/** OpenAI's finish reasons: "tool_calls" when the reply ends with the calls the model made. */
export type OpenAiFinishReason = "stop" | "length" | "tool_calls";

/** OpenAI's finish_reason: end of sequence and stop strings are both "stop". */
export function openAiFinishReason(reason: FinishReason): "stop" | "length" {
    return reason === "length" ? "length" : "stop";
}

/** The two OpenAI response shapes: text completions and chat completions, whole and streamed. */
export interface ResponseFormat {
    readonly idPrefix: string;
    readonly object: string;
    readonly chunkObject: string;
    /** Chat streams open with a role-only chunk, as OpenAI's do; text completions do not. */
    readonly opensWithRole: boolean;
    /** The whole reply; `toolCalls` only in chat replies (content may then be null); `logprobs` from `logprobs()`. */
    choice(text: string | null, finishReason: OpenAiFinishReason, toolCalls?: ToolCalls, logprobs?: unknown): Record<string, unknown>;
    /** A streamed choice; `first` marks the chunk that opens the reply (chat sends the role there). */
    chunkChoice(
        text: string,
        finishReason: OpenAiFinishReason | "abort" | null,
        first: boolean,
        logprobs?: unknown
    ): Record<string, unknown>;
    /** The `logprobs` of a choice for these tokens; `offset`: characters of the reply before them. */
    logprobs(entries: readonly TokenLogprob[], text: TokenText, offset: number): unknown;
    /** A streamed chat choice carrying the reply's tool calls, each whole, as llama-server sends them once parsed. */
    toolCallsChunkChoice?(toolCalls: ToolCalls): Record<string, unknown>;
}

export const completionFormat: ResponseFormat = {
    idPrefix: "cmpl-",
    object: "text_completion",
    chunkObject: "text_completion",
    opensWithRole: false,
    choice: (text, finishReason, _toolCalls, logprobs) => ({
        index: 0,
        text: text ?? "",
        logprobs: logprobs ?? null,
        finish_reason: finishReason
    }),
    chunkChoice: (text, finishReason, _first, logprobs) => ({index: 0, text, logprobs: logprobs ?? null, finish_reason: finishReason}),
    logprobs: completionLogprobs
};

export const chatFormat: ResponseFormat = {
    idPrefix: "chatcmpl-",
    object: "chat.completion",
    chunkObject: "chat.completion.chunk",
    opensWithRole: true,
    choice: (text, finishReason, toolCalls, logprobs) => ({
        index: 0,
        message: {role: "assistant", content: text, ...(toolCalls !== undefined ? {tool_calls: toolCalls} : {})},
        logprobs: logprobs ?? null,
        finish_reason: finishReason
    }),
    chunkChoice: (text, finishReason, first, logprobs) => ({
        index: 0,
        delta: first ? {role: "assistant", content: text} : finishReason != null && text === "" ? {} : {content: text},
        logprobs: logprobs ?? null,
        finish_reason: finishReason
    }),
    logprobs: (entries, text) => chatLogprobs(entries, text),
    toolCallsChunkChoice: (toolCalls) => ({
        index: 0,
        delta: {tool_calls: toolCalls.map((call, index) => ({index, ...call}))},
        logprobs: null,
        finish_reason: null
    })
};
