// The native build's console: the compiler output goes to native/build/build.log, and the terminal
// gets a few lines — each step, progress while it runs, on a failure the log's last lines and its
// path and the fix. Run on scratch copies of the script, laid out as npm installs specgate, with a
// stand-in node-llama-cpp and stand-in `git` and `cmake` that fail noisily, so nothing is compiled.
import {spawnSync} from "node:child_process";
import {chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, describe, expect, it} from "vitest";

const root = new URL("../", import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), "specgate-build-"));
afterAll(() => rmSync(scratch, {recursive: true, force: true}));

/** specgate's scripts in `packageDirectory`, as npm unpacks the package. */
function installScripts(packageDirectory: string): void {
    mkdirSync(join(packageDirectory, "scripts"), {recursive: true});
    for (const file of ["buildNativeBackend.mjs", "amxBuildFlags.mjs", "amxProbe.cpp"])
        copyFileSync(join(root, "scripts", file), join(packageDirectory, "scripts", file));
}

/** A stand-in node-llama-cpp package (resolvable, with an empty llama.cpp bundle) in `nodeModules`. */
function installNodeLlamaCpp(nodeModules: string): string {
    const directory = join(nodeModules, "node-llama-cpp");
    mkdirSync(join(directory, "llama"), {recursive: true});
    writeFileSync(join(directory, "package.json"), JSON.stringify({name: "node-llama-cpp", version: "0.0.0", main: "index.js"}));
    writeFileSync(join(directory, "index.js"), "");
    writeFileSync(join(directory, "llama", "gitRelease.bundle"), "");
    return join(directory, "llama", "gitRelease.bundle");
}

/** Stand-in `tool`s in `bin`: `script` runs for everything but --version, which exits `version`. */
function installTool(bin: string, tool: string, script: string, version = 0): void {
    mkdirSync(bin, {recursive: true});
    writeFileSync(join(bin, tool), `#!/bin/sh\n[ "$1" = "--version" ] && exit ${version}\n${script}\n`);
    chmodSync(join(bin, tool), 0o755);
}

function runScript(
    env: NodeJS.ProcessEnv,
    packageDirectory = scratch,
    bin = join(scratch, "bin"),
    args: readonly string[] = []
): {status: number | null; output: string} {
    const result = spawnSync(process.execPath, [join(packageDirectory, "scripts", "buildNativeBackend.mjs"), ...args], {
        encoding: "utf8",
        env: {...env, PATH: `${bin}:${process.env.PATH}`}
    });
    return {status: result.status, output: result.stdout + result.stderr};
}

describe("the native build's output", () => {
    installScripts(scratch);
    const bundle = installNodeLlamaCpp(join(scratch, "node_modules"));
    // git and cmake that answer --version, and a git clone that prints 3,000 lines and fails.
    for (const tool of ["git", "cmake"])
        installTool(
            join(scratch, "bin"),
            tool,
            `for i in $(seq 1 3000); do echo "${tool} line $i"; done\necho "fatal: the last words" >&2\nexit 3`
        );
    const env = {HOME: process.env.HOME, CI: ""};

    it("goes to native/build/build.log; the terminal gets a few lines, the log's tail and its path", () => {
        const {status, output} = runScript(env);
        const log = join(scratch, "native", "build", "build.log");
        expect(status).toBe(0);
        expect(output.trimEnd().split("\n").length).toBeLessThanOrEqual(20);
        expect(output).toContain(`compiler output in ${log}`);
        expect(output).toMatch(/git clone --quiet … exited with 3; its last lines:\n(?: {4}.*\n)*? {4}fatal: the last words\n/);
        expect(output).toContain(`the whole output is in ${log}`);
        expect(output).toContain(`unpacking llama.cpp from ${bundle}`);
        expect(output).toMatch(/specgate will use node-llama-cpp instead, .*\(`npx specgate build` builds it once that is fixed\)\n$/);
        const text = readFileSync(log, "utf8");
        expect(text).toContain("git line 3000");
        expect(text.split("\n").length).toBeGreaterThan(3000);
    });

    it("is an error under CI and with --strict, naming the fix, and SPECGATE_BUILD_LOG=inherit shows it live", () => {
        const ci = runScript({...env, CI: "true"});
        expect(ci.status).toBe(1);
        expect(ci.output).toMatch(/^specgate: error: the native backend was not built \(git clone/m);
        expect(ci.output).toMatch(/once fixed, run `npx specgate build`, or set SPECGATE_SKIP_NATIVE=1/);
        expect(runScript(env, scratch, join(scratch, "bin"), ["--strict"]).status).toBe(1);
        const live = runScript({...env, SPECGATE_BUILD_LOG: "inherit"});
        expect(live.output).toContain("git line 3000");
    });

    it("SPECGATE_NATIVE_PREBUILT installs a given addon instead of compiling, and refuses one that does not load", () => {
        const notAnAddon = join(scratch, "bogus.node");
        writeFileSync(notAnAddon, "not a shared object");
        const {status, output} = runScript({...env, SPECGATE_NATIVE_PREBUILT: notAnAddon});
        expect(status).toBe(0);
        expect(output).toMatch(/^specgate: the prebuilt native backend .*bogus\.node was not installed/m);
        expect(output).not.toContain("git line");
        expect(existsSync(join(scratch, "native", "build", "specgate_native.node"))).toBe(false);
    });

    it("names the missing tool and how to install it; under CI that is an error", () => {
        const bin = join(scratch, "no-cmake");
        installTool(bin, "cmake", "exit 1", 127);
        const {status, output} = runScript({...env, CI: "true"}, scratch, `${bin}:${join(scratch, "bin")}`);
        expect(status).toBe(1);
        expect(output).toMatch(
            /^specgate: error: the native backend was not built \(cmake is not installed: install git, cmake ≥ 3\.21 and a C\+\+17 compiler/m
        );
    });

    it("says the step and how long it has run while a step runs", () => {
        const bin = join(scratch, "slow");
        installTool(bin, "git", "sleep 1.5\nexit 3");
        const {output} = runScript({...env, SPECGATE_BUILD_PROGRESS_SECONDS: "0.2"}, scratch, `${bin}:${join(scratch, "bin")}`);
        expect(output).toContain(`specgate: unpacking llama.cpp from ${bundle} …\n`);
        expect(output).toMatch(/^specgate: unpacking llama\.cpp from .*gitRelease\.bundle: \d+ s so far$/m);
    });

    it("--check says where the source is and whether it could build, and builds nothing", () => {
        const ready = runScript(env, scratch, join(scratch, "bin"), ["--check"]);
        expect(ready.status).toBe(0);
        expect(ready.output).toContain(`specgate: llama.cpp source: ${bundle}\n`);
        expect(ready.output).toContain("specgate: ready to build");
        expect(ready.output).not.toContain("git line");
        // Outside the scratch folder, so that no node_modules above it holds node-llama-cpp.
        const lonely = mkdtempSync(join(tmpdir(), "specgate-build-lonely-"));
        installScripts(lonely);
        const unresolved = runScript(env, lonely, join(scratch, "bin"), ["--check"]);
        expect(unresolved.status).toBe(1);
        expect(unresolved.output).toMatch(/^specgate: cannot build: node-llama-cpp \(a dependency of specgate\) cannot be resolved from /m);
        rmSync(lonely, {recursive: true, force: true});
    });
});

describe("in an app's node_modules, with node-llama-cpp hoisted beside specgate", () => {
    const app = join(scratch, "app");
    const specgate = join(app, "node_modules", "specgate");
    installScripts(specgate);
    const hoisted = installNodeLlamaCpp(join(app, "node_modules"));

    it("clones llama.cpp from the hoisted node-llama-cpp's bundle", () => {
        const {status, output} = runScript({HOME: process.env.HOME, CI: ""}, specgate);
        expect(status).toBe(0);
        expect(output).toContain(`unpacking llama.cpp from ${hoisted}`);
        expect(readFileSync(join(specgate, "native", "build", "build.log"), "utf8")).toContain(`$ git clone --quiet ${hoisted} `);
    });
});
