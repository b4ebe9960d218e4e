import type {FinishReason} from "../engine/StopDetector.js";

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
    choice(text: string, finishReason: "stop" | "length"): Record<string, unknown>;
    /** A streamed choice; `first` marks the chunk that opens the reply (chat sends the role there). */
    chunkChoice(text: string, finishReason: "stop" | "length" | "abort" | null, first: boolean): Record<string, unknown>;
}

export const completionFormat: ResponseFormat = {
    idPrefix: "cmpl-",
    object: "text_completion",
    chunkObject: "text_completion",
    opensWithRole: false,
    choice: (text, finishReason) => ({index: 0, text, logprobs: null, finish_reason: finishReason}),
    chunkChoice: (text, finishReason) => ({index: 0, text, logprobs: null, finish_reason: finishReason})
};

export const chatFormat: ResponseFormat = {
    idPrefix: "chatcmpl-",
    object: "chat.completion",
    chunkObject: "chat.completion.chunk",
    opensWithRole: true,
    choice: (text, finishReason) => ({index: 0, message: {role: "assistant", content: text}, logprobs: null, finish_reason: finishReason}),
    chunkChoice: (text, finishReason, first) => ({
        index: 0,
        delta: first ? {role: "assistant", content: text} : finishReason != null && text === "" ? {} : {content: text},
        logprobs: null,
        finish_reason: finishReason
    })
};
