import {DraftHeadMismatchError, InvalidInputError, ModelLoadError} from "../errors.js";
import {backendSizes, positiveInteger} from "./backendSizes.js";
import type {NativeEagle3HeadHandle} from "./Eagle3HeadHandle.js";
import {defaultGpuChoice, describeDevices, parseGpuLayers, allGpuLayers, resolveGpu} from "./gpuChoice.js";
import type {BackendSequence, ModelBackend} from "./ModelBackend.js";
import {
    type NativeAddon,
    type NativeBuild,
    type NativeContextHandle,
    type NativeModelHandle,
    nativeAddon,
    openNativeModel
} from "./nativeAddon.js";
import type {NativeBackend, NativeBackendOptions} from "./NativeBackend.js";
import {readModelHeader} from "./readModelHeader.js";
import {describeVocabulary, type VocabularyDescription} from "./VocabularyDescription.js";
import {vocabularyIdentity} from "./vocabularyIdentity.js";

/** What an EAGLE-3 head reads of its target: three layers' inputs, of the target's hidden size. */
export interface Eagle3Target {
    readonly targetLayers: readonly number[];
    readonly targetHiddenSize: number;
}

/**
 * An EAGLE-3 draft head (a GGUF of llama.cpp's `eagle3` architecture, as its converter writes published
 * heads, or specgate's foundry): a one-layer decoder that drafts from the target's own hidden states.
 * It is a ModelBackend for its vocabulary (the target's tokenizer, which pairing checks) but cannot
 * decode on its own: the eagle3 drafter pairs it with a native target (pairWith, which makes the
 * target keep the layers the head reads) and opens a head per target sequence (openHead).
 */
export class Eagle3HeadBackend implements ModelBackend, Eagle3Target {
    public readonly backendKind = "native";
    public readonly architecture = "eagle3";
    public readonly bosToken: number | undefined;
    public readonly eosToken: number | undefined;
    /** Positions the head's KV cache holds: the contextSize option (or its GGUF's), then that of the target pairWith was given. */
    public contextSize: number;
    private paired = false;
    private disposed = false;

    private constructor(
        private readonly addon: NativeAddon,
        public readonly nativeBuild: NativeBuild,
        public readonly device: string,
        private readonly model: NativeModelHandle,
        private readonly identity: string,
        private readonly vocabulary: VocabularyDescription,
        public readonly vocabularySize: number,
        public readonly targetLayers: readonly number[],
        public readonly targetHiddenSize: number,
        private readonly threads: number,
        private readonly path: string,
        contextSize: number,
        /** NativeBackendOptions.inlineBelowMilliseconds: small drafts cheaper than this run on the JS thread. */
        public readonly inlineBelowMilliseconds: number
    ) {
        this.contextSize = contextSize;
        this.bosToken = model.bosToken;
        this.eosToken = model.eosToken;
    }

    /**
     * Loads an eagle3 GGUF on the native backend's addon (the target's must be the same build). A file
     * without eagle3.target_layers (three ids) or eagle3.target_hidden_size is a ModelLoadError.
     */
    public static load(path: string, options: NativeBackendOptions = {}): Promise<Eagle3HeadBackend> {
        const threads = positiveInteger(options.threads ?? 1, "threads");
        const {header, vocabularySize, eagle3, trainedContextLength} = readModelHeader(path);
        const {contextSize} = backendSizes(options, trainedContextLength);
        if (eagle3 === undefined) throw new ModelLoadError("corrupt", "is not an EAGLE-3 head (general.architecture eagle3)", path);
        if (eagle3.targetLayers.length !== 3 || eagle3.targetHiddenSize === undefined)
            throw new ModelLoadError("corrupt", "an EAGLE-3 head needs eagle3.target_layers (3 ids) and eagle3.target_hidden_size", path);
        const resolved = resolveGpu(options.gpu ?? defaultGpuChoice());
        const gpuLayers = resolved.build === "cpu" ? 0 : parseGpuLayers(options.gpuLayers ?? allGpuLayers);
        const addon = nativeAddon(resolved.build);
        const model = openNativeModel(addon, path, gpuLayers);
        return Promise.resolve(
            new Eagle3HeadBackend(
                addon,
                resolved.build,
                describeDevices(resolved, gpuLayers),
                model,
                vocabularyIdentity(header.metadata),
                describeVocabulary(header.metadata),
                vocabularySize,
                eagle3.targetLayers,
                eagle3.targetHiddenSize,
                threads,
                path,
                contextSize,
                options.inlineBelowMilliseconds ?? 20
            )
        );
    }

    public tokenize(text: string): number[] {
        return Array.from(this.model.tokenize(text, false));
    }

    public tokenizeWithSpecialTokens(text: string): number[] {
        return Array.from(this.model.tokenize(text, true));
    }

    public detokenize(tokens: readonly number[]): string {
        return this.model.detokenize(Int32Array.from(tokens));
    }

    public vocabularyIdentity(): string {
        return this.identity;
    }

    public vocabularyDescription(): VocabularyDescription {
        return this.vocabulary;
    }

    /** A head drafts only beside its target (the eagle3 drafter): an InvalidInputError naming `draft`. */
    public createSequence(): Promise<BackendSequence> {
        return Promise.reject(
            new InvalidInputError(
                `${this.path} is an EAGLE-3 head: it drafts with the eagle3 drafter beside its target and cannot decode on its own`,
                "draft"
            )
        );
    }

    /**
     * Checks that the head can read `target` (a native backend of the same build, with the layers and
     * hidden size the head was trained on: a DraftHeadMismatchError naming `field` otherwise) and makes
     * the target keep those layers' inputs from its next sequence on.
     */
    public pairWith(target: ModelBackend, field = "draft"): void {
        if (this.disposed) throw new InvalidInputError("the head is disposed", field);
        const native = target as Partial<NativeBackend>;
        if (target.backendKind !== "native" || native.enableLayerCapture === undefined || native.shape === undefined)
            throw new DraftHeadMismatchError("an EAGLE-3 head drafts for a target on the native backend only", field);
        if (target.nativeBuild !== this.nativeBuild)
            throw new DraftHeadMismatchError(
                `the head is loaded on the ${this.nativeBuild} build and the target on the ${target.nativeBuild} one`,
                field
            );
        assertHeadFitsTarget(this, native.shape, field);
        native.enableLayerCapture(this.targetLayers);
        this.contextSize = target.contextSize;
        this.paired = true;
    }

    /**
     * A head drafting for `targetSequence` (a sequence of the target pairWith was given, created after
     * it): its own KV cache, its rows from the target's captured layers.
     */
    public openHead(targetSequence: BackendSequence, field = "draft"): NativeEagle3HeadHandle {
        if (this.disposed) throw new InvalidInputError("the head is disposed", field);
        if (!this.paired) throw new InvalidInputError("the head is not paired with a target (pairWith)", field);
        const source = targetSequence.layerSource?.();
        if (source === undefined)
            throw new DraftHeadMismatchError("the target's sequence is not on the native backend: an EAGLE-3 head cannot read it", field);
        try {
            return new this.addon.Eagle3Head(this.model, source.context as NativeContextHandle, source.sequence, {
                contextSize: this.contextSize,
                threads: this.threads
            });
        } catch (error) {
            const message = (error as Error).message;
            if (message.includes("without captureLayers"))
                throw new DraftHeadMismatchError(
                    "the target's sequence was made before the head was paired with the target (pairWith, or the first generation with this draft): its decodes keep no layers for the head",
                    field
                );
            if (error instanceof TypeError || error instanceof RangeError) throw new DraftHeadMismatchError(message, field);
            throw error;
        }
    }

    public dispose(): Promise<void> {
        if (!this.disposed) {
            this.disposed = true;
            this.model.dispose();
        }
        return Promise.resolve();
    }
}

/** The head's layers must be layers of the target, and its fc must read the target's hidden size. */
export function assertHeadFitsTarget(
    head: Eagle3Target,
    target: {readonly blockCount: number | undefined; readonly embeddingLength: number | undefined},
    field = "draft"
): void {
    const {blockCount, embeddingLength} = target;
    if (blockCount !== undefined)
        for (const layer of head.targetLayers)
            if (!Number.isInteger(layer) || layer < 0 || layer >= blockCount)
                throw new DraftHeadMismatchError(
                    `the head reads target layer ${layer} (eagle3.target_layers ${head.targetLayers.join(", ")}), ` +
                        `but the target has ${blockCount} layers (0–${blockCount - 1})`,
                    field
                );
    if (embeddingLength !== undefined && head.targetHiddenSize !== embeddingLength)
        throw new DraftHeadMismatchError(
            `the head reads hidden states of width ${head.targetHiddenSize} (eagle3.target_hidden_size), ` +
                `but the target's are ${embeddingLength} wide`,
            field
        );
}

/** Whether `path` is a readable GGUF of the eagle3 architecture (false for anything else, unreadable files included). */
export function isEagle3Head(path: string): boolean {
    try {
        return readModelHeader(path).architecture === "eagle3";
    } catch {
        return false;
    }
}
