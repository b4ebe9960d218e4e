import {existsSync, readFileSync} from "node:fs";
import {readFile} from "node:fs/promises";
import {createRequire} from "node:module";
import {arch, platform} from "node:os";
import {dirname, join, relative, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {hashFile} from "./hashFile.js";

/** Versions and the native binary that decide what numbers the embedded engine computes. */
export interface EngineIdentity {
    readonly specgateVersion: string;
    readonly nodeLlamaCppVersion: string | null;
    /** The engine: specgate's native addon, or node-llama-cpp. */
    readonly backend: "native" | "node-llama-cpp";
    /**
     * The binary that computes: node-llama-cpp's prebuilt llama.cpp addon (path relative to
     * node_modules), or specgate's native addon (relative to the package root), built from the
     * llama.cpp release node-llama-cpp bundles.
     */
    readonly nativeBinary: {readonly path: string; readonly sha256: string} | null;
    readonly platform: string;
    /**
     * Native backend on a GPU build (native/build/<gpu>/): the build and the devices it offloads to.
     * Absent on the CPU addon, so CPU fingerprints are what they were before GPU builds existed.
     */
    readonly gpu?: {readonly build: "vulkan" | "cuda"; readonly device: string};
    /**
     * "device" where ids are picked inside llama.cpp's graph (NativeBackendOptions.deviceSelection): an
     * exact tie of the largest logit may then give another id than the host's lowest-id rule, and a draw
     * at T > 0 another token for the same seed (deviceDraw). Absent
     * where the host picks them, so such fingerprints are what they were before device selection existed.
     */
    readonly tokenSelection?: "device";
    /**
     * With tokenSelection "device": how a draw at T > 0 is made (deviceDrawIdentity). The uniforms are
     * the generation's own, as on the host, but the inverse CDF runs in float32 over the candidates in
     * the order top-k and top-p sort them, so the same seed can give another (equally likely) text. On
     * the Vulkan build, whose devices pick argmax ids only, draws are made on the host from the rows
     * the device keeps (hostRowDrawIdentity).
     */
    readonly deviceDraw?: typeof deviceDrawIdentity | typeof hostRowDrawIdentity;
}

/**
 * The device draw's rule, versioned: the generation's xoshiro128** uniforms, one per token; softmax,
 * cumulative sum and search in float32 inside the graph (native/src/DeviceDraw.h), over the ids in
 * vocabulary order or in the order top-k and top-p leave them. Strict verification of a draft model's
 * tokens takes residualCandidates uniforms per target row and samples a rejection's residual from
 * those draws (src/engine/residualDraw.ts), so its text for a seed differs from the host's.
 */
export const deviceDrawIdentity = "xoshiro128**-uniform/f32-inverse-cdf/residual-candidates/v2";

/**
 * The draw's rule where the device selects argmax ids only (the Vulkan build's fixed argmax chains,
 * native/src/DeviceSelection.h): the rows cross and the addon draws on the host, in float64 by
 * SeededChance.choose's inverse CDF over the ids in vocabulary order; verification takes the seed's
 * uniforms as on the device (residualCandidates per target row for a draft model's tokens).
 */
export const hostRowDrawIdentity = "xoshiro128**-uniform/host-f64-inverse-cdf/residual-candidates/v2";

/** The draw's rule of a build that selects tokens on the device. */
export function drawIdentity(gpu: EngineIdentity["gpu"]): typeof deviceDrawIdentity | typeof hostRowDrawIdentity {
    return gpu?.build === "vulkan" ? hostRowDrawIdentity : deviceDrawIdentity;
}

const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * node-llama-cpp with `gpu: false, build: "never"` (as NodeLlamaCppBackend loads it) uses the
 * prebuilt `llama-addon.node` of the `@node-llama-cpp/<platform>-<arch>` package; a local build
 * under node-llama-cpp/llama/localBuilds would take precedence, so it is looked for first.
 * Hashing the binary closes the drift article's admitted gap: a kernel change with an unchanged config
 * changes the fingerprint.
 */
export async function engineIdentity(
    backend: "native" | "node-llama-cpp" = "node-llama-cpp",
    gpu?: EngineIdentity["gpu"],
    tokenSelection?: "device"
): Promise<EngineIdentity> {
    const specgate = JSON.parse(await readFile(join(repositoryRoot, "package.json"), "utf8")) as {version: string};
    const require = createRequire(join(repositoryRoot, "package.json"));
    let nodeLlamaCppVersion: string | null = null;
    let packageDirectory: string | null = null;
    packageDirectory = packageDirectoryOf(require, "node-llama-cpp");
    if (packageDirectory !== null)
        nodeLlamaCppVersion = (JSON.parse(await readFile(join(packageDirectory, "package.json"), "utf8")) as {version: string}).version;
    const target = `${platform()}-${arch()}`;
    if (backend === "native") {
        // A GPU build's own addon; the prebuilt libraries beside it are those of nodeLlamaCppVersion.
        const binary = join(repositoryRoot, "native", "build", ...(gpu === undefined ? [] : [gpu.build]), "specgate_native.node");
        const sha256 = existsSync(binary) ? await hashFile(binary) : null;
        return {
            specgateVersion: specgate.version,
            nodeLlamaCppVersion,
            backend,
            nativeBinary: sha256 === null ? null : {path: relative(repositoryRoot, binary), sha256},
            platform: target,
            ...(gpu === undefined ? {} : {gpu: {build: gpu.build, device: gpu.device}}),
            ...(tokenSelection === undefined ? {} : {tokenSelection, deviceDraw: drawIdentity(gpu)})
        };
    }
    const candidates = [
        ...(packageDirectory === null ? [] : [join(packageDirectory, "llama", "localBuilds", target, "Release", "llama-addon.node")]),
        ...[packageDirectoryOf(require, `@node-llama-cpp/${target}`)]
            .filter((directory) => directory !== null)
            .map((directory) => join(directory, "bins", target, "llama-addon.node"))
    ];
    let nativeBinary: EngineIdentity["nativeBinary"] = null;
    for (const candidate of candidates) {
        try {
            nativeBinary = {path: relative(join(repositoryRoot, "node_modules"), candidate), sha256: await hashFile(candidate)};
            break;
        } catch {
            // Try the next candidate.
        }
    }
    return {specgateVersion: specgate.version, nodeLlamaCppVersion, backend, nativeBinary, platform: target};
}

/**
 * The folder of an installed package, found from its resolved entry point by walking up to its
 * package.json (packages with an `exports` map do not export package.json itself); null when absent.
 */
function packageDirectoryOf(require: NodeJS.Require, name: string): string | null {
    let directory: string;
    try {
        directory = dirname(require.resolve(name));
    } catch {
        const fallback = join(repositoryRoot, "node_modules", name);
        return existsSync(join(fallback, "package.json")) ? fallback : null;
    }
    while (dirname(directory) !== directory) {
        const manifest = join(directory, "package.json");
        if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as {name?: string}).name === name) return directory;
        directory = dirname(directory);
    }
    return null;
}
