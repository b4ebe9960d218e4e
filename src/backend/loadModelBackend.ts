import {InvalidInputError} from "../errors.js";
import type {GpuChoice} from "./gpuChoice.js";
import type {ModelBackend} from "./ModelBackend.js";
import {nativeBackendAvailable} from "./nativeAddon.js";
import {NativeBackend} from "./NativeBackend.js";
import {NodeLlamaCppBackend} from "./NodeLlamaCppBackend.js";

/** The engines a model can run on. */
export const backendKinds = ["native", "node-llama-cpp"] as const;
export type BackendKind = (typeof backendKinds)[number];
/** "auto": the native backend where its addon is built, else node-llama-cpp. */
export type BackendChoice = BackendKind | "auto";

export interface LoadModelBackendOptions {
    /** Default: the SPECGATE_BACKEND environment variable, else "auto". */
    readonly backend?: BackendChoice;
    /** CPU threads per evaluation. Default 1. */
    readonly threads?: number;
    readonly contextSize?: number;
    /** Native backend: evaluations cheaper than this run inline on the main thread (see NativeBackendOptions). */
    readonly inlineBelowMilliseconds?: number;
    /** Native backend: up to this many sequences are decoded together on one shared context (see NativeBackendOptions). */
    readonly batchedSequences?: number;
    /** Native backend: most tokens one shared step decodes. */
    readonly stepTokens?: number;
    /** Native backend: one KV buffer for all batched sequences instead of one stream each (see NativeBackendOptions). */
    readonly unifiedKvCache?: boolean;
    /** Native backend: branches of the token trees batched sequences may decode (see NativeBackendOptions). */
    readonly treeBranches?: number;
    /**
     * Native backend: "vulkan" or "cuda" (that GPU build of the addon; it must be built and find a
     * device), "off" (the CPU addon), or "auto" (a GPU build that is built and finds a device, else
     * the CPU addon; the default). node-llama-cpp runs on the CPU here and refuses vulkan and cuda.
     */
    readonly gpu?: GpuChoice;
    /** Native backend on a GPU: layers offloaded (llama.cpp's -ngl). Default: all (999). */
    readonly gpuLayers?: number;
}

export function parseBackendChoice(value: string, field = "backend"): BackendChoice {
    if (value === "auto" || (backendKinds as readonly string[]).includes(value)) return value as BackendChoice;
    throw new InvalidInputError(`must be one of auto, ${backendKinds.join(", ")}; got "${value}"`, field);
}

/** The backend a choice resolves to on this machine. */
export function resolveBackend(choice: BackendChoice = defaultBackendChoice()): BackendKind {
    if (choice !== "auto") return choice;
    return nativeBackendAvailable() ? "native" : "node-llama-cpp";
}

export function defaultBackendChoice(): BackendChoice {
    const fromEnvironment = process.env.SPECGATE_BACKEND;
    return fromEnvironment === undefined || fromEnvironment === "" ? "auto" : parseBackendChoice(fromEnvironment, "SPECGATE_BACKEND");
}

/** Loads a GGUF on the chosen backend (see NativeBackend and NodeLlamaCppBackend for what each costs). */
export function loadModelBackend(path: string, options: LoadModelBackendOptions = {}): Promise<ModelBackend> {
    const settings = {threads: options.threads, contextSize: options.contextSize};
    const backend = resolveBackend(options.backend ?? defaultBackendChoice());
    if (backend === "node-llama-cpp" && (options.gpu === "vulkan" || options.gpu === "cuda"))
        return Promise.reject(new InvalidInputError(`${options.gpu} needs the native backend; node-llama-cpp runs on the CPU here`, "gpu"));
    return backend === "native"
        ? NativeBackend.load(path, {
              ...settings,
              inlineBelowMilliseconds: options.inlineBelowMilliseconds,
              batchedSequences: options.batchedSequences,
              stepTokens: options.stepTokens,
              unifiedKvCache: options.unifiedKvCache,
              treeBranches: options.treeBranches,
              gpu: options.gpu,
              gpuLayers: options.gpuLayers
          })
        : NodeLlamaCppBackend.load(path, settings);
}
