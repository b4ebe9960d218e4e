import {DraftHeadMismatchError, InvalidInputError, ModelLoadError} from "../errors.js";
import {backendSizes, positiveInteger} from "./backendSizes.js";
import {Eagle3HeadBatcher} from "./Eagle3HeadBatcher.js";
import type {NativeEagle3HeadHandle} from "./Eagle3HeadHandle.js";
import {defaultGpuChoice, describeDevices, parseGpuLayers, allGpuLayers, resolveGpu} from "./gpuChoice.js";
import type {BackendSequence, BatchStatistics, LayerSource, ModelBackend} from "./ModelBackend.js";
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

/** How an EAGLE-3 head is loaded: the native backend's options, and whether slots of a shared target context draft together. */
export interface Eagle3HeadOptions extends NativeBackendOptions {
    /**
     * Slots of a target context shared by several sequences (continuous batching in serve) draft on one
     * head context, one head sequence each, several slots' drafts in shared decodes (default true);
     * false: a head context of its own per target sequence, each drafting alone.
     */
    readonly batchedHeads?: boolean;
}

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
 * target keep the layers the head reads) and opens a head per target sequence (openHead): a context of
 * its own, or, for the slots of a shared target context, a head sequence of one context shared by all
 * of them (Eagle3HeadBatcher), where the drafts several slots ask for at once run in shared decodes.
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
    /** The head groups of shared target contexts, by context. */
    private readonly groups = new Map<unknown, Eagle3HeadBatcher>();

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
        public readonly inlineBelowMilliseconds: number,
        /** Eagle3HeadOptions.batchedHeads. */
        public readonly batchedHeads: boolean
    ) {
        this.contextSize = contextSize;
        this.bosToken = model.bosToken;
        this.eosToken = model.eosToken;
    }

    /**
     * Loads an eagle3 GGUF on the native backend's addon (the target's must be the same build). A file
     * without eagle3.target_layers (three ids) or eagle3.target_hidden_size is a ModelLoadError.
     */
    public static load(path: string, options: Eagle3HeadOptions = {}): Promise<Eagle3HeadBackend> {
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
                options.inlineBelowMilliseconds ?? 20,
                options.batchedHeads ?? true
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
            if (this.batchedHeads && (source.slots ?? 1) > 1) return this.group(source).openHead(source.sequence);
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

    /**
     * The shared head calls so far, summed over the target contexts: calls as steps, slots' drafts as
     * submissions (÷ steps = sequences per head decode); undefined before the first.
     */
    public get batchStatistics(): BatchStatistics | undefined {
        if (this.groups.size === 0) return undefined;
        const total = {
            steps: 0,
            tokens: 0,
            submissions: 0,
            largestStep: 0,
            gatherMilliseconds: 0,
            decodeMilliseconds: 0,
            deferredRemovals: 0
        };
        for (const {stats} of this.groups.values()) {
            total.steps += stats.calls;
            total.tokens += stats.tokens;
            total.submissions += stats.sequences;
            total.largestStep = Math.max(total.largestStep, stats.largest);
            total.gatherMilliseconds += stats.gatherMilliseconds;
            total.decodeMilliseconds += stats.decodeMilliseconds;
        }
        return total;
    }

    /** The head group of a shared target context, made at its first slot's head. */
    private group(source: LayerSource): Eagle3HeadBatcher {
        const existing = this.groups.get(source.context);
        if (existing !== undefined) return existing;
        const group = new Eagle3HeadBatcher(
            new this.addon.Eagle3HeadGroup(this.model, source.context as NativeContextHandle, {
                contextSize: this.contextSize,
                threads: this.threads,
                slots: source.slots ?? 1
            })
        );
        this.groups.set(source.context, group);
        return group;
    }

    public dispose(): Promise<void> {
        if (!this.disposed) {
            this.disposed = true;
            for (const group of this.groups.values()) group.dispose();
            this.groups.clear();
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
