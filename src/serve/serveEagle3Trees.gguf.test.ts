import {existsSync} from "node:fs";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {nativeBackendAvailable} from "../backend/nativeAddon.js";
import {eagle3TreeBranches} from "../engine/drafters/Eagle3TreeSession.js";
import {generate} from "../engine/generate.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type RunningServeServer, startServeServer} from "./startServeServer.js";

vi.setConfig(modelTestTimeouts);

/**
 * A server drafting token trees with the shipped EAGLE-3 head, its requests decoded together on one
 * shared target context whose sequences have the branches a head's 2x3 tree takes.
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const headPath = new URL("../../models/eagle3/model.gguf", import.meta.url).pathname;
const prompts = [
    "Request: Set a timer for 56 minutes.\nCall:",
    "Question: Tom has 12 candies. He gives 7 to a friend. How many candies does Tom have left?\nAnswer:",
    "Anfrage: Stelle einen Timer auf 56 Minuten.\nAufruf:",
    "Repeat: 417 Paris 8 blue 23 river\nEcho:"
];

interface Reply {
    choices: Array<{text: string}>;
    speculative: {tree?: string; drafter: string; num_draft_tokens: number; num_accepted_tokens: number; draft_lengths: number[]};
}

describe.runIf(existsSync(headPath) && nativeBackendAvailable("cpu"))("serve drafting token trees with an EAGLE-3 head", () => {
    const tree = {width: 2, depth: 3};
    let target: ModelBackend;
    let head: ModelBackend;
    let server: RunningServeServer;

    beforeAll(async () => {
        target = await loadModelBackend(targetPath, {
            backend: "native",
            threads: 1,
            batchedSequences: 4,
            treeBranches: eagle3TreeBranches(tree),
            inlineBelowMilliseconds: 1
        });
        head = await loadModelBackend(headPath, {backend: "native", threads: 1});
        server = await startServeServer({
            target,
            draft: head,
            modelName: "family",
            modelFiles: {target: targetPath, draft: headPath},
            speculative: {policy: {kind: "strict"}, gamma: 4, drafter: {kind: "eagle3"}, tree},
            port: 0
        });
    });
    afterAll(async () => {
        await server?.close();
        await head?.dispose();
        await target?.dispose();
    });

    const post = (body: object): Promise<Response> =>
        fetch(`${server.url}/v1/completions`, {
            method: "POST",
            headers: {"content-type": "application/json"},
            body: JSON.stringify({model: "family", max_tokens: 32, temperature: 0, ...body})
        });

    it("concurrent requests at temperature 0 get target-only's text from the server's tree", async () => {
        const replies = await Promise.all(
            [...prompts, ...prompts].map(async (prompt) => {
                const response = await post({prompt});
                expect(response.status).toBe(200);
                return (await response.json()) as Reply;
            })
        );
        let accepted = 0;
        for (const [index, reply] of replies.entries()) {
            const expected = await generate(target, undefined, prompts[index % prompts.length], {
                sampling: {temperature: 0},
                maxTokens: 32
            });
            expect(reply.choices[0].text).toBe(expected.text);
            expect(reply.speculative.tree).toBe("2x3");
            expect(reply.speculative.drafter).toBe("eagle3");
            // The head read the kept path's layers after every step (side branches too): each drafted its whole tree.
            const levels = reply.speculative.draft_lengths.reduce((sum, count, depth) => sum + count * depth, 0);
            expect(reply.speculative.num_draft_tokens).toBe(tree.width * levels);
            accepted += reply.speculative.num_accepted_tokens;
        }
        expect(accepted).toBeGreaterThan(0);
    });

    it("a request for a tree deeper than the server's branches allow is a 400 naming the tree", async () => {
        const response = await post({prompt: prompts[0], speculative: {tree: "2x4"}});
        expect(response.status).toBe(400);
        const body = (await response.json()) as {error: {message: string; param: string}};
        expect(body.error.message).toContain("fewer than the 5 this tree needs");
    });
});
