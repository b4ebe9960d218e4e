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
import {parsePrometheusText, sumSamples} from "./testing/parsePrometheusText.js";
import {readSseData} from "./testing/readSseData.js";

vi.setConfig(modelTestTimeouts);

/**
 * The slots of a shared target context draft on one head context, several slots' drafts in shared
 * decodes: each request must get what its head would have drafted alone.
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), "specgate-serve-eagle3-batched-"));
const headPath = join(directory, "head.gguf");

interface Reply {
    choices: Array<{text: string}>;
    speculative: {num_draft_tokens: number; num_accepted_tokens: number; num_draft_tokens_per_pos: number[]};
}

/** A completion's text and what its drafts were (how many, how many accepted, per position). */
async function complete(eagle3: Eagle3Server, body: object): Promise<{text: string; drafts: string}> {
    const response = await postCompletion(eagle3.server, body);
    expect(response.status).toBe(200);
    const reply = (await response.json()) as Reply;
    const {num_draft_tokens, num_accepted_tokens, num_draft_tokens_per_pos} = reply.speculative;
    return {text: reply.choices[0].text, drafts: JSON.stringify([num_draft_tokens, num_accepted_tokens, num_draft_tokens_per_pos])};
}

/** Requests of different lengths (they finish at different times), at temperature 2 with a seed each. */
const sampled = prompts.flatMap((prompt, index) => [
    {prompt, max_tokens: 8 + 6 * index, temperature: 2, seed: 100 + index},
    {prompt, max_tokens: 30 - 5 * index, temperature: 2, seed: 200 + index}
]);

describe.runIf(nativeBackendAvailable("cpu"))("serve's EAGLE-3 slots drafting on one shared head context", () => {
    let batched: Eagle3Server;
    let alone: Eagle3Server;

    beforeAll(async () => {
        await writeEagle3TestHead(headPath, targetPath, {seed: 11});
        batched = await startEagle3Server({targetPath, headPath, target: {batchedSequences: 8}});
        alone = await startEagle3Server({targetPath, headPath, target: {batchedSequences: 8}, head: {batchedHeads: false}});
    });
    afterAll(async () => {
        await batched?.close();
        await alone?.close();
        rmSync(directory, {recursive: true, force: true});
    });

    it("at temperature 0, eight concurrent requests get target-only's text, several slots drafting in each head call", async () => {
        const before = batched.head.batchStatistics ?? {steps: 0, submissions: 0};
        const replies = await Promise.all(
            [...prompts, ...prompts].map((prompt, index) => complete(batched, {prompt, max_tokens: 12 + 3 * index}))
        );
        for (const [index, reply] of replies.entries())
            expect(reply.text).toBe(await targetOnlyText(batched.target, prompts[index % prompts.length], 12 + 3 * index));
        const after = batched.head.batchStatistics!;
        expect(after.largestStep).toBeGreaterThan(1);
        expect(after.submissions - before.submissions).toBeGreaterThan(after.steps - before.steps);
        const metrics = parsePrometheusText(await (await fetch(`${batched.server.url}/metrics`)).text());
        const steps = sumSamples(metrics, "batch_steps_total", {model: "draft"});
        expect(sumSamples(metrics, "batch_evaluations_total", {model: "draft"})).toBeGreaterThan(steps);
    });

    it("at temperature 2 (rows flat enough for every uniform to matter), seeded requests draft and write what they do with a head of their own", async () => {
        // One at a time: concurrent requests share target steps whose make-up (and so the target's last bits) varies
        // from run to run on either server; the slots' shared drafts against heads of their own are Eagle3HeadGroup.gguf.test.ts's.
        for (const body of sampled) expect(await complete(batched, body)).toEqual(await complete(alone, body));
        expect(alone.head.batchStatistics).toBeUndefined();
    });

    it("a request cancelled mid-stream leaves the others their text, and its slot drafts afresh for the next", async () => {
        const others = [...prompts, prompts[0]].map((prompt, index) => ({prompt, max_tokens: 10 + 4 * index}));
        const cancelled = (async () => {
            const response = await postCompletion(batched.server, {prompt: prompts[3], max_tokens: 200, stream: true});
            let events = 0;
            for await (const data of readSseData(response.body!)) if (data !== "[DONE]" && ++events >= 3) break;
        })();
        const replies = await Promise.all([cancelled, ...others.map((body) => complete(batched, body))]);
        for (const [index, body] of others.entries())
            expect((replies[index + 1] as {text: string}).text).toBe(await targetOnlyText(batched.target, body.prompt, body.max_tokens));
        // Every slot has served a request by now: each of these reuses one, and must draft as on a fresh server.
        const reused = await Promise.all(others.map((body) => complete(batched, {...body, max_tokens: 16})));
        for (const [index, body] of others.entries())
            expect(reused[index].text).toBe(await targetOnlyText(batched.target, body.prompt, 16));
    });

    it("a request's drafts do not depend on what an earlier request on its slot drafted", async () => {
        // One at a time, so the second request takes the slot (and head sequence) the first just left.
        const body = {prompt: prompts[1], max_tokens: 20, temperature: 2, seed: 5};
        const fresh = await complete(alone, body);
        for (const earlier of [prompts[0], prompts[2], prompts[1]]) {
            await complete(batched, {prompt: earlier, max_tokens: 24, temperature: 2, seed: 9});
            expect(await complete(batched, body)).toEqual(fresh);
        }
    });
});
