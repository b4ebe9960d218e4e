// A `tais run` stopped with Ctrl-C keeps its ledger (to resume from) and leaves no FILE.lock behind,
// so the rerun that resumes does not have to take over a stale lock.
import {spawn} from "node:child_process";
import {existsSync, readFileSync} from "node:fs";
import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {ExitCode} from "../../cli/exitCodes.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const root = new URL("../../../", import.meta.url).pathname;
const target = join(root, "models", "target", "model.gguf");
const draft = join(root, "models", "draft", "model.gguf");

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-ledger-lock-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

/** Lines in the ledger so far (its header counts as one). */
function ledgerLines(path: string): number {
    return existsSync(path)
        ? readFileSync(path, "utf8")
              .split("\n")
              .filter((line) => line !== "").length
        : 0;
}

describe("tais run interrupted", () => {
    it("removes FILE.lock on SIGINT and keeps the finished samples", async () => {
        const battery = join(directory, "sums.jsonl");
        // Far more samples than are done before the signal, each a few hundred tokens.
        const items = Array.from({length: 400}, (_, index) =>
            JSON.stringify({
                id: `s${index}`,
                task: "sums",
                prompt: `Question: Tom has ${index} candies. He gets 3 more. How many?\nAnswer:`,
                reference: "#### 0"
            })
        );
        await writeFile(battery, `${items.join("\n")}\n`);
        const ledger = join(directory, "ledger.jsonl");
        const child = spawn(
            process.execPath,
            [
                "--import",
                "tsx",
                join(root, "src", "cli", "main.ts"),
                "tais",
                "run",
                "--a",
                `embedded:target=${target}`,
                "--b",
                `embedded:target=${target},draft=${draft},policy=strict,gamma=4`,
                "--battery",
                battery,
                "--max-tokens",
                "64",
                "--ledger",
                ledger,
                "--quiet"
            ],
            {cwd: root, stdio: ["ignore", "pipe", "pipe"]}
        );
        let stderr = "";
        child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
        // The signal goes once samples are being written (the lock is held), not after a fixed wait.
        const poll = setInterval(() => {
            if (ledgerLines(ledger) >= 3) {
                clearInterval(poll);
                child.kill("SIGINT");
            }
        }, 50);
        const code = await exited;
        clearInterval(poll);
        expect(code, stderr).toBe(ExitCode.interrupted);
        expect(stderr).toMatch(/samples kept in .*ledger\.jsonl; .*interrupted \(SIGINT\)/);
        expect(ledgerLines(ledger)).toBeGreaterThanOrEqual(3);
        expect(existsSync(`${ledger}.lock`)).toBe(false);
    });
});
