// `npm ci` output: the native build's compiler output goes to native/build/build.log, and the
// terminal gets a few lines — on a failure, the log's last lines and its path. Run on a scratch copy
// of the script with a stand-in `git` that fails noisily, so nothing is compiled.
import {spawnSync} from "node:child_process";
import {chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, describe, expect, it} from "vitest";

const root = new URL("../", import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), "specgate-build-"));
afterAll(() => rmSync(scratch, {recursive: true, force: true}));

function runScript(env: NodeJS.ProcessEnv): {status: number | null; output: string} {
    const result = spawnSync(process.execPath, [join(scratch, "scripts", "buildNativeBackend.mjs")], {
        encoding: "utf8",
        env: {...env, PATH: `${join(scratch, "bin")}:${process.env.PATH}`}
    });
    return {status: result.status, output: result.stdout + result.stderr};
}

describe("the native build's output", () => {
    mkdirSync(join(scratch, "scripts"));
    for (const file of ["buildNativeBackend.mjs", "amxBuildFlags.mjs", "amxProbe.cpp"])
        copyFileSync(join(root, "scripts", file), join(scratch, "scripts", file));
    mkdirSync(join(scratch, "node_modules", "node-llama-cpp", "llama"), {recursive: true});
    writeFileSync(join(scratch, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle"), "");
    mkdirSync(join(scratch, "bin"));
    // git and cmake that answer --version, and a git clone that prints 3,000 lines and fails.
    for (const tool of ["git", "cmake"]) {
        writeFileSync(
            join(scratch, "bin", tool),
            `#!/bin/sh\n[ "$1" = "--version" ] && exit 0\nfor i in $(seq 1 3000); do echo "${tool} line $i"; done\necho "fatal: the last words" >&2\nexit 3\n`
        );
        chmodSync(join(scratch, "bin", tool), 0o755);
    }
    const env = {HOME: process.env.HOME, CI: ""};

    it("goes to native/build/build.log; the terminal gets a few lines, the log's tail and its path", () => {
        const {status, output} = runScript(env);
        const log = join(scratch, "native", "build", "build.log");
        expect(status).toBe(0);
        expect(output.trimEnd().split("\n").length).toBeLessThanOrEqual(20);
        expect(output).toContain(`compiler output in ${log}`);
        expect(output).toMatch(/git clone --quiet … exited with 3; its last lines:\n(?: {4}.*\n)*? {4}fatal: the last words\n/);
        expect(output).toContain(`the whole output is in ${log}`);
        expect(output).toMatch(/specgate will use node-llama-cpp instead\n$/);
        const text = readFileSync(log, "utf8");
        expect(text).toContain("git line 3000");
        expect(text.split("\n").length).toBeGreaterThan(3000);
    });

    it("is an error under CI, and SPECGATE_BUILD_LOG=inherit shows it live", () => {
        expect(runScript({...env, CI: "true"}).status).toBe(1);
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
});
