import {join} from "node:path";
import {describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {ExitCode} from "./exitCodes.js";
import {runCliCaptured} from "./testing/runCliCaptured.js";

vi.setConfig(modelTestTimeouts);

const models = join(new URL("../../", import.meta.url).pathname, "models");

describe("bad input named as the user gave it", () => {
    it("a folder given as a model names the folder and the GGUF files in it", async () => {
        const folder = join(models, "target");
        const outcome = await runCliCaptured("generate", "--target", folder, "--max-tokens", "2", "Hi");
        expect(outcome.code).toBe(ExitCode.badInput);
        expect(outcome.stderr).toBe(
            `specgate generate: ${folder}: is a folder, not a GGUF model file; it holds ${join(folder, "model.gguf")}\n`
        );
    });

    it("a bad @ suffix in --battery is a bad limit, not an unknown language", async () => {
        const target = join(models, "target", "model.gguf");
        const outcome = await runCliCaptured(
            "tais",
            "run",
            "--a",
            `embedded:target=${target}`,
            "--b",
            `embedded:target=${target}`,
            "--battery",
            "mgsm:de@-5"
        );
        expect(outcome.code).toBe(ExitCode.badInput);
        expect(outcome.stderr).toMatch(
            /"mgsm:de@-5": the @ suffix keeps an entry's first N items and must be a whole number of at least 1, got "@-5"\n$/
        );
        expect(outcome.stderr).not.toMatch(/language/);
    });
});
