import {InvalidInputError, NativeBackendUnavailableError} from "../errors.js";
import {type NativeBuild, type NativeDevice, nativeAddon, nativeBackendAvailable, nativeBuildPresent} from "./nativeAddon.js";

/**
 * Where the native backend computes: "vulkan" or "cuda" (the GPU addon of that name, which must be
 * built and find a device), "off" (the CPU addon), or "auto" (a GPU addon that is built and finds a
 * device, else the CPU addon).
 */
export const gpuChoices = ["auto", "vulkan", "cuda", "off"] as const;
export type GpuChoice = (typeof gpuChoices)[number];

/** Layers offloaded when a GPU is chosen and no count is given: all of them (llama.cpp's -ngl 999). */
export const allGpuLayers = 999;

/** The addon a choice resolved to, and the GPU devices it offloads to (none for the CPU addon). */
export interface ResolvedGpu {
    readonly build: NativeBuild;
    readonly devices: readonly NativeDevice[];
}

export function parseGpuChoice(value: string, field = "gpu"): GpuChoice {
    if ((gpuChoices as readonly string[]).includes(value)) return value as GpuChoice;
    throw new InvalidInputError(`must be one of ${gpuChoices.join(", ")}; got "${value}"`, field);
}

/** The choice when none is given: the SPECGATE_GPU environment variable, else "auto". */
export function defaultGpuChoice(): GpuChoice {
    const fromEnvironment = process.env.SPECGATE_GPU;
    return fromEnvironment === undefined || fromEnvironment === "" ? "auto" : parseGpuChoice(fromEnvironment, "SPECGATE_GPU");
}

export function parseGpuLayers(value: number, field = "gpuLayers"): number {
    if (!Number.isSafeInteger(value) || value < 0) throw new InvalidInputError(`must be a non-negative integer, got ${value}`, field);
    return value;
}

/** The GPU and integrated-GPU devices an addon build found (loading ggml's backends if not yet loaded). */
export function gpuDevices(build: NativeBuild): NativeDevice[] {
    return nativeAddon(build)
        .backendInfo()
        .devices.filter((device) => device.type === "gpu" || device.type === "igpu");
}

/** GPU addons "auto" tries, in order. */
const gpuBuilds: readonly Exclude<NativeBuild, "cpu">[] = ["cuda", "vulkan"];

/**
 * The addon build a choice runs on. An explicit GPU throws NativeBackendUnavailableError when its
 * addon is not built, does not load, or finds no device. "auto" takes a GPU build that finds a
 * device, else the CPU addon, else (a machine with only GPU builds, none finding a device) a GPU
 * build that loads, computing on the CPU; "cpu" when nothing loads (loading then says how to build it).
 */
export function resolveGpu(choice: GpuChoice): ResolvedGpu {
    if (choice === "off") return {build: "cpu", devices: []};
    if (choice === "auto") {
        const loadable = gpuBuilds.filter((build) => nativeBuildPresent(build) && nativeBackendAvailable(build));
        for (const build of loadable) {
            const devices = gpuDevices(build);
            if (devices.length > 0) return {build, devices};
        }
        return {build: nativeBackendAvailable("cpu") ? "cpu" : (loadable[0] ?? "cpu"), devices: []};
    }
    const devices = gpuDevices(choice);
    if (devices.length === 0)
        throw new NativeBackendUnavailableError(
            `the ${choice} native backend finds no ${choice === "vulkan" ? "Vulkan" : "CUDA"} device here${noDeviceHint(choice)}`
        );
    return {build: choice, devices};
}

/** Why a device may be missing: ggml's Vulkan backend skips CPU-type devices (Mesa's llvmpipe) unless told to use them. */
export function noDeviceHint(build: NativeBuild): string {
    if (build !== "vulkan" || process.env.GGML_VK_VISIBLE_DEVICES !== undefined) return "";
    return " (ggml skips software Vulkan devices such as Mesa's llvmpipe unless GGML_VK_VISIBLE_DEVICES names them, e.g. GGML_VK_VISIBLE_DEVICES=0)";
}

/** How a model's compute placement reads in fingerprints and reports: "CPU", or the GPU devices it offloads to. */
export function describeDevices(resolved: ResolvedGpu, gpuLayers: number): string {
    if (resolved.devices.length === 0 || gpuLayers === 0) return "CPU";
    return resolved.devices.map((device) => `${device.name} (${device.description})`).join(", ");
}
