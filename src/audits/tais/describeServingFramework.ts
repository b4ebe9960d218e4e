import type {DecodePathDescription} from "../../decodePaths/DecodePath.js";
import type {EngineVersions} from "../../fingerprint/engineVersions.js";

/** ggml's version and commit as the loaded native addon reports them. */
export interface NativeEngineBuild {
    readonly ggmlVersion: string;
    readonly ggmlCommit: string;
}

/**
 * The TAIS card's serving_framework for an embedded decode path: the engine that decoded (specgate's
 * native addon, and which build of it, or node-llama-cpp, chosen or fallen back to), its versions, and the device
 * it computed on, from what the path reports about itself.
 */
export function describeServingFramework(path: DecodePathDescription, versions: EngineVersions, native: NativeEngineBuild | null): string {
    const specgate = `specgate ${versions.specgate}`;
    if (path.backend === "native") {
        const build = path.gpu?.build ?? "cpu";
        const ggml = native === null ? "" : ` (ggml ${native.ggmlVersion}, commit ${native.ggmlCommit})`;
        return `${specgate}, native llama.cpp addon, ${build} build${ggml}, on ${path.gpu?.device ?? "CPU"}`;
    }
    if (path.backend === "node-llama-cpp") {
        const llamaCpp = versions.llamaCppRelease === null ? "" : `, llama.cpp ${versions.llamaCppRelease}`;
        return `${specgate}, node-llama-cpp ${versions.nodeLlamaCpp ?? "(version unknown)"} backend (its prebuilt binaries${llamaCpp}; not specgate's addon), on CPU`;
    }
    return `${specgate} embedded engine (in-process backend that does not name its engine)`;
}
