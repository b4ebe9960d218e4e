import {existsSync, readFileSync} from "node:fs";

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
