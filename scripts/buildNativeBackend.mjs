#!/usr/bin/env node
// Builds specgate's native backend (native/ → native/build/specgate_native.node) against the
// llama.cpp release bundled in node-llama-cpp. Runs on `npm install` / `npm ci`; incremental after
// the first build (≈ 2 minutes on 2 cores, llama.cpp's CPU backend being most of it).
//
// Without a compiler, cmake or git the build fails: specgate then runs on node-llama-cpp
// (`--backend node-llama-cpp`, chosen automatically), and this script only warns — except under CI
// (CI=true), where a missing native backend is an error. SPECGATE_SKIP_NATIVE=1 skips the build.
import {execFileSync, spawnSync} from "node:child_process";
import {copyFileSync, existsSync, mkdirSync, renameSync} from "node:fs";
import {availableParallelism} from "node:os";
import {dirname, join} from "node:path";
import {createRequire} from "node:module";
import {fileURLToPath} from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const buildDirectory = join(root, "native", "build");
const sourceDirectory = join(buildDirectory, "llama.cpp");
const cmakeDirectory = join(buildDirectory, "cmake");
const output = join(buildDirectory, "specgate_native.node");
const bundle = join(root, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle");
const strict = process.env.CI === "true" || process.env.CI === "1";

function run(command, args) {
    const result = spawnSync(command, args, {stdio: "inherit"});
    if (result.error) throw new Error(`${command} could not start: ${result.error.message}`);
    if (result.status !== 0) throw new Error(`${command} ${args.slice(0, 2).join(" ")} … exited with ${result.status}`);
}

function has(command) {
    return spawnSync(command, ["--version"], {stdio: "ignore"}).status === 0;
}

function build() {
    if (!existsSync(bundle)) throw new Error(`${bundle} is missing: install node-llama-cpp first`);
    for (const tool of ["git", "cmake"])
        if (!has(tool)) throw new Error(`${tool} is not installed`);
    mkdirSync(buildDirectory, {recursive: true});
    if (!existsSync(join(sourceDirectory, ".git")))
        run("git", ["clone", "--quiet", bundle, sourceDirectory]);
    const includeDirectories = [require("node-api-headers").include_dir, require("node-addon-api").include_dir]
        .map((directory) => (directory.startsWith("/") ? directory : join(root, directory)));
    if (!existsSync(join(cmakeDirectory, "CMakeCache.txt"))) {
        run("cmake", [
            "-S", join(root, "native"), "-B", cmakeDirectory,
            ...(has("ninja") ? ["-G", "Ninja"] : []),
            "-DCMAKE_BUILD_TYPE=Release",
            `-DLLAMA_CPP_DIR=${sourceDirectory}`,
            `-DNODE_API_INCLUDE_DIRS=${includeDirectories.join(";")}`,
            `-DSPECGATE_NATIVE_ARCH=${process.env.SPECGATE_NATIVE_ARCH ?? "ON"}`
        ]);
    }
    run("cmake", ["--build", cmakeDirectory, "--target", "specgate_native", "-j", String(availableParallelism())]);
    // Copy, then rename over the old addon: a process that has the old one loaded keeps its (now
    // unlinked) file; rewriting it in place would crash such a process.
    const staged = `${output}.${process.pid}.tmp`;
    copyFileSync(join(cmakeDirectory, "specgate_native.node"), staged);
    renameSync(staged, output);
}

if (process.env.SPECGATE_SKIP_NATIVE === "1") {
    console.log("specgate: SPECGATE_SKIP_NATIVE=1, not building the native backend");
    process.exit(0);
}
const started = Date.now();
try {
    build();
    // The addon must load in this Node, not just link.
    execFileSync(process.execPath, ["-e", `require(${JSON.stringify(output)})`], {stdio: "inherit"});
    console.log(`specgate: native backend built in ${((Date.now() - started) / 1000).toFixed(0)} s (${output})`);
} catch (error) {
    const message = `specgate: the native backend was not built (${error.message}); specgate will use node-llama-cpp instead`;
    if (strict) {
        console.error(message);
        process.exit(1);
    }
    console.warn(message);
}
