import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {nativeBackendAvailable} from "../backend/nativeAddon.js";
import {writeEagle3TestHead} from "../backend/testing/eagle3TestHeads.js";
import {generate} from "../engine/generate.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type RunningServeServer, startServeServer} from "./startServeServer.js";

vi.setConfig(modelTestTimeouts);

/** A server whose draft is an EAGLE-3 head, its requests decoded together on one shared target context. */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), "specgate-serve-eagle3-"));
const headPath = join(directory, "head.gguf");
const prompts = [
    "Request: Set a timer for 56 minutes.\nCall:",
    "Question: Tom has 12 candies. He gives 7 to a friend. How many candies does Tom have left?\nAnswer:",
    "Anfrage: Stelle einen Timer auf 56 Minuten.\nAufruf:",
    "Repeat: 417 Paris 8 blue 23 river\nEcho:"
];

describe.runIf(nativeBackendAvailable("cpu"))("serve with an EAGLE-3 head as its draft", () => {
    let target: ModelBackend;
    let head: ModelBackend;
    let server: RunningServeServer;

    beforeAll(async () => {
        await writeEagle3TestHead(headPath, targetPath, {seed: 11});
        target = await loadModelBackend(targetPath, {backend: "native", threads: 1, batchedSequences: 4});
        head = await loadModelBackend(headPath, {backend: "native", threads: 1});
        server = await startServeServer({
            target,
            draft: head,
            modelName: "family",
            modelFiles: {target: targetPath, draft: headPath},
            speculative: {policy: {kind: "strict"}, gamma: 4, drafter: {kind: "eagle3"}},
            port: 0
        });
    });
    afterAll(async () => {
        await server?.close();
        await head?.dispose();
        await target?.dispose();
        rmSync(directory, {recursive: true, force: true});
    });

    it("concurrent requests at temperature 0 get target-only's text while the head drafts for each", async () => {
        const complete = async (prompt: string) => {
            const response = await fetch(`${server.url}/v1/completions`, {
                method: "POST",
                headers: {"content-type": "application/json"},
                body: JSON.stringify({model: "family", prompt, max_tokens: 24, temperature: 0})
            });
            expect(response.status).toBe(200);
            return (await response.json()) as {choices: Array<{text: string}>; speculative: {drafter: string; num_draft_tokens: number}};
        };
        const replies = await Promise.all([...prompts, ...prompts].map(complete));
        for (const [index, reply] of replies.entries()) {
            const expected = await generate(target, undefined, prompts[index % prompts.length], {
                sampling: {temperature: 0},
                maxTokens: 24
            });
            expect(reply.choices[0].text).toBe(expected.text);
            expect(reply.speculative.drafter).toBe("eagle3");
            expect(reply.speculative.num_draft_tokens).toBeGreaterThan(0);
        }
    });
});
