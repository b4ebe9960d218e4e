import {describe, expect, it, vi} from "vitest";
import {ExitCode} from "../exitCodes.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const target = new URL("../../../models/target/model.gguf", import.meta.url).pathname;
const draft = new URL("../../../models/draft/model.gguf", import.meta.url).pathname;

interface GenerateJson {
    tokens: number[];
    engine: {tokenSelection: string | null};
    telemetry: {deviceToHostBytes: {target: number; draft: number; total: number; perToken: number} | null};
}

async function generateWith(selection: string): Promise<GenerateJson> {
    const run = await runCliCaptured(
        "generate",
        "Once upon a time",
        ...["--target", target, "--draft", draft, "--temperature", "0", "--max-tokens", "24", "--gpu", "off"],
        ...["--token-selection", selection, "--json", "-"]
    );
    expect(run.code, run.stderr).toBe(ExitCode.success);
    return JSON.parse(run.stdout) as GenerateJson;
}

describe("generate --token-selection (the shipped family pair, 260 ids)", () => {
    it("device: ids picked in the graph, the host's tokens, bytes per token in --json", async () => {
        const host = await generateWith("host");
        const device = await generateWith("device");
        expect(device.tokens).toEqual(host.tokens);
        expect(host.engine.tokenSelection).toBe("host");
        expect(device.engine.tokenSelection).toBe("device");
        expect(host.telemetry.deviceToHostBytes!.perToken).toBeGreaterThanOrEqual(4 * 260);
        expect(device.telemetry.deviceToHostBytes!.perToken).toBeLessThanOrEqual(64);
        expect(device.telemetry.deviceToHostBytes!.total).toBe(
            device.telemetry.deviceToHostBytes!.target + device.telemetry.deviceToHostBytes!.draft
        );
    });

    it("auto keeps a 260-id vocabulary on the host, and a bad value is a usage error", async () => {
        expect((await generateWith("auto")).engine.tokenSelection).toBe("host");
        const run = await runCliCaptured("generate", "x", "--target", target, "--token-selection", "gpu");
        expect(run.code).toBe(ExitCode.badInput);
        expect(run.stderr).toMatch(/expected auto, device or host, got "gpu"/);
    });
});
