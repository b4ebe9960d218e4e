import {InvalidInputError} from "../errors.js";
import {Eagle3HeadBackend, isEagle3Head} from "./Eagle3HeadBackend.js";
import {defaultGpuChoice, type GpuChoice, resolveGpu} from "./gpuChoice.js";
import type {ModelBackend} from "./ModelBackend.js";
import {nativeBackendAvailable} from "./nativeAddon.js";
import {noticeNativeFallback} from "./noticeNativeFallback.js";
import {NativeBackend, type NativeBackendOptions} from "./NativeBackend.js";
import {NodeLlamaCppBackend} from "./NodeLlamaCppBackend.js";

/** The engines a model can run on. */
export const backendKinds = ["native", "node-llama-cpp"] as const;
export type BackendKind = (typeof backendKinds)[number];
/** "auto": the native backend where an addon build that serves the `gpu` choice loads, else node-llama-cpp. */
export type BackendChoice = BackendKind | "auto";

/**
 * What loadModelBackend takes: the backend, and the native backend's options (see NativeBackendOptions
 * for each); node-llama-cpp uses only `threads` and `contextSize`, runs on the CPU here and refuses a
 * `gpu` of vulkan or cuda.
 */
export type LoadModelBackendOptions = Pick<
    NativeBackendOptions,
    | "threads"
    | "contextSize"
    | "inlineBelowMilliseconds"
    | "batchedSequences"
    | "stepTokens"
    | "unifiedKvCache"
    | "treeBranches"
    | "gpu"
    | "gpuLayers"
    | "deviceSelection"
> & {
    /** Default: the SPECGATE_BACKEND environment variable, else "auto". */
    readonly backend?: BackendChoice;
};

export function parseBackendChoice(value: string, field = "backend"): BackendChoice {
    if (value === "auto" || (backendKinds as readonly string[]).includes(value)) return value as BackendChoice;
    throw new InvalidInputError(`must be one of auto, ${backendKinds.join(", ")}; got "${value}"`, field);
}

/**
 * The backend a choice resolves to on this machine, for a `gpu` choice: "auto" is native when the
 * addon build that `gpu` resolves to loads (with `gpu` auto, any build, GPU-only installs included),
 * and always for an explicit GPU, which node-llama-cpp cannot serve here.
 */
export function resolveBackend(choice: BackendChoice = defaultBackendChoice(), gpu: GpuChoice = defaultGpuChoice()): BackendKind {
    if (choice !== "auto") return choice;
    if (gpu === "vulkan" || gpu === "cuda") return "native";
    return nativeBackendAvailable(resolveGpu(gpu).build) ? "native" : "node-llama-cpp";
}

export function defaultBackendChoice(): BackendChoice {
    const fromEnvironment = process.env.SPECGATE_BACKEND;
    return fromEnvironment === undefined || fromEnvironment === "" ? "auto" : parseBackendChoice(fromEnvironment, "SPECGATE_BACKEND");
}

/**
 * Loads a GGUF on the chosen backend (see NativeBackend and NodeLlamaCppBackend for what each costs).
 * "auto" without a native addon that loads runs node-llama-cpp and says so once on stderr.
 */
export function loadModelBackend(path: string, options: LoadModelBackendOptions = {}): Promise<ModelBackend> {
    const {backend: choice, ...nativeOptions} = options;
    const chosen = choice ?? defaultBackendChoice();
    const gpu = options.gpu ?? defaultGpuChoice();
    const backend = resolveBackend(chosen, gpu);
    if (backend === "node-llama-cpp" && (options.gpu === "vulkan" || options.gpu === "cuda"))
        return Promise.reject(new InvalidInputError(`${options.gpu} needs the native backend; node-llama-cpp runs on the CPU here`, "gpu"));
    if (isEagle3Head(path))
        return backend === "native"
            ? Eagle3HeadBackend.load(path, nativeOptions)
            : Promise.reject(new InvalidInputError("an EAGLE-3 head drafts on the native backend only", "backend"));
    if (backend === "node-llama-cpp" && chosen === "auto") noticeNativeFallback(gpu);
    return backend === "native"
        ? NativeBackend.load(path, nativeOptions)
        : NodeLlamaCppBackend.load(path, {threads: options.threads, contextSize: options.contextSize});
}
