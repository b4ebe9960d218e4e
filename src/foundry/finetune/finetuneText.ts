import {InvalidInputError} from "../../errors.js";
import {documentSeparator} from "../corpus/writeCorpus.js";

/** The single text file llama-finetune reads, and how its windows divide into training and validation. */
export interface FinetuneText {
    readonly text: string;
    /** Tokens of `text` as llama-finetune sees them, counting the BOS it prepends. */
    readonly tokens: number;
    /** Training documents used (cycled when the step budget exceeds one pass over the corpus). */
    readonly trainDocuments: number;
    readonly validationDocuments: number;
    /** Windows of contextLength tokens per epoch, one optimizer step each. */
    readonly trainWindows: number;
    readonly validationWindows: number;
    /** The --val-split fraction that puts exactly `trainWindows` windows in training. */
    readonly validationSplit: number;
}

export interface FinetuneTextOptions {
    readonly contextLength: number;
    /** Training windows wanted per epoch; undefined: one pass over the training documents. */
    readonly trainWindows?: number;
    /** Tokens of one document without BOS (the project tokenizer's count). */
    readonly countTokens: (text: string) => number;
}

/**
 * Lays out llama-finetune's input. llama-finetune tokenises one text (BOS once, at the start), cuts
 * it into windows of n_ctx tokens at a stride of n_ctx/2 (common_opt_dataset_init), trains one
 * AdamW step per window in file order and evaluates the last `--val-split` share of windows. So the
 * text is the training documents, then the validation documents, and the split is chosen so that
 * every training window ends before the first validation token. Validation windows start at a
 * multiple of the stride, so the first one may still read up to half a window of training text:
 * a loss over ≥ hundreds of windows barely moves. Training documents are cycled (in their shuffled
 * order) until the windows wanted are covered, so a step budget never depends on the corpus size.
 */
export function finetuneText(train: readonly string[], validation: readonly string[], options: FinetuneTextOptions): FinetuneText {
    const context = options.contextLength;
    if (!Number.isSafeInteger(context) || context < 8 || context % 2 !== 0)
        throw new InvalidInputError(`must be an even integer >= 8, got ${context}`, "contextLength");
    if (train.length === 0) throw new InvalidInputError("the corpus has no training documents", "train.txt");
    if (validation.length === 0) throw new InvalidInputError("the corpus has no validation documents", "validation.txt");
    const stride = context / 2;
    const separatorTokens = options.countTokens(documentSeparator);

    // Training part: BOS + documents joined by the separator, until the wanted windows fit.
    const parts: string[] = [];
    let trainTokens = 1;
    const wantedTokens = options.trainWindows === undefined ? undefined : (options.trainWindows - 1) * stride + context + 1;
    for (let index = 0; ; index++) {
        if (wantedTokens === undefined ? index === train.length : trainTokens >= wantedTokens) break;
        const document = train[index % train.length];
        trainTokens += (parts.length > 0 ? separatorTokens : 0) + options.countTokens(document);
        parts.push(document);
    }
    const trainWindows = Math.floor((trainTokens - context - 1) / stride) + 1;
    if (trainWindows < 1)
        throw new InvalidInputError(
            `the training documents hold ${trainTokens} tokens, fewer than one window of ${context + 1}`,
            "train.txt"
        );

    let validationTokens = 0;
    for (const document of validation) validationTokens += separatorTokens + options.countTokens(document);
    const tokens = trainTokens + validationTokens;
    const windows = Math.floor((tokens - context - 1) / stride);
    const validationWindows = windows - trainWindows;
    if (validationWindows < 1)
        throw new InvalidInputError(
            `the validation documents hold ${validationTokens} tokens, too few for one window of ${context + 1}`,
            "validation.txt"
        );
    // llama-finetune computes int64(windows × (1 − split)) in float32; aiming half a window past
    // the boundary makes the truncation land on trainWindows whatever the rounding.
    const validationSplit = 1 - (trainWindows + 0.5) / windows;
    // No trailing newline: llama.cpp drops one from --file, which would shift the count.
    const text = `${parts.join(documentSeparator)}${documentSeparator}${validation.join(documentSeparator)}`;
    return {
        text,
        tokens,
        trainDocuments: parts.length,
        validationDocuments: validation.length,
        trainWindows,
        validationWindows,
        validationSplit
    };
}
