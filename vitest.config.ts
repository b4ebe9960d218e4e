import {defineConfig} from "vitest/config";

export default defineConfig({
    test: {
        include: ["src/**/*.test.ts", "test/**/*.test.ts"],
        // Model-dependent tests load GGUF files; give them room on a 2-core CI machine.
        testTimeout: 120_000,
        hookTimeout: 120_000,
        pool: "forks"
    }
});
