import {DraftSequenceTokenPredictor, type LlamaContext, type LlamaModel, type Token} from "node-llama-cpp";
import {sharedLlama} from "../../backend/NodeLlamaCppBackend.js";
import {InvalidInputError} from "../../errors.js";

/** DraftSequenceTokenPredictor's own options; the defaults are node-llama-cpp's. */
export interface DraftPredictorOptions {
    /** Fewest tokens to draft before the target validates them. Default 0 (validate whatever is ready). */
    readonly minTokens?: number;
    /** Most tokens per draft (γ). Default 16. */
    readonly maxTokens?: number;
    /** A draft token whose draft probability is below this ends the draft; 0 disables. Default 0.6. */
    readonly minConfidence?: number;
}

export interface RunDraftSequencePredictorOptions {
    /** Target model: a GGUF path (loaded and disposed here) or a model already loaded on sharedLlama(). */
    readonly target: string | LlamaModel;
    /** Draft model, likewise; `null` generates with the target alone, the no-predictor reference. */
    readonly draft: string | LlamaModel | null;
    /** Text (tokenized without special tokens) or token ids. */
    readonly prompt: string | readonly number[];
    /** Tokens to generate at most; generation also ends at an end-of-generation token. */
    readonly maxTokens: number;
    /** Default 0 (greedy). */
    readonly temperature?: number;
    /** Sampling seed (used when temperature > 0). Default 0. */
    readonly seed?: number;
    /**
     * Top-k / top-p of the sampler. Defaults 0 and 1 (off), as specgate's engine: node-llama-cpp's own
     * defaults (40 and 0.95) would truncate the distribution and make temperature runs incomparable.
     */
    readonly topK?: number;
    readonly topP?: number;
    readonly predictor?: DraftPredictorOptions;
    /** CPU threads of each context (target and draft). Default 1; see NodeLlamaCppBackend on why. */
    readonly threads?: number;
    /** Context size of both contexts. Default: prompt + maxTokens + γ + 1, at least 256. */
    readonly contextSize?: number;
    /** Prepend the target's BOS token when it has one. Default true. */
    readonly addBos?: boolean;
}

export interface DraftSequencePredictorRun {
    /** Generated token ids (the prompt excluded; an end-of-generation token is not included). */
    readonly tokens: number[];
    readonly text: string;
    /** From the start of prompt evaluation to the last generated token; model loading and context creation excluded. */
    readonly elapsedMilliseconds: number;
    readonly tokensPerSecond: number;
    /** node-llama-cpp's `sequence.tokenPredictions`: validated + refuted = predictions the target evaluated. */
    readonly validated: number;
    readonly refuted: number;
    /** Validated predictions that became output tokens / that were validated but never consumed. */
    readonly used: number;
    readonly unused: number;
}

/**
 * Generates with node-llama-cpp's own speculative decoding (a target LlamaContextSequence with a
 * DraftSequenceTokenPredictor over a draft model's sequence): the baseline that specgate's engine is
 * compared against. Verification there is match-the-sample: the target samples at
 * every predicted position and keeps predictions equal to its own samples, so output is the
 * target's own sampling chain; at temperature 0 it must equal plain greedy decoding.
 *
 * The draft evaluates in the background while the target evaluates, so with threads 1 per context
 * this may keep two cores busy.
 */
export async function runDraftSequencePredictor(options: RunDraftSequencePredictorOptions): Promise<DraftSequencePredictorRun> {
    const threads = options.threads ?? 1;
    if (!Number.isSafeInteger(threads) || threads < 1) throw new InvalidInputError(`must be a positive integer, got ${threads}`, "threads");
    if (!Number.isSafeInteger(options.maxTokens) || options.maxTokens < 1)
        throw new InvalidInputError(`must be a positive integer, got ${options.maxTokens}`, "maxTokens");
    const temperature = options.temperature ?? 0;
    if (!(temperature >= 0) || !Number.isFinite(temperature))
        throw new InvalidInputError(`must be a finite number >= 0, got ${temperature}`, "temperature");

    const owned: LlamaModel[] = [];
    const contexts: LlamaContext[] = [];
    let predictor: DraftSequenceTokenPredictor | undefined;
    try {
        const target = await resolveModel(options.target, owned);
        const draft = options.draft === null ? undefined : await resolveModel(options.draft, owned);

        const promptTokens = typeof options.prompt === "string" ? Array.from(target.tokenize(options.prompt, false)) : [...options.prompt];
        const bos = target.tokens.bos;
        if ((options.addBos ?? true) && bos != null && promptTokens[0] !== bos) promptTokens.unshift(bos);
        if (promptTokens.length === 0) throw new InvalidInputError("is empty and the model has no BOS token to start from", "prompt");

        const draftLength = options.predictor?.maxTokens ?? 16;
        const contextSize = options.contextSize ?? Math.max(256, promptTokens.length + options.maxTokens + draftLength + 1);
        const contextOptions = {contextSize, batchSize: contextSize, threads: {ideal: threads, min: threads}, sequences: 1};

        const targetContext = await target.createContext(contextOptions);
        contexts.push(targetContext);
        if (draft !== undefined) {
            const draftContext = await draft.createContext(contextOptions);
            contexts.push(draftContext);
            predictor = new DraftSequenceTokenPredictor(draftContext.getSequence(), {
                minTokens: options.predictor?.minTokens ?? 0,
                maxTokens: draftLength,
                minConfidence: options.predictor?.minConfidence ?? 0.6
            });
        }
        const sequence = targetContext.getSequence({tokenPredictor: predictor});

        const tokens: number[] = [];
        const started = performance.now();
        const generator = sequence.evaluate(promptTokens as Token[], {
            temperature,
            seed: options.seed ?? 0,
            topK: options.topK ?? 0,
            topP: options.topP ?? 1,
            minP: 0
        });
        // evaluate() ends on its own at an end-of-generation token; returning early aborts the predictor.
        for await (const token of generator) {
            tokens.push(token);
            if (tokens.length >= options.maxTokens) break;
        }
        const elapsedMilliseconds = performance.now() - started;

        const statistics = sequence.tokenPredictions;
        return {
            tokens,
            text: target.detokenize(tokens as Token[], false),
            elapsedMilliseconds,
            tokensPerSecond: tokens.length / (elapsedMilliseconds / 1000),
            validated: statistics.validated,
            refuted: statistics.refuted,
            used: statistics.used,
            unused: statistics.unused
        };
    } finally {
        predictor?.dispose();
        for (const context of contexts.reverse()) await context.dispose();
        for (const model of owned) await model.dispose();
    }
}

async function resolveModel(model: string | LlamaModel, owned: LlamaModel[]): Promise<LlamaModel> {
    if (typeof model !== "string") return model;
    const llama = await sharedLlama();
    const loaded = await llama.loadModel({modelPath: model, gpuLayers: 0});
    owned.push(loaded);
    return loaded;
}
