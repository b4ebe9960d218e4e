import {existsSync, readFileSync} from "node:fs";
import {cpus} from "node:os";
import {nativeAddon} from "../src/backend/nativeAddon.js";

/** The vector extensions that decide ggml's and the sampler rows' speed, as /proc/cpuinfo lists them (empty elsewhere). */
export function cpuInstructionSet(): string[] {
    const cpuFlags = new Set(
        (/^flags\s*:(.*)$/m.exec(existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "")?.[1] ?? "").trim().split(/\s+/)
    );
    return [
        ["avx2", "AVX2"],
        ["fma", "FMA"],
        ["f16c", "F16C"],
        ["avx_vnni", "AVX-VNNI"],
        ["avx512f", "AVX-512F"],
        ["avx512bw", "AVX-512BW"],
        ["avx512vl", "AVX-512VL"],
        ["avx512_vnni", "AVX-512-VNNI"],
        ["avx512_bf16", "AVX-512-BF16"],
        ["amx_tile", "AMX"]
    ]
        .filter(([name]) => cpuFlags.has(name))
        .map(([, label]) => label);
}

/** The machine a benchmark ran on, as its reports name it. */
export interface BenchMachine {
    readonly cpu: string;
    readonly cores: number;
    readonly avx512: boolean;
    readonly instructionSet: readonly string[];
    /** ggml's view of the CPU (llama_print_system_info through the addon): what the compute kernels were built for. */
    readonly ggmlSystemInfo: string;
    readonly node: string;
    readonly platform: string;
}

export function benchMachine(): BenchMachine {
    const instructionSet = cpuInstructionSet();
    let ggmlSystemInfo: string;
    try {
        ggmlSystemInfo = nativeAddon("cpu").backendInfo().systemInfo;
    } catch (error) {
        ggmlSystemInfo = `unavailable: ${(error as Error).message}`;
    }
    return {
        cpu: cpus()[0]?.model ?? "unknown",
        cores: cpus().length,
        avx512: instructionSet.includes("AVX-512F"),
        instructionSet,
        ggmlSystemInfo,
        node: process.version,
        platform: `${process.platform} ${process.arch}`
    };
}
