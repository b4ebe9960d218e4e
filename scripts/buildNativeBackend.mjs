#!/usr/bin/env node
// Builds specgate's native backend (native/ → native/build/specgate_native.node) against the
// llama.cpp release bundled in node-llama-cpp, found by resolving the node-llama-cpp package from
// here (wherever npm put it: hoisted to the app's node_modules or nested under specgate's). Runs on
// `npm install` / `npm ci` where npm runs install scripts, and as `npx specgate build` (which passes
// --strict: a failure exits 1) where it does not (npm 11 runs a dependency's install script only once
// the app allows it). Incremental after the first build (84 compilations, about 4 CPU-minutes,
// llama.cpp being most of it: ≈ 2 minutes on an idle 2-core machine, longer on a busy one). It says
// each step on stderr as it starts, and again every 30 s while it runs (with the compiler's progress);
// SPECGATE_BUILD_PROGRESS_SECONDS changes the interval. `--check` resolves the bundle and looks for
// the tools, says what it would build, and builds nothing (exit 1 when it could not build).
//
// `--gpu vulkan|cuda` (or SPECGATE_GPU=vulkan|cuda, e.g. `SPECGATE_GPU=vulkan npm ci`) also builds
// a GPU addon, native/build/<gpu>/specgate_native.node: the same sources linked against the prebuilt
// shared libraries of node-llama-cpp's @node-llama-cpp/<platform>-<arch>-<gpu> package (built from
// the same llama.cpp release, checked below), which are copied next to it: no Vulkan shader or CUDA
// kernel is compiled here. The CPU addon is built as without the option; specgate picks an addon per
// model load (src/backend/gpuChoice.ts, src/backend/nativeAddon.ts).
//
// Without a compiler, cmake or git the build fails: specgate then runs on node-llama-cpp
// (`--backend node-llama-cpp`, chosen automatically, saying so on stderr), and this script only warns,
// naming the fix and `npx specgate build` — except under CI (CI=true) or --strict, where a missing
// native backend is an error (exit 1). SPECGATE_SKIP_NATIVE=1 skips the build.
//
// The compilers' output goes to native/build/build.log, not to the terminal (llama.cpp alone prints
// thousands of lines); on failure its path and last lines are printed. SPECGATE_BUILD_LOG=inherit
// shows it live instead. SPECGATE_NATIVE_PREBUILT=/path/to/specgate_native.node installs that addon
// (built by this script elsewhere, for the same Node-API and CPU) instead of compiling: for scratch
// installs of a packed specgate, as its packaging test does.
//
// CFLAGS and CXXFLAGS are passed to CMake on every build, not only the first: when they change (or the
// AMX decision below does), the build is reconfigured and recompiled rather than kept with the old
// flags. On a CPU with Intel AMX the CPU build is -march=native; scripts/amxBuildFlags.mjs checks that
// AMX tiles work here and otherwise adds -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 (the console says
// which).
import {execFileSync, spawn, spawnSync} from "node:child_process";
import {
    closeSync,
    copyFileSync,
    existsSync,
    mkdirSync,
    openSync,
    readFileSync,
    readdirSync,
    renameSync,
    rmSync,
    statSync,
    writeFileSync,
    writeSync
} from "node:fs";
import {availableParallelism} from "node:os";
import {dirname, join} from "node:path";
import {createRequire} from "node:module";
import {clearInterval, setInterval} from "node:timers";
import {fileURLToPath} from "node:url";
import {amxBuildFlags, splitFlags} from "./amxBuildFlags.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const buildDirectory = join(root, "native", "build");
const sourceDirectory = join(buildDirectory, "llama.cpp");
const cmakeDirectory = join(buildDirectory, "cmake");
const output = join(buildDirectory, "specgate_native.node");
const options = process.argv.slice(2);
const strict = process.env.CI === "true" || process.env.CI === "1" || options.includes("--strict");
const gpuKinds = ["vulkan", "cuda"];
const logPath = join(buildDirectory, "build.log");
const logLive = process.env.SPECGATE_BUILD_LOG === "inherit";
const progressSeconds = Number(process.env.SPECGATE_BUILD_PROGRESS_SECONDS ?? "30");
const installTools = "install git, cmake ≥ 3.21 and a C++17 compiler (Debian/Ubuntu: apt-get install git cmake g++)";

/** A line on stderr: npm shows a script's stderr where it hides its stdout, and stdout may be a pipe. */
function say(message) {
    console.error(`specgate: ${message}`);
}

/** "1 min 05 s". */
function elapsed(since) {
    const seconds = Math.round((Date.now() - since) / 1000);
    return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
}

/** The compiler's progress in build.log's last lines: Ninja's "[37/84]" or Make's "[ 44%]"; "" when none. */
function compilerProgress() {
    if (logLive || !existsSync(logPath)) return "";
    const text = readFileSync(logPath, "utf8").slice(-4000);
    const ninja = [...text.matchAll(/^\[(\d+)\/(\d+)\]/gm)].at(-1);
    if (ninja !== undefined) return `, ${ninja[1]} of ${ninja[2]} build steps done`;
    const make = [...text.matchAll(/^\[\s*(\d+)%\]/gm)].at(-1);
    return make === undefined ? "" : `, ${make[1]}% done`;
}

/**
 * Runs a build step, `step` naming it for the progress lines, with its output appended to build.log
 * (or on the terminal with SPECGATE_BUILD_LOG=inherit).
 */
async function run(step, command, args) {
    let log;
    if (!logLive) {
        mkdirSync(buildDirectory, {recursive: true});
        log = openSync(logPath, "a");
        writeSync(log, `\n$ ${command} ${args.join(" ")}\n`);
    }
    const started = Date.now();
    say(`${step} …`);
    const timer = setInterval(() => say(`${step}: ${elapsed(started)} so far${compilerProgress()}`), progressSeconds * 1000);
    let result;
    try {
        result = await new Promise((resolve) => {
            const child = spawn(command, args, {stdio: logLive ? "inherit" : ["ignore", log, log]});
            child.on("error", (error) => resolve({error}));
            child.on("close", (status, signal) => resolve({status: status ?? signal}));
        });
    } finally {
        clearInterval(timer);
        if (log !== undefined) closeSync(log);
    }
    if (result.error) throw new Error(`${command} could not start: ${result.error.message}`);
    if (result.status !== 0)
        throw new Error(`${command} ${args.slice(0, 2).join(" ")} … exited with ${result.status}${logLive ? "" : logTail()}`);
}

/** The last lines of build.log and its path, for a failure message. */
function logTail() {
    const lines = readFileSync(logPath, "utf8").trimEnd().split("\n").slice(-15);
    return `; its last lines:\n    ${lines.join("\n    ")}\nthe whole output is in ${logPath}`;
}

function has(command) {
    return spawnSync(command, ["--version"], {stdio: "ignore"}).status === 0;
}

/** The GPU addon asked for: `--gpu X` / `--gpu=X`, else SPECGATE_GPU; null for none ("off" or unset). */
function requestedGpu() {
    const argv = process.argv.slice(2);
    let value = process.env.SPECGATE_GPU;
    for (let index = 0; index < argv.length; index++) {
        if (argv[index] === "--gpu") value = argv[index + 1];
        else if (argv[index].startsWith("--gpu=")) value = argv[index].slice("--gpu=".length);
    }
    if (value === undefined || value === "" || value === "off") return null;
    if (!gpuKinds.includes(value)) {
        console.error(`specgate: --gpu / SPECGATE_GPU must be ${gpuKinds.join(", ")} or off, got "${value}"`);
        process.exit(1);
    }
    return value;
}

/**
 * node-llama-cpp's package folder, resolved from this script as specgate's own imports resolve it
 * (hoisted to the app's node_modules or nested under specgate's).
 */
function nodeLlamaCppDirectory() {
    let directory;
    try {
        directory = dirname(require.resolve("node-llama-cpp"));
    } catch {
        throw new Error(
            `node-llama-cpp (a dependency of specgate) cannot be resolved from ${root}: reinstall specgate (npm install specgate)`
        );
    }
    while (!existsSync(join(directory, "package.json")) && dirname(directory) !== directory) directory = dirname(directory);
    return directory;
}

/** The llama.cpp source node-llama-cpp bundles (a git bundle of its release). */
function llamaCppBundle() {
    const bundle = join(nodeLlamaCppDirectory(), "llama", "gitRelease.bundle");
    if (!existsSync(bundle)) throw new Error(`${bundle} is missing: reinstall node-llama-cpp (npm install specgate)`);
    return bundle;
}

/** The tools a build needs that are not on PATH. */
function missingTools() {
    return ["git", "cmake"].filter((tool) => !has(tool));
}

/** The llama.cpp checkout (headers and, for the CPU addon, sources) and the Node-API include folders. */
async function prepareSource() {
    const bundle = llamaCppBundle();
    const missing = missingTools();
    if (missing.length > 0) throw new Error(`${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} not installed: ${installTools}`);
    mkdirSync(buildDirectory, {recursive: true});
    if (!existsSync(join(sourceDirectory, ".git")))
        await run(`unpacking llama.cpp from ${bundle}`, "git", ["clone", "--quiet", bundle, sourceDirectory]);
    return [require("node-api-headers").include_dir, require("node-addon-api").include_dir].map((directory) =>
        directory.startsWith("/") ? directory : join(root, directory)
    );
}

/** CMAKE_C_FLAGS and CMAKE_CXX_FLAGS of the configuration in `directory`; null where it has none. */
function configuredFlags(directory) {
    const cache = join(directory, "CMakeCache.txt");
    if (!existsSync(cache)) return null;
    const text = readFileSync(cache, "utf8");
    const value = (name) => text.match(new RegExp(`^${name}:STRING=(.*)$`, "m"))?.[1] ?? "";
    return {c: value("CMAKE_C_FLAGS"), cxx: value("CMAKE_CXX_FLAGS")};
}

/**
 * Configures the addon's build in `directory` (the first time, and again whenever the compiler flags
 * `flags` ({c, cxx}) differ from its configuration's), builds it and puts it at `destination`.
 */
async function buildAddon(name, directory, destination, definitions, flags) {
    const configured = configuredFlags(directory);
    if (configured === null || configured.c !== flags.c || configured.cxx !== flags.cxx) {
        if (configured !== null)
            console.error(
                `specgate: the compiler flags changed (C "${configured.c}" → "${flags.c}", C++ "${configured.cxx}" → "${flags.cxx}"): reconfiguring ${directory}, everything is recompiled`
            );
        await run(`configuring the ${name} (cmake)`, "cmake", [
            "-S",
            join(root, "native"),
            "-B",
            directory,
            ...(has("ninja") ? ["-G", "Ninja"] : []),
            "-DCMAKE_BUILD_TYPE=Release",
            `-DCMAKE_C_FLAGS=${flags.c}`,
            `-DCMAKE_CXX_FLAGS=${flags.cxx}`,
            `-DLLAMA_CPP_DIR=${sourceDirectory}`,
            ...definitions
        ]);
    }
    await run(`compiling the ${name} (llama.cpp and specgate's sources)`, "cmake", [
        "--build",
        directory,
        "--target",
        "specgate_native",
        "-j",
        String(availableParallelism())
    ]);
    replaceFile(join(directory, "specgate_native.node"), destination);
}

// Copy, then rename over the old file: a process that has the old one loaded keeps its (now
// unlinked) file; rewriting it in place would crash such a process.
function replaceFile(source, destination) {
    const staged = `${destination}.${process.pid}.tmp`;
    copyFileSync(source, staged);
    renameSync(staged, destination);
}

/** CFLAGS and CXXFLAGS as given, each followed by `extra`. */
function compilerFlags(extra) {
    return {
        c: [...splitFlags(process.env.CFLAGS), ...extra].join(" "),
        cxx: [...splitFlags(process.env.CXXFLAGS), ...extra].join(" ")
    };
}

/** The flags that keep a -march=native build off AMX where AMX does not work; none without -march=native. */
function cpuAmxFlags(nativeArch) {
    if (/^(off|0|false|no|n)$/i.test(nativeArch)) return [];
    const {flags, note} = amxBuildFlags();
    if (note !== null) {
        console.log(`specgate: ${note}`);
        if (!logLive) writeFileSync(logPath, `specgate: ${note}\n`, {flag: "a"});
    }
    return flags;
}

async function buildCpu(includeDirectories) {
    const nativeArch = process.env.SPECGATE_NATIVE_ARCH ?? "ON";
    await buildAddon(
        "CPU addon",
        cmakeDirectory,
        output,
        [`-DNODE_API_INCLUDE_DIRS=${includeDirectories.join(";")}`, `-DSPECGATE_NATIVE_ARCH=${nativeArch}`],
        compilerFlags(cpuAmxFlags(nativeArch))
    );
}

/** The folder of node-llama-cpp's prebuilt libraries for `gpu` on this platform (its optional dependency). */
function prebuiltDirectory(gpu) {
    if (process.platform !== "linux")
        throw new Error(`GPU addons are built from node-llama-cpp's prebuilt Linux libraries; this is ${process.platform}`);
    const name = `${process.platform}-${process.arch}-${gpu}`;
    const fromNodeLlamaCpp = createRequire(require.resolve("node-llama-cpp"));
    let directory;
    try {
        directory = dirname(fromNodeLlamaCpp.resolve(`@node-llama-cpp/${name}`));
    } catch {
        throw new Error(`@node-llama-cpp/${name} is not installed (an optional dependency of node-llama-cpp)`);
    }
    while (!existsSync(join(directory, "package.json"))) directory = dirname(directory);
    return join(directory, "bins", name);
}

/**
 * Refuses prebuilt libraries of another llama.cpp release than the bundle the headers come from: the
 * addon is compiled against llama.h and ggml.h of the bundle and calls into the prebuilt libraries,
 * so both must be the same release (node-llama-cpp builds both from its llama.cpp.info.json tag).
 */
function checkRelease(directory) {
    const bundled = JSON.parse(readFileSync(join(nodeLlamaCppDirectory(), "llama", "llama.cpp.info.json"), "utf8")).tag;
    const metadata = JSON.parse(readFileSync(join(directory, "_nlcBuildMetadata.json"), "utf8"));
    const prebuilt = metadata.buildOptions?.llamaCpp?.release;
    if (prebuilt !== bundled)
        throw new Error(`the prebuilt libraries in ${directory} are llama.cpp ${prebuilt}, the bundled source is ${bundled}`);
}

async function buildGpu(gpu, includeDirectories) {
    const prebuilt = prebuiltDirectory(gpu);
    checkRelease(prebuilt);
    const outputDirectory = join(buildDirectory, gpu);
    mkdirSync(outputDirectory, {recursive: true});
    // ggml's libraries (llama, the ggml registry and base, the GPU backend, every CPU variant), not
    // node-llama-cpp's own addon and helper library.
    for (const file of readdirSync(prebuilt)) {
        if (!file.startsWith("lib") || !file.endsWith(".so") || file.startsWith("libllama-common")) continue;
        const source = join(prebuilt, file);
        const destination = join(outputDirectory, file);
        const stale =
            !existsSync(destination) ||
            statSync(destination).size !== statSync(source).size ||
            statSync(destination).mtimeMs < statSync(source).mtimeMs;
        if (stale) replaceFile(source, destination);
    }
    // No -march=native here (ggml comes prebuilt, with its CPU variants chosen at run time): no AMX flags.
    await buildAddon(
        `${gpu} addon`,
        join(buildDirectory, `cmake-${gpu}`),
        join(outputDirectory, "specgate_native.node"),
        [`-DNODE_API_INCLUDE_DIRS=${includeDirectories.join(";")}`, `-DSPECGATE_GPU=${gpu}`, `-DSPECGATE_PREBUILT_DIR=${outputDirectory}`],
        compilerFlags([])
    );
    return join(outputDirectory, "specgate_native.node");
}

/** The addon must load in this Node, not just link. */
function checkLoads(addon) {
    execFileSync(process.execPath, ["-e", `require(${JSON.stringify(addon)})`], {stdio: "inherit"});
}

/**
 * A build that did not happen: an error (exit 1) under CI or --strict, a warning otherwise. `message`
 * says what failed and how to fix it; `fallback` what specgate does without the build.
 */
function fail(message, fallback) {
    if (strict) {
        console.error(
            `specgate: error: ${message}\nspecgate: the native backend is required here (${options.includes("--strict") ? "npx specgate build" : "CI=true"}); ` +
                "once fixed, run `npx specgate build`, or set SPECGATE_SKIP_NATIVE=1 to install without it and run on node-llama-cpp"
        );
        process.exit(1);
    }
    console.error(`specgate: ${message}; ${fallback} (\`npx specgate build\` builds it once that is fixed)`);
}

/** `--check`: what a build would use, without building; exit 1 when it could not build. */
function check() {
    const problems = [];
    let bundle;
    try {
        bundle = llamaCppBundle();
    } catch (error) {
        problems.push(error.message);
    }
    const missing = missingTools();
    if (missing.length > 0) problems.push(`${missing.join(" and ")} not found: ${installTools}`);
    if (bundle !== undefined) say(`llama.cpp source: ${bundle}`);
    say(`CPU addon: ${output}${existsSync(output) ? " (built)" : " (not built)"}`);
    for (const problem of problems) say(`cannot build: ${problem}`);
    if (problems.length === 0) say("ready to build (`npx specgate build`)");
    process.exit(problems.length === 0 ? 0 : 1);
}

if (options.includes("--check")) check();
if (process.env.SPECGATE_SKIP_NATIVE === "1") {
    say("SPECGATE_SKIP_NATIVE=1, not building the native backend");
    process.exit(0);
}
const prebuilt = process.env.SPECGATE_NATIVE_PREBUILT;
if (prebuilt !== undefined && prebuilt !== "") {
    try {
        mkdirSync(buildDirectory, {recursive: true});
        replaceFile(prebuilt, output);
        checkLoads(output);
        say(`native backend installed from ${prebuilt} (${output})`);
    } catch (error) {
        rmSync(output, {force: true});
        fail(`the prebuilt native backend ${prebuilt} was not installed (${error.message})`, "specgate will use node-llama-cpp instead");
    }
    process.exit(0);
}
const gpu = requestedGpu();
let includeDirectories;
let started = Date.now();
if (!logLive) {
    mkdirSync(buildDirectory, {recursive: true});
    writeFileSync(logPath, `specgate native build, ${new Date().toISOString()}\n`);
}
say(`building the native backend (a few minutes the first time; compiler output in ${logPath})`);
try {
    includeDirectories = await prepareSource();
    await buildCpu(includeDirectories);
    checkLoads(output);
    say(`native backend built in ${elapsed(started)} (${output})`);
} catch (error) {
    fail(
        `the native backend was not built (${error.message})`,
        "specgate will use node-llama-cpp instead, which is slower and has no --json-schema"
    );
}
if (gpu !== null && includeDirectories !== undefined) {
    started = Date.now();
    try {
        const addon = await buildGpu(gpu, includeDirectories);
        checkLoads(addon);
        say(`${gpu} native backend built in ${elapsed(started)} (${addon})`);
    } catch (error) {
        fail(`the ${gpu} native backend was not built (${error.message})`, "specgate will compute on the CPU");
    }
}
