import {defineConfig} from "vitest/config";

export default defineConfig({
    test: {
        include: ["src/**/*.test.ts", "test/**/*.test.ts"],
        // A unit test that hangs fails in 10 s; files that load GGUF models raise it with
        // vi.setConfig(modelTestTimeouts) (src/testing/modelTestTimeouts.ts).
        testTimeout: 10_000,
        hookTimeout: 10_000,
        pool: "forks",
        // Tests that do not name a GPU compute on the CPU addon, whatever GPU builds and devices the
        // machine has: their tolerances are the CPU's (src/backend/gpu.vulkan.test.ts names its GPU).
        env: {SPECGATE_GPU: "off"}
    }
});
