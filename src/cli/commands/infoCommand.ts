import {existsSync} from "node:fs";
import {dirname, join, relative} from "node:path";
import {fileURLToPath} from "node:url";
import type {Command} from "commander";
import {noDeviceHint, resolveGpu} from "../../backend/gpuChoice.js";
import {
    type NativeBackendInfo,
    type NativeBuild,
    buildCommandOf,
    nativeAddon,
    nativeAddonPathOf,
    nativeBuilds
} from "../../backend/nativeAddon.js";
import {type EngineVersions, engineVersions} from "../../fingerprint/engineVersions.js";
import {writeJsonOutput} from "../writeJsonOutput.js";

/** One addon build: where it is, whether it loads, and what it computes with. */
export interface AddonBuildReport {
    readonly build: NativeBuild;
    /** Relative to the package root. */
    readonly path: string;
    readonly present: boolean;
    /** Why a present build does not load here; null when it loads or is absent. */
    readonly error: string | null;
    /** ggml's version and commit, the backends loaded and the devices found; null unless it loads. */
    readonly info: NativeBackendInfo | null;
}

export interface InfoReport {
    readonly versions: EngineVersions;
    readonly builds: readonly AddonBuildReport[];
    /** The build `--gpu auto` picks here, and the devices it offloads to. */
    readonly auto: {readonly build: NativeBuild; readonly devices: readonly string[]};
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** Every addon build's presence and, where it loads, its backends and devices (loading each present build). */
export function collectInfo(): InfoReport {
    const builds = nativeBuilds.map((build): AddonBuildReport => {
        const path = nativeAddonPathOf(build);
        const report = {build, path: relative(root, path), present: existsSync(path)};
        if (!report.present) return {...report, error: null, info: null};
        try {
            return {...report, error: null, info: nativeAddon(build).backendInfo()};
        } catch (error) {
            return {...report, error: (error as Error).message, info: null};
        }
    });
    const auto = resolveGpu("auto");
    return {
        versions: engineVersions(),
        builds,
        auto: {build: auto.build, devices: auto.devices.map((device) => device.name)}
    };
}

function gibibytes(bytes: number): string {
    return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

/** The report as `llama-cli --list-devices` would show it, one build after another. */
export function formatInfo(report: InfoReport): string {
    const {versions} = report;
    const lines = [
        `specgate ${versions.specgate}, node-llama-cpp ${versions.nodeLlamaCpp ?? "not installed"}, llama.cpp ${versions.llamaCppRelease ?? "unknown"}`,
        "native addon builds:"
    ];
    for (const build of report.builds) {
        if (!build.present) {
            lines.push(`  ${build.build}: not built (${buildCommandOf(build.build)})`);
            continue;
        }
        if (build.info === null) {
            lines.push(`  ${build.build}: ${build.path} does not load: ${build.error}`);
            continue;
        }
        const {info} = build;
        lines.push(`  ${build.build}: ${build.path}, ggml ${info.ggmlVersion} (${info.ggmlCommit}), backends ${info.backends.join(", ")}`);
        for (const device of info.devices)
            lines.push(
                `    ${device.name}: ${device.description} (${device.type}, ${gibibytes(device.memoryFree)} free of ${gibibytes(device.memoryTotal)})`
            );
        if (build.build === "cpu") continue;
        const library = join(dirname(build.path), `libggml-${build.build}.so`);
        if (!info.backends.some((backend) => backend.toLowerCase() === build.build))
            lines.push(`    ${library} did not load (\`ldd ${library}\` names what it lacks)`);
        else if (!info.devices.some((device) => device.type === "gpu" || device.type === "igpu"))
            lines.push(`    no GPU device found${noDeviceHint(build.build)}`);
    }
    lines.push(`--gpu auto computes on: ${autoPlacement(report)}`);
    return lines.join("\n") + "\n";
}

/** What `--gpu auto` (with `--backend auto`) runs on: an addon build that loads, else node-llama-cpp. */
function autoPlacement(report: InfoReport): string {
    const {build, devices} = report.auto;
    if (report.builds.find((candidate) => candidate.build === build)?.info == null)
        return `node-llama-cpp, because no native addon loads here (\`${buildCommandOf("cpu")}\` builds it)`;
    return build === "cpu" ? "the CPU addon" : `the ${build} addon (${devices.join(", ")})`;
}

/** `specgate info`: the native addon builds, the backends and devices each can use, and versions. */
export function registerInfoCommand(program: Command): void {
    program
        .command("info")
        .description("list the native addon builds (CPU, Vulkan, CUDA), the ggml backends and devices each finds, and versions")
        .option("--json", "print the report as JSON")
        .action(async (options: {json?: boolean}) => {
            const report = collectInfo();
            if (options.json === true) await writeJsonOutput("-", report);
            else process.stdout.write(formatInfo(report));
        });
}
