import {loadModelBackend, type LoadModelBackendOptions} from "./loadModelBackend.js";
import type {ModelBackend} from "./ModelBackend.js";

/** A target model and, optionally, the draft that proposes tokens for it, loaded together. */
export interface ModelPair {
    readonly target: ModelBackend;
    /** Absent when no draft file was given: generation is then target-only (or uses a model-free drafter). */
    readonly draft: ModelBackend | undefined;
    /** Frees both models (draft first). Idempotent. */
    dispose(): Promise<void>;
}

/** A pair opened with a draft file: its draft is loaded. */
export interface ModelPairWithDraft extends ModelPair {
    readonly draft: ModelBackend;
}

/** The GGUF files of a pair. */
export interface ModelPairFiles {
    readonly target: string;
    readonly draft?: string;
}

/**
 * Loads a target GGUF and, when `files.draft` is given, its draft GGUF on the same backend with the
 * same options (see loadModelBackend). If the draft fails to load the target is freed before the
 * error is thrown, so a failed call leaves nothing loaded. The pair's vocabularies are checked when
 * a generation starts (a draft must read the target's token ids).
 */
export async function openModelPair(
    files: ModelPairFiles & {readonly draft: string},
    options?: LoadModelBackendOptions
): Promise<ModelPairWithDraft>;
export async function openModelPair(files: ModelPairFiles, options?: LoadModelBackendOptions): Promise<ModelPair>;
export async function openModelPair(files: ModelPairFiles, options: LoadModelBackendOptions = {}): Promise<ModelPair> {
    const target = await loadModelBackend(files.target, options);
    let draft: ModelBackend | undefined;
    try {
        draft = files.draft === undefined ? undefined : await loadModelBackend(files.draft, options);
    } catch (error) {
        await target.dispose();
        throw error;
    }
    let disposed: Promise<void> | undefined;
    return {
        target,
        draft,
        dispose() {
            disposed ??= (async () => {
                try {
                    await draft?.dispose();
                } finally {
                    await target.dispose();
                }
            })();
            return disposed;
        }
    };
}
