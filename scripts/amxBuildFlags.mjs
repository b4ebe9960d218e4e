#!/usr/bin/env node
// Whether a build with -march=native (ggml's GGML_NATIVE) may keep Intel AMX, and the compiler flags
// that take it out when it may not. Where the compiler enables AMX for this CPU, scripts/amxProbe.cpp
// is compiled with that compiler and the build's flags and run: it asks Linux for the tile data state
// and runs one int8 tile product with its tile configuration built as ggml's AMX kernels build theirs.
// When it fails (the kernel or hypervisor withholds the tile state, or the compiler drops the tile
// configuration, as GCC 12 does), ggml's AMX matrix kernels would raise SIGILL on the first Q4_0,
// Q4_1, Q8_0 or K-quant model, so the build gets -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 and ggml
// multiplies those with its AVX-512 VNNI (or AVX2) kernels instead.
//
// Used by scripts/buildNativeBackend.mjs and, as a command, by scripts/buildLlamaCppBaselines.sh:
// `node scripts/amxBuildFlags.mjs` prints the flags (an empty line when none are needed) on stdout
// and what it found on stderr. CXX and CXXFLAGS choose the compiler and flags, as for CMake.
import {spawnSync} from "node:child_process";
import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";

export const withoutAmx = ["-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16"];
const probeSource = join(dirname(fileURLToPath(import.meta.url)), "amxProbe.cpp");

/** Whitespace-separated flags, as CMake splits CFLAGS / CXXFLAGS. */
export function splitFlags(flags) {
    return (flags ?? "").split(/\s+/).filter((flag) => flag !== "");
}

/** Whether `compiler` with `flags` and -march=native targets AMX tiles (null: it could not tell). */
function compilerEnablesAmx(compiler, flags) {
    const result = spawnSync(compiler, [...flags, "-march=native", "-dM", "-E", "-x", "c++", "-"], {input: "", encoding: "utf8"});
    if (result.error || result.status !== 0) return null;
    return /^#define __AMX_TILE__ /m.test(result.stdout);
}

/** Compiles and runs the probe; null when AMX works, else why not. */
function probeFailure(compiler, flags) {
    const directory = mkdtempSync(join(tmpdir(), "specgate-amx-probe-"));
    try {
        const executable = join(directory, "amxProbe");
        const build = spawnSync(compiler, [...flags, "-O3", "-march=native", probeSource, "-o", executable], {encoding: "utf8"});
        if (build.error || build.status !== 0) {
            const firstError = (build.stderr ?? "").split("\n").find((line) => line.includes("error")) ?? build.error?.message ?? "";
            return `the AMX probe did not compile (${firstError.trim()})`;
        }
        const run = spawnSync(executable, [], {encoding: "utf8", timeout: 30_000});
        if (run.status === 0) return null;
        if (run.signal === "SIGILL")
            return "the first AMX tile instruction raised SIGILL (the kernel withholds the tile state, or the compiler dropped the tile configuration)";
        if (run.signal !== null) return `the AMX probe was killed by ${run.signal}`;
        return run.stdout.trim() || `the AMX probe exited with ${run.status}`;
    } finally {
        rmSync(directory, {recursive: true, force: true});
    }
}

/**
 * The flags a -march=native build needs beside its own (`flags`) so that it uses AMX only where AMX
 * works, and a sentence saying what was found (null where AMX is not in question: another platform,
 * or a CPU or compiler without it).
 */
export function amxBuildFlags({compiler = process.env.CXX || "c++", flags = splitFlags(process.env.CXXFLAGS)} = {}) {
    if (process.platform !== "linux" || process.arch !== "x64") return {flags: [], note: null};
    if (compilerEnablesAmx(compiler, flags) !== true) return {flags: [], note: null};
    const failure = probeFailure(compiler, flags);
    if (failure === null) return {flags: [], note: "AMX tiles work here: ggml keeps its AMX kernels"};
    return {flags: withoutAmx, note: `building without AMX (${withoutAmx.join(" ")}): ${failure}`};
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    const {flags, note} = amxBuildFlags();
    if (note !== null) console.error(`specgate: ${note}`);
    console.log(flags.join(" "));
}
