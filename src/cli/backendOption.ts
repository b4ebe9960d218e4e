import {InvalidArgumentError, Option} from "commander";
import {allGpuLayers, type GpuChoice, gpuChoices, parseGpuChoice} from "../backend/gpuChoice.js";
import {type BackendChoice, backendKinds, parseBackendChoice} from "../backend/loadModelBackend.js";
import {integerOption} from "./parseIntegerOption.js";

/** `--backend`: which engine runs the models (docs/install.md, "Backends"). */
export function backendOption(): Option {
    return new Option(
        "--backend <auto|native|node-llama-cpp>",
        "engine that runs the models: native (specgate's llama.cpp addon, built by npm install or `npx specgate build`), node-llama-cpp, " +
            "or auto (native where it is built, else node-llama-cpp, saying so on stderr; default, or the SPECGATE_BACKEND environment variable)"
    ).argParser((value: string): BackendChoice => {
        try {
            return parseBackendChoice(value);
        } catch {
            throw new InvalidArgumentError(`expected auto, ${backendKinds.join(" or ")}, got "${value}"`);
        }
    });
}

/** `--gpu`: which build of the native addon computes (docs/install.md, "Choosing a GPU"). */
export function gpuOption(): Option {
    return new Option(
        "--gpu <auto|vulkan|cuda|off>",
        "native backend: compute on the Vulkan or CUDA build of the addon (`npx specgate build --gpu vulkan`), " +
            "on the CPU (off), or auto (a GPU build that is built and finds a device, else the CPU; default). `specgate info` lists builds and devices"
    ).argParser((value: string): GpuChoice => {
        try {
            return parseGpuChoice(value);
        } catch {
            throw new InvalidArgumentError(`expected ${gpuChoices.join(", ")}, got "${value}"`);
        }
    });
}

/**
 * `--token-selection`: where argmax ids are picked at temperature 0 (docs/install.md, "Token selection
 * on the device"); the parsed value is the library's `deviceSelection` (undefined: the default rule).
 */
export function tokenSelectionOption(): Option {
    return new Option(
        "--token-selection <auto|device|host>",
        "native backend at temperature 0: pick argmax ids inside llama.cpp's graph (device: 4 bytes per row leave the GPU) " +
            "or copy each logit row to the host (host); auto (default): device on the CUDA build for vocabularies of at least 32,000 ids, else host"
    ).argParser((value: string): boolean | undefined => {
        if (value === "auto") return undefined;
        if (value === "device" || value === "host") return value === "device";
        throw new InvalidArgumentError(`expected auto, device or host, got "${value}"`);
    });
}

/** `--gpu-layers`: layers offloaded to the GPU (llama.cpp's -ngl). */
export function gpuLayersOption(): Option {
    return new Option(
        "--gpu-layers <N>",
        `native backend on a GPU: layers offloaded (llama.cpp's -ngl; default ${allGpuLayers}, all)`
    ).argParser(integerOption(0));
}
