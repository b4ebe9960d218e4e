import {existsSync} from "node:fs";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {nativeBackendAvailable} from "../backend/nativeAddon.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {
    type Eagle3Server,
    eagle3ServePrompts as prompts,
    postCompletion,
    startEagle3Server,
    targetOnlyText
} from "./testing/eagle3Server.js";

vi.setConfig(modelTestTimeouts);

/**
 * A server drafting token trees with the shipped EAGLE-3 head, its requests decoded together on one
 * shared target context whose sequences have the branches a head's 2x3 tree takes.
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const headPath = new URL("../../models/eagle3/model.gguf", import.meta.url).pathname;

interface Reply {
    choices: Array<{text: string}>;
    speculative: {tree?: string; drafter: string; num_draft_tokens: number; num_accepted_tokens: number; draft_lengths: number[]};
}

describe.runIf(existsSync(headPath) && nativeBackendAvailable("cpu"))("serve drafting token trees with an EAGLE-3 head", () => {
    const tree = {width: 2, depth: 3};
    let eagle3: Eagle3Server;

    beforeAll(async () => {
        eagle3 = await startEagle3Server({targetPath, headPath, target: {batchedSequences: 4, inlineBelowMilliseconds: 1}, tree});
    });
    afterAll(() => eagle3?.close());

    const post = (body: object): Promise<Response> => postCompletion(eagle3.server, {max_tokens: 32, ...body});

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
            expect(reply.choices[0].text).toBe(await targetOnlyText(eagle3.target, prompts[index % prompts.length], 32));
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
