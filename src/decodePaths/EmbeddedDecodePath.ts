import {addsBos, withBos} from "../backend/addsBos.js";
import {contextRefusal, fitsContext} from "../engine/fitsContext.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import type {GpuChoice} from "../backend/gpuChoice.js";
import {type BackendChoice, loadModelBackend} from "../backend/loadModelBackend.js";
import {createDrafter} from "../engine/drafters/createDrafter.js";
import {crossTokenizerLabel} from "../engine/drafters/CrossTokenizerDrafter.js";
import type {Drafter} from "../engine/drafters/Drafter.js";
import {pairDraftModel} from "../engine/drafters/pairDraftModel.js";
import {generate} from "../engine/generate.js";
import {InvalidInputError} from "../errors.js";
import {type PolicyConfigInput, policyConfigSchema} from "../policies/policyConfigSchema.js";
import type {Completion, CompletionRequest, DecodePath, DecodePathDescription, LogitGap} from "./DecodePath.js";
import {renderMessagesAsText} from "../chat/renderMessagesAsText.js";
import {OperationQueue} from "../backend/OperationQueue.js";
import {evaluateOnce} from "../backend/evaluateOnce.js";
import {renderBatteryChat} from "../batteries/renderBatteryChat.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import {ggufFileChatTemplate} from "../chat/ggufChatTemplate.js";
import {finishWithToolCalls, replyText} from "../chat/toolCalls.js";

/** What an embedded path decodes with, beside the models: the verification policy, γ and the sampler tail. */
export interface EmbeddedDecodeSettings {
    readonly policy?: PolicyConfigInput;
    /** Draft length; ignored (0) without a draft. Default 4. */
    readonly gamma?: number;
    readonly topK?: number;
    readonly topP?: number;
    readonly minP?: number;
    readonly draftSampling?: "sample" | "greedy";
    /** Drafter spec; default `model` with a draft, else none (target-only). */
    readonly drafter?: string;
}

export interface EmbeddedModelFiles {
    readonly target?: string;
    readonly draft?: string;
}

/**
 * The in-process engine as a decode path: target-only when there is no drafter (or γ = 0), else
 * speculative with the given drafter, policy and γ, all through `generate`. Requests run one at a
 * time and share one drafter instance (a suffix drafter learns from the path's earlier requests).
 * Chat requests are rendered with `chatTemplate` when there is one — `open` takes the target GGUF's
 * own template, as `specgate serve` does by default, so an embedded path and a server on the same
 * GGUF see the same prompt tokens (tools and tool calls included) — else as plain text.
 */
export class EmbeddedDecodePath implements DecodePath {
    private readonly queue = new OperationQueue();
    private readonly policy: PolicyConfigInput;
    private readonly gamma: number;
    private readonly drafter: Drafter | undefined;

    public constructor(
        public readonly name: string,
        private readonly target: ModelBackend,
        private readonly draft: ModelBackend | undefined,
        private readonly settings: EmbeddedDecodeSettings = {},
        private readonly files: EmbeddedModelFiles = {},
        private readonly ownsBackends = false,
        private readonly chatTemplate?: ChatTemplate
    ) {
        const policy = policyConfigSchema.safeParse(settings.policy ?? {kind: "strict"});
        if (!policy.success) throw new InvalidInputError(policy.error.issues[0].message, `policy.${policy.error.issues[0].path.join(".")}`);
        this.policy = policy.data;
        const drafterSpec = settings.drafter ?? (draft !== undefined ? "model" : undefined);
        this.drafter = drafterSpec === undefined ? undefined : createDrafter(drafterSpec, draft, `${name}: drafter`);
        this.gamma = this.drafter === undefined ? 0 : (settings.gamma ?? 4);
        // A pair that cannot be compared token by token is a configuration fault, found before any request.
        if (draft !== undefined) pairDraftModel(target, draft, this.drafter, `${name}: draft`);
    }

    /**
     * Loads the GGUF files on `backend` (`threads` threads, default 1; `gpu` and `contextSize` as
     * loadModelBackend's) and owns the backends.
     */
    public static async open(
        name: string,
        files: {target: string; draft?: string},
        settings: EmbeddedDecodeSettings = {},
        threads = 1,
        backend?: BackendChoice,
        gpu: {gpu?: GpuChoice; gpuLayers?: number; contextSize?: number} = {}
    ): Promise<EmbeddedDecodePath> {
        const target = await loadModelBackend(files.target, {threads, backend, ...gpu});
        let draft: ModelBackend | undefined;
        try {
            draft = files.draft === undefined ? undefined : await loadModelBackend(files.draft, {threads, backend, ...gpu});
            return new EmbeddedDecodePath(name, target, draft, settings, files, true, ggufFileChatTemplate(target, files.target));
        } catch (error) {
            await draft?.dispose();
            await target.dispose();
            throw error;
        }
    }

    public describe(): DecodePathDescription {
        const files: Record<string, string> = {};
        if (this.files.target !== undefined) files.target = this.files.target;
        // The draft model is part of the path only when the drafter drafts with it.
        const usesDraft =
            this.draft !== undefined &&
            this.drafter !== undefined &&
            (this.drafter.members.includes("model") || this.drafter.members.includes(crossTokenizerLabel));
        if (this.files.draft !== undefined && usesDraft) files.draft = this.files.draft;
        return {
            kind: "embedded",
            parameters: {
                speculative: this.drafter !== undefined && this.gamma > 0,
                drafter: this.drafter?.label ?? null,
                policy: this.drafter === undefined ? null : this.policy,
                gamma: this.gamma,
                draftSampling: this.settings.draftSampling ?? "sample",
                sampler: {topK: this.settings.topK ?? 0, topP: this.settings.topP ?? 1, minP: this.settings.minP ?? 0},
                // Without files (in-memory test backends) the vocabulary identity is the best stand-in for the model.
                targetVocabulary: this.target.vocabularyIdentity(),
                draftVocabulary: usesDraft ? this.draft!.vocabularyIdentity() : null
            },
            files,
            ...(this.target.backendKind !== undefined ? {backend: this.target.backendKind} : {}),
            ...(this.target.nativeBuild !== undefined && this.target.nativeBuild !== "cpu"
                ? {gpu: {build: this.target.nativeBuild, device: this.target.device ?? "CPU"}}
                : {}),
            ...(this.target.tokenSelection === "device" ? {tokenSelection: "device" as const} : {})
        };
    }

    /**
     * One completion through `generate`. A prompt that does not fit the context with maxTokens
     * generated tokens (fitsContext) is refused with a PromptExceedsContextError, as a server
     * refuses its max_tokens, so an embedded and a served path skip the same prompts.
     */
    public complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
        return this.queue.run(async () => {
            const prompt = this.prompt(request);
            const promptLength = withBos(this.target, typeof prompt === "string" ? this.target.tokenize(prompt) : prompt).length;
            const contextSize = Math.min(this.target.contextSize, this.draft?.contextSize ?? Infinity);
            if (!fitsContext(promptLength, request.maxTokens, contextSize))
                throw contextRefusal(promptLength, request.maxTokens, contextSize, request.messages !== undefined ? "messages" : "prompt");
            const result = await generate(
                this.target,
                undefined,
                prompt,
                {
                    policy: this.policy,
                    gamma: this.gamma,
                    draftSampling: this.settings.draftSampling ?? "sample",
                    sampling: {
                        temperature: request.temperature,
                        topK: this.settings.topK ?? 0,
                        topP: this.settings.topP ?? 1,
                        minP: this.settings.minP ?? 0
                    },
                    maxTokens: request.maxTokens,
                    stop: request.stop ?? [],
                    seed: request.seed ?? 0
                },
                {signal, drafter: this.drafter}
            );
            // With tools, the calls the model wrote are read as a server reads them, into the text form
            // an OpenAI path gives a server's structured tool_calls (replyText).
            const syntax = (request.tools?.length ?? 0) > 0 ? this.chatTemplate?.toolCalls : undefined;
            const reply = syntax?.parse(result.text);
            const calls = reply !== undefined && reply.calls.length > 0 ? reply : undefined;
            return {
                text: calls !== undefined ? replyText(calls.content, calls.calls) : result.text,
                tokens: result.tokens,
                finishReason: calls !== undefined ? finishWithToolCalls(result.finishReason) : result.finishReason,
                diagnostics: {
                    promptTokens: result.promptTokens,
                    acceptanceRate: result.telemetry.draftTokens > 0 ? result.telemetry.acceptanceRate : null,
                    targetEvaluations: result.telemetry.steps
                }
            };
        });
    }

    /** Re-evaluates the prompt and the preceding tokens on the target alone and reads its top-2 logits. */
    public targetLogitGap(request: CompletionRequest, precedingTokens: readonly number[]): Promise<LogitGap> {
        return this.queue.run(async () => {
            // The same prompt tokens generate() builds: the text's (or template's) tokens behind BOS.
            const prompt = this.prompt(request);
            const tokens = typeof prompt === "string" ? this.target.tokenize(prompt) : [...prompt];
            if (addsBos(this.target) && tokens[0] !== this.target.bosToken) tokens.unshift(this.target.bosToken!);
            tokens.push(...precedingTokens);
            const [row] = await evaluateOnce(this.target, tokens);
            return topTwo(row);
        });
    }

    /** The prompt text, or for chat with a template its token ids (special tokens parsed). */
    private prompt(request: CompletionRequest): string | number[] {
        if (request.messages !== undefined && this.chatTemplate !== undefined)
            return renderBatteryChat(this.chatTemplate, request.messages, request.tools);
        if (request.tools !== undefined && request.tools.length > 0)
            throw new InvalidInputError("the plain chat format (the model has no chat template) cannot render tools", "tools");
        return promptText(request);
    }

    public async dispose(): Promise<void> {
        if (!this.ownsBackends) return;
        await this.draft?.dispose();
        await this.target.dispose();
    }
}

function promptText(request: CompletionRequest): string {
    if (request.messages !== undefined) return renderMessagesAsText(request.messages);
    if (request.prompt === undefined) throw new InvalidInputError("needs a prompt or messages", "request");
    return request.prompt;
}

function topTwo(row: Float64Array): LogitGap {
    let first = 0;
    let second = -1;
    for (let token = 1; token < row.length; token++) {
        if (row[token] > row[first]) {
            second = first;
            first = token;
        } else if (second < 0 || row[token] > row[second]) {
            second = token;
        }
    }
    return {top: {token: first, logit: row[first]}, second: {token: second, logit: row[second]}, gap: row[first] - row[second]};
}
