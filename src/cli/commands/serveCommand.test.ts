import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {Command, CommanderError} from "commander";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {writeRandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import type {RunningServeServer} from "../../serve/startServeServer.js";
import {registerServeCommand} from "./serveCommand.js";

let directory: string;
let pair: {targetPath: string; draftPath: string};

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-serve-command-"));
    pair = await writeRandomLlamaPair({directory, seed: 5});
});

afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

function program(onListening?: (server: RunningServeServer, stop: () => Promise<void>) => void): Command {
    const root = new Command().exitOverride().configureOutput({writeErr: () => undefined, writeOut: () => undefined});
    registerServeCommand(root, {onListening});
    return root;
}

describe("specgate serve", () => {
    it("loads the models, serves the configured policy and model name, and resolves once stopped", async () => {
        let served: {health: number; models: unknown; completion: Record<string, unknown>} | undefined;
        let stopped = false;
        await program((server, stop) => {
            void (async () => {
                try {
                    const health = (await fetch(`${server.url}/health`)).status;
                    const models = await (await fetch(`${server.url}/v1/models`)).json();
                    const completion = await (await fetch(`${server.url}/v1/completions`, {
                        method: "POST", body: JSON.stringify({model: "tiny", prompt: "Hi", max_tokens: 4})
                    })).json() as Record<string, unknown>;
                    served = {health, models, completion};
                } finally {
                    await stop();
                    stopped = true;
                }
            })();
        }).parseAsync([
            "node", "specgate", "serve", "--target", pair.targetPath, "--draft", pair.draftPath, "--policy", "fuzzy:js:0.4",
            "--gamma", "3", "--port", "0", "--model-name", "tiny", "--max-concurrency", "2", "--max-queue", "4"
        ]);
        expect(stopped).toBe(true);
        expect(served?.health).toBe(200);
        expect(served?.models).toMatchObject({data: [{id: "tiny", speculative: true}]});
        expect(served?.completion).toMatchObject({model: "tiny", speculative: {mode: "speculative", policy: "fuzzy:js:0.4", gamma: 3}});
    });

    it("refuses out-of-range options before loading anything", async () => {
        await expect(program().parseAsync(["node", "specgate", "serve", "--target", pair.targetPath, "--max-concurrency", "0"]))
            .rejects.toBeInstanceOf(CommanderError);
        await expect(program().parseAsync(["node", "specgate", "serve", "--target", pair.targetPath, "--policy", "fuzzy:nope:1"]))
            .rejects.toThrow(/policy/);
    });
});
