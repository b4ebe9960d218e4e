import type {ChatMessage, ChatTool} from "../chat/ChatMessage.js";

/** One completion request, the same for every decode path. Exactly one of prompt and messages is set. */
export interface CompletionRequest {
    readonly prompt?: string;
    readonly messages?: readonly ChatMessage[];
    /** Functions the model may call (with messages only), rendered by the chat template. */
    readonly tools?: readonly ChatTool[];
    readonly maxTokens: number;
    /** 0 is greedy. */
    readonly temperature: number;
    readonly seed?: number;
    readonly stop?: readonly string[];
}

export interface Completion {
    readonly text: string;
    /** Generated token ids, where the path knows them (embedded paths do; HTTP paths do not). */
    readonly tokens?: readonly number[];
    /** "eos" | "length" | "stop" for embedded paths; the server's finish_reason for HTTP paths. */
    readonly finishReason: string;
    /** What the server says it ran (OpenAI `system_fingerprint`), when it says anything. */
    readonly systemFingerprint?: string;
    readonly diagnostics?: Readonly<Record<string, unknown>>;
}

/**
 * Everything that identifies what a decode path computes, as input to decodePathFingerprint:
 * `parameters` is plain JSON (canonicalised before hashing), `files` maps a role ("target",
 * "draft") to a file whose content is hashed. Secrets (API keys) never appear here.
 */
export interface DecodePathDescription {
    readonly kind: "embedded" | "openai";
    readonly parameters: Readonly<Record<string, unknown>>;
    readonly files: Readonly<Record<string, string>>;
    /** Embedded paths: the engine that decodes (its binary enters the fingerprint). */
    readonly backend?: "native" | "node-llama-cpp";
    /** Native backend on a GPU build: the build and the devices it offloads to (absent on the CPU addon). */
    readonly gpu?: {readonly build: "vulkan" | "cuda"; readonly device: string};
    /** Present when argmax ids are picked inside the graph (ModelBackend.tokenSelection): ties may then resolve otherwise. */
    readonly tokenSelection?: "device";
}

/** The target's two largest next-token logits at one position of a completion. */
export interface LogitGap {
    readonly top: {readonly token: number; readonly logit: number};
    readonly second: {readonly token: number; readonly logit: number};
    /** top − second: near zero means a near-tie, where tiny numeric differences flip the argmax. */
    readonly gap: number;
}

/**
 * A way of turning requests into completions: the embedded engine (target-only or speculative) or a
 * remote OpenAI-compatible endpoint. Audits compare two paths on the same requests.
 */
export interface DecodePath {
    readonly name: string;
    describe(): DecodePathDescription;
    complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion>;
    /**
     * The target's top-2 logits before generated token `index`, given the request and the tokens
     * generated before it (only paths that hold the target model implement this).
     */
    targetLogitGap?(request: CompletionRequest, precedingTokens: readonly number[]): Promise<LogitGap>;
    dispose(): Promise<void>;
}
