import {describe, expect, it} from "vitest";
import {ExitCode} from "../exitCodes.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";
import {buildScriptArguments, buildScriptPath} from "./buildCommand.js";

const root = new URL("../../../", import.meta.url).pathname;

describe("specgate build", () => {
    it("runs the package's build script, strictly (a failed build exits 1), with the GPU asked for", () => {
        expect(buildScriptPath).toBe(`${root}scripts/buildNativeBackend.mjs`);
        expect(buildScriptArguments({})).toEqual([buildScriptPath, "--strict"]);
        expect(buildScriptArguments({gpu: "vulkan", check: true})).toEqual([buildScriptPath, "--strict", "--gpu", "vulkan", "--check"]);
    });

    // --check builds nothing: the shared addon other tests load is left alone.
    it("--check names the llama.cpp source it resolved and the addon, on stderr", async () => {
        const run = await runCliCaptured("build", "--check");
        expect(run.code, run.stderr).toBe(ExitCode.success);
        expect(run.stdout).toBe("");
        expect(run.stderr).toContain(`specgate: llama.cpp source: ${root}node_modules/node-llama-cpp/llama/gitRelease.bundle\n`);
        expect(run.stderr).toContain(`specgate: CPU addon: ${root}native/build/specgate_native.node`);
    });

    it("refuses a GPU it cannot build", async () => {
        const run = await runCliCaptured("build", "--gpu", "metal");
        expect(run.code).toBe(ExitCode.badInput);
        expect(run.stderr).toMatch(/--gpu <vulkan\|cuda\|off>.*metal/);
    });
});
