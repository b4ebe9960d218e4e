// A Q8_0 model decodes on the native backend, greedily, to the text node-llama-cpp gives for the same
// file. ggml multiplies Q8_0 matrices with its own kernels (AMX tiles where the addon was built with
// them, scripts/amxBuildFlags.mjs): a build that kept AMX where AMX faults dies with SIGILL on the
// first decode. Each backend decodes in a child process, so such a crash fails this test instead of
// killing the test runner.
import {spawn} from "node:child_process";
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import type {BackendKind} from "./loadModelBackend.js";

vi.setConfig(modelTestTimeouts);

const root = new URL("../../", import.meta.url).pathname;
const model = join(root, "models", "target-q8_0", "model.gguf");
const prompts = readFileSync(join(root, "examples", "family-prompts.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as {prompt: string}).prompt);
const maxTokens = 32;
const directory = mkdtempSync(join(tmpdir(), "specgate-q8_0-"));
afterAll(() => rmSync(directory, {recursive: true, force: true}));

interface Decoded {
    code: number | null;
    signal: NodeJS.Signals | null;
    output: string;
    /** The greedy tokens of each prompt, in order; empty when the child failed. */
    tokens: number[][];
}

/** Greedy decodes of every prompt on `backend` (1 thread, the CPU), in a child process. */
function decodeInChild(backend: BackendKind): Promise<Decoded> {
    const script = `
        import {loadModelBackend} from ${JSON.stringify(join(root, "src/backend/loadModelBackend.ts"))};
        import {generate} from ${JSON.stringify(join(root, "src/engine/generate.ts"))};
        const target = await loadModelBackend(${JSON.stringify(model)}, {backend: ${JSON.stringify(backend)}, threads: 1});
        const tokens = [];
        for (const prompt of ${JSON.stringify(prompts)})
            tokens.push((await generate(target, undefined, prompt, {sampling: {temperature: 0}, maxTokens: ${maxTokens}})).tokens);
        await target.dispose();
        process.stdout.write("TOKENS " + JSON.stringify(tokens) + "\\n");
    `;
    // A script file, not `node -e`: node-llama-cpp forks a test process with this process's execArgv.
    const file = join(directory, `${backend}.mts`);
    writeFileSync(file, script);
    const child = spawn(process.execPath, ["--import", "tsx", file], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
        env: {...process.env, SPECGATE_GPU: "off"}
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    return new Promise((resolve, reject) => {
        child.on("error", reject);
        child.on("exit", (code, signal) => {
            const line = output.split("\n").find((text) => text.startsWith("TOKENS "));
            resolve({code, signal, output, tokens: line === undefined ? [] : (JSON.parse(line.slice("TOKENS ".length)) as number[][])});
        });
    });
}

describe("a Q8_0 model on the native backend", () => {
    it("decodes without crashing, to node-llama-cpp's greedy tokens on the same file", async () => {
        const native = await decodeInChild("native");
        const hint = native.signal === "SIGILL" ? "SIGILL in the native addon: rebuild it (npm run build:native; docs/install.md)\n" : "";
        expect(native.signal, hint + native.output).toBeNull();
        expect(native.code, native.output).toBe(0);
        const reference = await decodeInChild("node-llama-cpp");
        expect(reference.code, reference.output).toBe(0);
        expect(native.tokens).toHaveLength(prompts.length);
        expect(reference.tokens).toHaveLength(prompts.length);
        // Both multiply the same Q8_0 blocks; only float rounding differs (other kernels, another
        // summation order), which can flip a near-tie late in a continuation, never the start of one.
        let identical = 0;
        for (let index = 0; index < prompts.length; index++) {
            expect(native.tokens[index].length).toBeGreaterThan(0);
            expect(native.tokens[index].slice(0, 8), prompts[index]).toEqual(reference.tokens[index].slice(0, 8));
            if (JSON.stringify(native.tokens[index]) === JSON.stringify(reference.tokens[index])) identical++;
        }
        expect(identical).toBeGreaterThanOrEqual(prompts.length - 1);
    });
});
