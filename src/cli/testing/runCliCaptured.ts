import {vi} from "vitest";
import {runCli} from "../runCli.js";

/** Runs the CLI in-process, as `specgate ARGS…` would run, and returns its exit code and what it wrote. */
export async function runCliCaptured(...args: string[]): Promise<{code: number; stdout: string; stderr: string}> {
    let stdout = "";
    let stderr = "";
    const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
        stdout += String(chunk);
        return true;
    });
    const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
        stderr += String(chunk);
        return true;
    });
    try {
        return {code: await runCli(args), stdout, stderr};
    } finally {
        out.mockRestore();
        err.mockRestore();
    }
}
