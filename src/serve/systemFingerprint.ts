import type {ModelBackend} from "../backend/ModelBackend.js";
import type {DecodePathDescription} from "../decodePaths/DecodePath.js";
import {drafterLabel, drafterUsesModel} from "../engine/drafters/parseDrafterSpec.js";
import {canonicalJson} from "../fingerprint/canonicalJson.js";
import {decodePathFingerprint} from "../fingerprint/decodePathFingerprint.js";
import type {ResolvedDecodePath} from "./resolveDecodePath.js";
import {treeShapeLabel} from "../engine/drafters/TreeDraftSession.js";

/** The sampler values the server uses where a request leaves them out. */
export interface SamplerDefaults {
    readonly temperature: number;
    readonly topK: number;
    readonly topP: number;
    readonly minP: number;
}

export interface FingerprintSources {
    readonly target: ModelBackend;
    readonly draft: ModelBackend | undefined;
    /** The GGUF files, hashed by content; without them (in-memory test backends) the vocabulary identities stand in. */
    readonly files?: {readonly target: string; readonly draft?: string};
    readonly samplerDefaults: SamplerDefaults;
    readonly chatTemplate: string;
}

/**
 * The description of the decode path one request takes, for `system_fingerprint` (the drift article): model
 * file hashes, drafter (with its parameters), policy, γ, draft settings, sampler defaults, chat template and
 * how many sequences share a batch (batched rows may differ from lone ones in the last bits); the engine versions
 * and the native binary's hash are added by decodePathFingerprint. Target-only requests leave the
 * draft out, so swapping the draft changes only the speculative arm's fingerprint. Per-request
 * sampler values are not included: they are in the request the client sent.
 */
export function servedDecodePathDescription(
    sources: FingerprintSources,
    path: ResolvedDecodePath,
    correctionMemory?: CorrectionMemoryState
): DecodePathDescription {
    const speculative = path.mode === "speculative";
    // The draft model is part of the path only when the drafter drafts with it.
    const usesDraft = speculative && drafterUsesModel(path.drafter);
    const files: Record<string, string> = {};
    if (sources.files !== undefined) {
        files.target = sources.files.target;
        if (usesDraft && sources.files.draft !== undefined) files.draft = sources.files.draft;
    }
    const parameters: Record<string, unknown> = {
        server: "specgate serve",
        speculative,
        samplerDefaults: sources.samplerDefaults,
        chatTemplate: sources.chatTemplate,
        batchedSequences: sources.target.batchedSequences ?? 1,
        ...(speculative
            ? {
                  drafter: drafterLabel(path.drafter),
                  policy: path.policy,
                  gamma: path.gamma,
                  draftSampling: path.draftSampling,
                  draftLength: path.draftLength,
                  ...(path.maxGamma !== undefined ? {maxGamma: path.maxGamma} : {}),
                  minConfidence: path.minConfidence,
                  // A tree's rows come from batches laid out otherwise than a chain's.
                  ...(path.tree !== undefined ? {tree: treeShapeLabel(path.tree)} : {})
              }
            : {}),
        ...(speculative && path.policy.kind === "calibrated" && correctionMemory !== undefined ? {correctionMemory} : {})
    };
    if (sources.files === undefined) {
        parameters.targetVocabulary = sources.target.vocabularyIdentity();
        if (usesDraft) parameters.draftVocabulary = sources.draft?.vocabularyIdentity() ?? null;
    }
    return {kind: "embedded", parameters, files};
}

/** The correction memory a calibrated request starts from: whether it learns across requests, and its version. */
export interface CorrectionMemoryState {
    readonly learning: boolean;
    readonly version: number;
}

/**
 * Memoised system fingerprints: one hash per distinct decode path, computed on first use. The most
 * recently used `capacity` are kept (a learning correction memory makes a new path per version).
 */
export class SystemFingerprints {
    private readonly cache = new Map<string, Promise<string>>();

    public constructor(
        private readonly sources: FingerprintSources,
        private readonly capacity = 256
    ) {}

    public for(path: ResolvedDecodePath, correctionMemory?: CorrectionMemoryState): Promise<string> {
        const description = servedDecodePathDescription(this.sources, path, correctionMemory);
        const key = canonicalJson(description);
        let fingerprint = this.cache.get(key);
        if (fingerprint !== undefined) {
            this.cache.delete(key);
            this.cache.set(key, fingerprint);
        } else {
            while (this.cache.size >= this.capacity) this.cache.delete(this.cache.keys().next().value!);
            // OpenAI's fingerprints look like "fp_…"; the full sha256 keeps collisions out of the question.
            fingerprint = decodePathFingerprint(description).then((result) => `fp_${result.fingerprint}`);
            this.cache.set(key, fingerprint);
            fingerprint.catch(() => this.cache.delete(key));
        }
        return fingerprint;
    }
}
