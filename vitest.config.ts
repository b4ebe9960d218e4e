import {readdirSync, readFileSync} from "node:fs";
import {configDefaults, defineConfig} from "vitest/config";

/** Checks of the repository as a whole, not of one module: build scripts, the packed package, the layer rule, the docs against the code. */
const endToEndTests = ["test/**/*.test.ts", "src/docs/**/*.test.ts"];

/**
 * The test files that load GGUF models: named *.gguf.test.ts, or raising their timeouts with
 * modelTestTimeouts (src/testing/modelTestTimeouts.ts), as every file that loads a model does.
 * They form the `model` project; the rest of src/ is `unit` (ARCHITECTURE.md, "Tests").
 */
function modelTestFiles(): string[] {
    return readdirSync("src", {recursive: true, encoding: "utf8"})
        .filter((name) => name.endsWith(".test.ts") && !name.startsWith("docs/"))
        .map((name) => `src/${name}`)
        .filter((path) => path.endsWith(".gguf.test.ts") || readFileSync(path, "utf8").includes("modelTestTimeouts"))
        .sort();
}

const modelTests = modelTestFiles();

export default defineConfig({
    test: {
        // A unit test that hangs fails in 10 s; files that load GGUF models raise it with
        // vi.setConfig(modelTestTimeouts) (src/testing/modelTestTimeouts.ts).
        testTimeout: 10_000,
        hookTimeout: 10_000,
        pool: "forks",
        // Tests that do not name a GPU compute on the CPU addon, whatever GPU builds and devices the
        // machine has: their tolerances are the CPU's (src/backend/gpu.vulkan.test.ts names its GPU).
        env: {SPECGATE_GPU: "off"},
        // `npm test` runs the three; `npm run test:unit` the first alone.
        projects: [
            // Modules on in-memory backends (BigramBackend and other test doubles): no model file is loaded.
            {
                extends: true,
                test: {name: "unit", include: ["src/**/*.test.ts"], exclude: [...configDefaults.exclude, ...endToEndTests, ...modelTests]}
            },
            // Loads GGUF models (models/, or ones it builds) and decodes with llama.cpp.
            {extends: true, test: {name: "model", include: modelTests}},
            {extends: true, test: {name: "e2e", include: endToEndTests}}
        ]
    }
});
