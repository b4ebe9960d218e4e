// A process that exits while a grammar job's thread still runs inside llama.cpp ends with its own exit
// code, not a crash: the guard skips the static destructors that would run under that thread.
import {spawn} from "node:child_process";
import {join} from "node:path";
import {describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const root = new URL("../../", import.meta.url).pathname;

/** A child that starts grammar jobs (two of minutes, on a model it disposes of at once; two of a millisecond), then exits by `how`. */
function exitDuringGrammarJob(how: string): Promise<{code: number | null; signal: NodeJS.Signals | null; output: string}> {
    const script = `
        import {nativeAddon} from ${JSON.stringify(join(root, "src/backend/nativeAddon.ts"))};
        import {slowGrammar} from ${JSON.stringify(join(root, "src/testing/slowGrammar.ts"))};
        const addon = nativeAddon();
        const model = new addon.NativeModel(${JSON.stringify(join(root, "models/target/model.gguf"))});
        void addon.compileGrammar(model, slowGrammar(19), undefined, 4);
        void addon.compileJsonSchema(JSON.stringify({type: "object", properties: Object.fromEntries(Array.from({length: 3000}, (_, i) => ["p" + i, {}]))}), 4, 1 << 30);
        // Two that end while the process tears down, the hardest moment for a thread to finish.
        void addon.compileJsonSchema('{"type": "string"}', 4, 1 << 20);
        void addon.compileJsonSchema('{"type": "integer"}', 4, 1 << 20);
        model.dispose();
        process.stdout.write("jobs " + addon.grammarJobsRunning() + "\\n");
        ${how}
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"]
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    return new Promise((resolve, reject) => {
        child.on("error", reject);
        child.on("exit", (code, signal) => resolve({code, signal, output}));
    });
}

describe("exiting while grammar jobs run", () => {
    for (const [name, how, code] of [
        ["the event loop empties", "process.exitCode = 3;", 3],
        ["process.exit is called", "process.exit(4);", 4],
        [
            "a signal handler exits",
            "process.on('SIGTERM', () => process.exit(143)); process.kill(process.pid, 'SIGTERM'); setInterval(() => {}, 1000);",
            143
        ]
    ] as const)
        it(`ends with the process's own exit code when ${name}`, async () => {
            const started = performance.now();
            const finished = await exitDuringGrammarJob(how);
            // The two slow jobs still run; the two tiny ones may have ended already on a quick machine.
            expect(finished.output).toMatch(/^jobs [234]$/m);
            expect(finished.signal, finished.output).toBeNull();
            expect(finished.code, finished.output).toBe(code);
            expect(finished.output).not.toMatch(/terminate called|Aborted|Segmentation/);
            // The jobs alone would run for minutes; the exit does not wait for them (generous: a busy machine).
            expect(performance.now() - started).toBeLessThan(60_000);
        });
});
