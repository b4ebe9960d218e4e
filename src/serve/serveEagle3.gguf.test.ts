import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {nativeBackendAvailable} from "../backend/nativeAddon.js";
import {writeEagle3TestHead} from "../backend/testing/eagle3TestHeads.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {
    type Eagle3Server,
    eagle3ServePrompts as prompts,
    postCompletion,
    startEagle3Server,
    targetOnlyText
} from "./testing/eagle3Server.js";

vi.setConfig(modelTestTimeouts);

/** A server whose draft is an EAGLE-3 head, its requests decoded together on one shared target context. */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), "specgate-serve-eagle3-"));
const headPath = join(directory, "head.gguf");

describe.runIf(nativeBackendAvailable("cpu"))("serve with an EAGLE-3 head as its draft", () => {
    let eagle3: Eagle3Server;

    beforeAll(async () => {
        await writeEagle3TestHead(headPath, targetPath, {seed: 11});
        eagle3 = await startEagle3Server({targetPath, headPath, target: {batchedSequences: 4}});
    });
    afterAll(async () => {
        await eagle3?.close();
        rmSync(directory, {recursive: true, force: true});
    });

    it("concurrent requests at temperature 0 get target-only's text while the head drafts for each", async () => {
        const complete = async (prompt: string) => {
            const response = await postCompletion(eagle3.server, {prompt, max_tokens: 24});
            expect(response.status).toBe(200);
            return (await response.json()) as {choices: Array<{text: string}>; speculative: {drafter: string; num_draft_tokens: number}};
        };
        const replies = await Promise.all([...prompts, ...prompts].map(complete));
        for (const [index, reply] of replies.entries()) {
            expect(reply.choices[0].text).toBe(await targetOnlyText(eagle3.target, prompts[index % prompts.length], 24));
            expect(reply.speculative.drafter).toBe("eagle3");
            expect(reply.speculative.num_draft_tokens).toBeGreaterThan(0);
        }
    });
});
