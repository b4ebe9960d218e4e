import {describe, expect, it, vi} from "vitest";
import {collectInfo, formatInfo} from "../cli/commands/infoCommand.js";
import {InvalidInputError, NativeBackendUnavailableError} from "../errors.js";
import {defaultGpuChoice, describeDevices, parseGpuChoice, parseGpuLayers, resolveGpu} from "./gpuChoice.js";
import {loadModelBackend} from "./loadModelBackend.js";
import {nativeBuildPresent} from "./nativeAddon.js";
import {NativeBackend} from "./NativeBackend.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const llvmpipe = {
    name: "Vulkan0",
    description: "llvmpipe (LLVM 15.0.6, 256 bits)",
    type: "gpu",
    backend: "Vulkan",
    memoryFree: 1,
    memoryTotal: 1
} as const;

describe("choosing the addon build", () => {
    it("parses the choices and layer counts, and reads SPECGATE_GPU as the default", () => {
        expect(parseGpuChoice("vulkan")).toBe("vulkan");
        expect(() => parseGpuChoice("metal")).toThrow(InvalidInputError);
        expect(parseGpuLayers(0)).toBe(0);
        expect(() => parseGpuLayers(-1)).toThrow(InvalidInputError);
        // vitest.config.ts pins the rest of the suite to the CPU addon.
        expect(defaultGpuChoice()).toBe("off");
    });

    it("off is the CPU addon; the placement names the devices only when layers are offloaded", () => {
        expect(resolveGpu("off")).toEqual({build: "cpu", devices: []});
        expect(describeDevices({build: "cpu", devices: []}, 999)).toBe("CPU");
        expect(describeDevices({build: "vulkan", devices: [llvmpipe]}, 0)).toBe("CPU");
        expect(describeDevices({build: "vulkan", devices: [llvmpipe]}, 999)).toBe("Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits))");
    });

    it("loads on the CPU addon with gpu off, and names the build and device", async () => {
        const backend = await NativeBackend.load(familyTarget, {gpu: "off"});
        try {
            expect(backend.nativeBuild).toBe("cpu");
            expect(backend.device).toBe("CPU");
        } finally {
            await backend.dispose();
        }
    });

    it.skipIf(nativeBuildPresent("cuda"))("refuses a GPU build that is not built, saying how to build it", async () => {
        await expect(NativeBackend.load(familyTarget, {gpu: "cuda"})).rejects.toThrow(NativeBackendUnavailableError);
        await expect(NativeBackend.load(familyTarget, {gpu: "cuda"})).rejects.toThrow(/`npx specgate build --gpu cuda`/);
    });

    it("refuses a GPU with node-llama-cpp, which runs on the CPU here", async () => {
        await expect(loadModelBackend(familyTarget, {backend: "node-llama-cpp", gpu: "vulkan"})).rejects.toThrow(
            /gpu: vulkan needs the native backend/
        );
    });
});

describe("specgate info", () => {
    it("lists the CPU build with its CPU device, ggml's version and what auto picks", () => {
        const report = collectInfo();
        const cpu = report.builds.find((build) => build.build === "cpu")!;
        expect(cpu.path).toBe("native/build/specgate_native.node");
        expect(cpu.info!.build).toBe("cpu");
        expect(cpu.info!.backends).toEqual(["CPU"]);
        expect(cpu.info!.devices.map((device) => device.type)).toEqual(["cpu"]);
        expect(cpu.info!.ggmlVersion).toMatch(/^\d+\.\d+\.\d+$/);
        expect(report.builds.map((build) => build.build)).toEqual(["cpu", "vulkan", "cuda"]);
        const text = formatInfo(report);
        expect(text).toContain("cpu: native/build/specgate_native.node, ggml");
        expect(text).toMatch(/--gpu auto computes on: /);
    });
});
