import {existsSync} from "node:fs";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {nativeBackendAvailable} from "../backend/nativeAddon.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type Eagle3Server, eagle3ServePrompts as prompts, postCompletion, startEagle3Server} from "./testing/eagle3Server.js";

vi.setConfig(modelTestTimeouts);

const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const headPath = new URL("../../models/eagle3/model.gguf", import.meta.url).pathname;

/** Each prompt twice (it shares the target's steps with a twin), at temperature 0, of different lengths. */
const requests = prompts.flatMap((prompt, index) => [
    {prompt, max_tokens: 24 + 6 * index, temperature: 0},
    {prompt, max_tokens: 48 - 5 * index, temperature: 0}
]);

async function complete(eagle3: Eagle3Server, body: object): Promise<string> {
    const response = await postCompletion(eagle3.server, body);
    expect(response.status).toBe(200);
    const reply = (await response.json()) as {
        choices: {text: string}[];
        speculative: {num_draft_tokens: number; num_accepted_tokens: number};
    };
    return JSON.stringify([reply.choices[0].text, reply.speculative.num_draft_tokens, reply.speculative.num_accepted_tokens]);
}

// The shipped head, whose drafts follow the target's hidden states closely: a head fed another sequence's
// rows drafts differently, so its drafted and accepted counts change (the text at temperature 0 cannot).
describe.runIf(existsSync(headPath) && nativeBackendAvailable("cpu"))(
    "serve's EAGLE-3 drafts read only their own request's hidden states",
    () => {
        for (const batchedHeads of [true, false]) {
            describe(batchedHeads ? "heads sharing one context" : "a head per request", () => {
                let eagle3: Eagle3Server;
                beforeAll(async () => {
                    eagle3 = await startEagle3Server({targetPath, headPath, target: {batchedSequences: 8}, head: {batchedHeads}});
                });
                afterAll(async () => {
                    await eagle3?.close();
                });

                it("eight concurrent requests draft and keep what each does alone", async () => {
                    const together = await Promise.all(requests.map((body) => complete(eagle3, body)));
                    for (const [index, body] of requests.entries()) expect(together[index]).toBe(await complete(eagle3, body));
                });
            });
        }
    }
);
