import {existsSync} from "node:fs";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {nativeBackendAvailable} from "../backend/nativeAddon.js";
import {readModelHeader} from "../backend/readModelHeader.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type Eagle3Server, postCompletion, startEagle3Server} from "./testing/eagle3Server.js";
import {parsePrometheusText} from "./testing/parsePrometheusText.js";

vi.setConfig(modelTestTimeouts);

/**
 * An EAGLE-3 head drafting for prompts the prompt cache gives back: kept in the slot's sequence (the
 * in-memory path) or saved to host memory and restored into it (--cache-ram), the target layers' rows
 * coming back with the KV cells, so the head drafts on a cached prompt as on a decoded one.
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const headPath = new URL("../../models/eagle3/model.gguf", import.meta.url).pathname;
const prompt = "Question: Tom has 12 candies. He gives 7 to a friend. How many candies does Tom have left?\nAnswer:";
const other = "Anfrage: Stelle einen Timer auf 56 Minuten.\nAufruf:";
const tree = {width: 2, depth: 3};

interface Reply {
    choices: Array<{text: string}>;
    usage: {prompt_tokens: number; prompt_tokens_details: {cached_tokens: number}};
    speculative: {drafter: string; tree?: string; num_draft_tokens: number; num_accepted_tokens: number};
}

describe.runIf(existsSync(headPath) && nativeBackendAvailable("cpu"))("serve with an EAGLE-3 head and the prompt cache", () => {
    let eagle3: Eagle3Server;

    beforeAll(async () => {
        // One slot: a different prompt takes the slot, which saves what it held first.
        eagle3 = await startEagle3Server({targetPath, headPath, target: {batchedSequences: 2}, tree, serve: {maxConcurrency: 1}});
    });
    afterAll(() => eagle3?.close());

    const complete = async (text: string, shape: string): Promise<Reply> => {
        const response = await postCompletion(eagle3.server, {prompt: text, max_tokens: 24, speculative: {tree: shape}});
        const body: unknown = await response.json();
        expect(response.status, JSON.stringify(body)).toBe(200);
        return body as Reply;
    };

    it.each(["off", "2x3"])("tree %s: a kept and a restored prompt get the head's drafts and the first request's text", async (shape) => {
        const cache = eagle3.server.serveApp.state.promptCache;
        const first = await complete(prompt, shape);
        expect(first.speculative.drafter).toBe("eagle3");
        expect(first.speculative.num_draft_tokens).toBeGreaterThan(0);
        expect(first.speculative.num_accepted_tokens).toBeGreaterThan(0);

        // The slot still holds the prompt: only its last token is decoded again.
        const kept = await complete(prompt, shape);
        expect(kept.usage.prompt_tokens_details.cached_tokens).toBe(kept.usage.prompt_tokens - 1);
        // The head read the same rows as when the prompt was decoded: the same drafts.
        expect(kept.speculative).toEqual(first.speculative);
        expect(kept.choices[0].text).toBe(first.choices[0].text);

        // Another prompt takes the slot (its state goes to host memory), then the first comes back.
        await complete(other, shape);
        const restoresBefore = cache.restores;
        const restored = await complete(prompt, shape);
        expect(cache.restores).toBe(restoresBefore + 1);
        expect(restored.usage.prompt_tokens_details.cached_tokens).toBe(restored.usage.prompt_tokens - 1);
        expect(restored.speculative).toEqual(first.speculative);
        expect(restored.choices[0].text).toBe(first.choices[0].text);
    });

    it("the saved states' bytes count the layer rows saved with them, in the bound and in /metrics", async () => {
        const {saved, savedLimitBytes} = eagle3.server.serveApp.state.promptCache;
        const hidden = readModelHeader(targetPath).embeddingLength!;
        // At least the saved prompt's positions, each its token and three rows of the hidden size.
        expect(saved.layerRowBytes).toBeGreaterThanOrEqual(eagle3.target.tokenize(prompt).length * (4 + 3 * hidden * 4));
        expect(saved.bytes).toBeGreaterThan(saved.layerRowBytes);
        expect(saved.bytes).toBeLessThanOrEqual(savedLimitBytes);
        const metrics = parsePrometheusText(await (await fetch(`${eagle3.server.url}/metrics`)).text());
        const value = (name: string) => metrics.find((sample) => sample.name === name)?.value;
        expect(value("prompt_cache_saved_layer_row_bytes")).toBe(saved.layerRowBytes);
        expect(value("prompt_cache_saved_bytes")).toBe(saved.bytes);
    });
});
