import {defineConfig} from "vitest/config";

export default defineConfig({
    test: {
        include: ["src/**/*.test.ts", "test/**/*.test.ts"],
        // Model-dependent tests load GGUF files; give them room on a 2-core CI machine.
        testTimeout: 120_000,
        hookTimeout: 120_000,
        pool: "forks",
        // Tests that do not name a GPU compute on the CPU addon, whatever GPU builds and devices the
        // machine has: their tolerances are the CPU's (src/backend/gpu.vulkan.test.ts names its GPU).
        env: {SPECGATE_GPU: "off"}
    }
});
