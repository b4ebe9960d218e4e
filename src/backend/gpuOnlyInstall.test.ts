import {copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {collectInfo, formatInfo} from "../cli/commands/infoCommand.js";
import {ExitCode} from "../cli/exitCodes.js";
import {runCliCaptured} from "../cli/testing/runCliCaptured.js";
import {grammarForResponseFormat} from "../constraints/jsonSchemaGrammar.js";
import {NativeBackendUnavailableError} from "../errors.js";
import {resolveGpu} from "./gpuChoice.js";
import {loadModelBackend, resolveBackend} from "./loadModelBackend.js";
import {anyNativeAddon, firstAvailableBuild, nativeAddonPathOf, nativeBackendAvailable} from "./nativeAddon.js";
import {NativeBackend} from "./NativeBackend.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * A machine where only a GPU build of the addon is installed (native/build/vulkan/, no CPU addon),
 * simulated with SPECGATE_NATIVE_DIR pointing at a folder that holds a copy of the CPU addon as its
 * Vulkan build: a build that loads and finds no GPU device, as the Vulkan build does where no
 * device is visible.
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const schema = {type: "object", properties: {age: {type: "integer"}}, required: ["age"], additionalProperties: false};
let directory: string;
let previous: string | undefined;

function useBuildDirectory(path: string): void {
    process.env.SPECGATE_NATIVE_DIR = path;
}

beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), "specgate-gpu-only-"));
    mkdirSync(join(directory, "gpu-only", "vulkan"), {recursive: true});
    mkdirSync(join(directory, "none"));
    copyFileSync(nativeAddonPathOf("cpu"), join(directory, "gpu-only", "vulkan", "specgate_native.node"));
    writeFileSync(join(directory, "schema.json"), JSON.stringify(schema));
    previous = process.env.SPECGATE_NATIVE_DIR;
});

afterAll(() => {
    if (previous === undefined) delete process.env.SPECGATE_NATIVE_DIR;
    else process.env.SPECGATE_NATIVE_DIR = previous;
    rmSync(directory, {recursive: true, force: true});
});

describe("an install with only a GPU build of the addon", () => {
    it("converts JSON schemas with the GPU build", () => {
        useBuildDirectory(join(directory, "gpu-only"));
        expect(nativeBackendAvailable("cpu")).toBe(false);
        expect(firstAvailableBuild()).toBe("vulkan");
        const grammar = grammarForResponseFormat({type: "json_schema", json_schema: {name: "a", schema}});
        expect(grammar).toMatch(/^root ::= /m);
        expect(anyNativeAddon().jsonSchemaToGrammar(JSON.stringify(schema))).toBe(grammar);
    });

    it("runs models on it with --backend auto and --gpu auto, computing on the CPU where it finds no device", async () => {
        useBuildDirectory(join(directory, "gpu-only"));
        expect(resolveGpu("auto")).toEqual({build: "vulkan", devices: []});
        expect(resolveBackend("auto", "auto")).toBe("native");
        // "off" asks for the CPU addon, which is not here: auto then runs node-llama-cpp.
        expect(resolveBackend("auto", "off")).toBe("node-llama-cpp");
        const backend = await loadModelBackend(familyTarget, {backend: "auto", gpu: "auto"});
        try {
            expect(backend).toBeInstanceOf(NativeBackend);
            expect((backend as NativeBackend).nativeBuild).toBe("vulkan");
            expect((backend as NativeBackend).device).toBe("CPU");
            const sequence = await backend.createSequence();
            const [row] = await sequence.evaluate(backend.tokenize("Once upon a time"));
            expect(row!.length).toBe(backend.vocabularySize);
            await sequence.dispose();
        } finally {
            await backend.dispose();
        }
    });

    it("serves generate --json-schema", async () => {
        useBuildDirectory(join(directory, "gpu-only"));
        const run = await runCliCaptured(
            "generate",
            "The family:",
            "--target",
            familyTarget,
            "--gpu",
            "auto",
            "--json-schema",
            join(directory, "schema.json"),
            "--temperature",
            "0",
            "--max-tokens",
            "40",
            "--json",
            "-"
        );
        expect(run.code, run.stderr).toBe(ExitCode.success);
        const report = JSON.parse(run.stdout) as {text: string};
        expect(Object.keys(JSON.parse(report.text) as object)).toEqual(["age"]);
    });

    it("without any build: node-llama-cpp runs the models, and the schema converter says how to build the addon", () => {
        useBuildDirectory(join(directory, "none"));
        expect(firstAvailableBuild()).toBeUndefined();
        expect(resolveBackend("auto", "auto")).toBe("node-llama-cpp");
        expect(() => anyNativeAddon()).toThrow(NativeBackendUnavailableError);
        expect(() => anyNativeAddon()).toThrow(/run `npx specgate build`, which needs git, cmake and a C\+\+ compiler/);
    });

    it("without any build: --backend auto says once on stderr that it runs node-llama-cpp, and how to build the addon", async () => {
        useBuildDirectory(join(directory, "none"));
        const written: string[] = [];
        const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
            written.push(String(chunk));
            return true;
        });
        try {
            for (let load = 0; load < 2; load++) {
                const backend = await loadModelBackend(familyTarget, {backend: "auto", gpu: "auto"});
                expect(backend).not.toBeInstanceOf(NativeBackend);
                await backend.dispose();
            }
        } finally {
            spy.mockRestore();
        }
        const notes = written
            .join("")
            .split("\n")
            .filter((line) => line.startsWith("specgate: running on node-llama-cpp"));
        expect(notes).toHaveLength(1);
        expect(notes[0]).toContain(`${join(directory, "none", "specgate_native.node")} is missing; run \`npx specgate build\``);
    });

    it("without any build: specgate info says the models run on node-llama-cpp and names the command", () => {
        useBuildDirectory(join(directory, "none"));
        const text = formatInfo(collectInfo());
        expect(text).toContain("  cpu: not built (npx specgate build)\n");
        expect(text).toContain("  vulkan: not built (npx specgate build --gpu vulkan)\n");
        expect(text).toContain(
            "--gpu auto computes on: node-llama-cpp, because no native addon loads here (`npx specgate build` builds it)\n"
        );
    });
});
