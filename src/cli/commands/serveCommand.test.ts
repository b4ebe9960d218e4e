import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {Command, CommanderError} from "commander";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {writeRandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import type {RunningServeServer} from "../../serve/startServeServer.js";
import {registerServeCommand} from "./serveCommand.js";
import {defaultCacheRamBytes, fullContextStateBytes} from "../../serve/defaultCacheRam.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

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
                    const completion = (await (
                        await fetch(`${server.url}/v1/completions`, {
                            method: "POST",
                            headers: {"content-type": "application/json"},
                            body: JSON.stringify({model: "tiny", prompt: "Hi", max_tokens: 4})
                        })
                    ).json()) as Record<string, unknown>;
                    served = {health, models, completion};
                } finally {
                    await stop();
                    stopped = true;
                }
            })();
        }).parseAsync([
            "node",
            "specgate",
            "serve",
            "--target",
            pair.targetPath,
            "--draft",
            pair.draftPath,
            "--policy",
            "fuzzy:js:0.4",
            "--gamma",
            "3",
            "--port",
            "0",
            "--model-name",
            "tiny",
            "--max-concurrency",
            "2",
            "--max-queue",
            "4"
        ]);
        expect(stopped).toBe(true);
        expect(served?.health).toBe(200);
        expect(served?.models).toMatchObject({data: [{id: "tiny", speculative: true}]});
        expect(served?.completion).toMatchObject({model: "tiny", speculative: {mode: "speculative", policy: "fuzzy:js:0.4", gamma: 3}});
    });

    it("applies the target GGUF's chat template to chat requests (auto), and the default when asked", async () => {
        const templated = await mkdtemp(join(directory, "template-"));
        const withTemplate = await writeRandomLlamaPair({
            directory: templated,
            seed: 5,
            chatTemplate:
                "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
        });
        for (const [choice, expected] of [
            ["auto", "gguf"],
            ["default", "default"]
        ]) {
            let reply: {models: {data: Array<{chat_template?: string}>}; usage?: {prompt_tokens: number}} | undefined;
            await program((server, stop) => {
                void (async () => {
                    try {
                        const models = (await (await fetch(`${server.url}/v1/models`)).json()) as {data: Array<{chat_template?: string}>};
                        const chat = (await (
                            await fetch(`${server.url}/v1/chat/completions`, {
                                method: "POST",
                                headers: {"content-type": "application/json"},
                                body: JSON.stringify({messages: [{role: "user", content: "Hi"}], max_tokens: 2, temperature: 0})
                            })
                        ).json()) as {usage?: {prompt_tokens: number}};
                        reply = {models, usage: chat.usage};
                    } finally {
                        await stop();
                    }
                })();
            }).parseAsync(["node", "specgate", "serve", "--target", withTemplate.targetPath, "--port", "0", "--chat-template", choice]);
            expect(JSON.stringify(reply?.models)).toContain(`"chat_template":"${expected}"`);
            // "<s>" (parsed as BOS) + "<|user|>Hi<|assistant|>" in bytes = 1 + 22 tokens with the template.
            if (expected === "gguf") expect(reply?.usage?.prompt_tokens).toBe(1 + "<|user|>Hi<|assistant|>".length);
        }
    });

    it("requires an API key from --api-key or $SPECGATE_API_KEY on every route but /health, and checks the Host header", async () => {
        const previous = process.env.SPECGATE_API_KEY;
        process.env.SPECGATE_API_KEY = "env-one, env-two";
        let statuses: Record<string, number> = {};
        try {
            await program((server, stop) => {
                void (async () => {
                    try {
                        const models = (key?: string) =>
                            fetch(`${server.url}/v1/models`, {headers: key === undefined ? {} : {authorization: `Bearer ${key}`}});
                        statuses = {
                            health: (await fetch(`${server.url}/health`)).status,
                            none: (await models()).status,
                            wrong: (await models("nope")).status,
                            cli: (await models("cli-key")).status,
                            env: (await models("env-two")).status,
                            localhost: (await fetch(`http://localhost:${server.port}/health`)).status
                        };
                    } finally {
                        await stop();
                    }
                })();
            }).parseAsync([
                "node",
                "specgate",
                "serve",
                "--target",
                pair.targetPath,
                "--port",
                "0",
                "--api-key",
                "cli-key",
                "--allowed-hosts",
                "127.0.0.1"
            ]);
        } finally {
            if (previous === undefined) delete process.env.SPECGATE_API_KEY;
            else process.env.SPECGATE_API_KEY = previous;
        }
        expect(statuses).toEqual({health: 200, none: 401, wrong: 401, cli: 200, env: 200, localhost: 403});
    });

    it("keeps /metrics to --metrics-api-key, and sizes --cache-ram's default from the target", async () => {
        let observed: {metrics: Record<string, number>; cacheRam: number; contextSize: number} | undefined;
        await program((server, stop) => {
            void (async () => {
                try {
                    const metrics = (key: string) => fetch(`${server.url}/metrics`, {headers: {authorization: `Bearer ${key}`}});
                    observed = {
                        metrics: {
                            api: (await metrics("tenant-key")).status,
                            scraper: (await metrics("scrape-key")).status,
                            completionsWithScraperKey: (
                                await fetch(`${server.url}/v1/models`, {headers: {authorization: "Bearer scrape-key"}})
                            ).status
                        },
                        cacheRam: server.serveApp.state.promptCache.savedLimitBytes,
                        contextSize: server.serveApp.state.target.contextSize
                    };
                } finally {
                    await stop();
                }
            })();
        }).parseAsync([
            "node",
            "specgate",
            "serve",
            "--target",
            pair.targetPath,
            "--port",
            "0",
            "--api-key",
            "tenant-key",
            "--metrics-api-key",
            "scrape-key"
        ]);
        expect(observed?.metrics).toEqual({api: 401, scraper: 200, completionsWithScraperKey: 401});
        expect(observed?.cacheRam).toBe(defaultCacheRamBytes(fullContextStateBytes(pair.targetPath, observed!.contextSize)));
        expect(observed?.cacheRam).toBeLessThan(8 * 1024 ** 3);
    });

    it("refuses out-of-range options before loading anything", async () => {
        await expect(
            program().parseAsync(["node", "specgate", "serve", "--target", pair.targetPath, "--max-concurrency", "0"])
        ).rejects.toBeInstanceOf(CommanderError);
        await expect(
            program().parseAsync(["node", "specgate", "serve", "--target", pair.targetPath, "--policy", "fuzzy:nope:1"])
        ).rejects.toThrow(/policy/);
        for (const [flag, value, choices] of [
            ["--batching", "maybe", "on, off"],
            ["--draft-sampling", "beam", "sample, greedy"],
            ["--chat-template", "jinja", "auto, gguf, default"]
        ])
            await expect(program().parseAsync(["node", "specgate", "serve", "--target", pair.targetPath, flag, value])).rejects.toThrow(
                new RegExp(`'${flag} <[^>]+>' argument '${value}' is invalid\\. Allowed choices are ${choices}\\.`)
            );
    });
});
