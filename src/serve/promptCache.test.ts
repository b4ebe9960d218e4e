import {describe, expect, it} from "vitest";
import {PromptCache} from "./PromptCache.js";
import {parsePrometheusText} from "./testing/parsePrometheusText.js";
import {postCompletion, type Reply, tenantKeys, tenantTarget, twoTenantApp} from "./testing/twoTenantApp.js";

const target = tenantTarget;
const keys = tenantKeys;
const serve = twoTenantApp;

async function complete(app: ReturnType<typeof serve>["app"], key: string, body: Record<string, unknown>): Promise<Reply> {
    const reply = await postCompletion(app, key, body);
    expect(reply.status).toBe(200);
    return reply.body;
}

const cachedTokens = (reply: Reply): number => reply.usage.prompt_tokens_details.cached_tokens;

describe("prompt caching in serve", () => {
    it("a follow-up turn reuses the previous turn's KV and generates exactly what an uncached request does", async () => {
        const {app} = serve();
        const first = await complete(app, keys.a, {prompt: "abcdefgh", max_tokens: 6, temperature: 0});
        expect(cachedTokens(first)).toBe(0);
        const followUp = `abcdefgh${first.choices[0].text}ij`;
        for (const temperature of [0, 1]) {
            const body = {prompt: followUp, max_tokens: 8, temperature, seed: 5};
            const cached = await complete(app, keys.a, body);
            const uncached = await complete(app, keys.a, {...body, cache_prompt: false});
            expect(cachedTokens(uncached)).toBe(0);
            expect(cached.choices[0].text).toBe(uncached.choices[0].text);
            expect(cached.usage.prompt_tokens).toBe(uncached.usage.prompt_tokens);
            if (temperature === 0) expect(cachedTokens(cached)).toBeGreaterThanOrEqual(8);
        }
    });

    it("never reuses another API key's cached prompt, and counts hits in /metrics", async () => {
        const {app} = serve({maxConcurrency: 1});
        const body = {prompt: "the same long prompt", max_tokens: 4, temperature: 0};
        expect(cachedTokens(await complete(app, keys.a, body))).toBe(0);
        expect(cachedTokens(await complete(app, keys.b, body))).toBe(0);
        expect(cachedTokens(await complete(app, keys.b, body))).toBeGreaterThan(10);
        // One sequence (one slot): tenant b's use emptied it, so tenant a starts over.
        expect(cachedTokens(await complete(app, keys.a, body))).toBe(0);
        const metrics = parsePrometheusText(await (await app.request("/metrics", {headers: {authorization: `Bearer ${keys.a}`}})).text());
        const value = (name: string): number => metrics.find((sample) => sample.name === name)!.value;
        expect(value("prompt_cache_hit_requests_total")).toBe(1);
        expect(value("prefix_cache_hits_total")).toBeGreaterThan(10);
        expect(value("prefix_cache_queries_total")).toBeGreaterThan(value("prefix_cache_hits_total"));
    });

    it("sends each follow-up to the sequence holding the longest shared prefix", async () => {
        const {app} = serve({maxConcurrency: 3});
        const prompts = ["first conversation", "second conversation", "third conversation"];
        const replies = await Promise.all(prompts.map((prompt) => complete(app, keys.a, {prompt, max_tokens: 3, temperature: 0})));
        for (const [index, prompt] of prompts.entries()) {
            const followUp = await complete(app, keys.a, {
                prompt: `${prompt}${replies[index].choices[0].text} more`,
                max_tokens: 2,
                temperature: 0
            });
            expect(cachedTokens(followUp), prompt).toBeGreaterThanOrEqual(prompt.length);
        }
    });

    it("reuses the draft model's KV too (a speculative follow-up)", async () => {
        const {app} = serve();
        const first = await complete(app, keys.a, {prompt: "draft and target", max_tokens: 6, temperature: 0, speculative: {gamma: 3}});
        const body = {prompt: `draft and target${first.choices[0].text}!`, max_tokens: 6, temperature: 0, speculative: {gamma: 3}};
        const cached = await complete(app, keys.a, body);
        expect(cachedTokens(cached)).toBeGreaterThan(10);
        expect(cached.choices[0].text).toBe((await complete(app, keys.a, {...body, cache_prompt: false})).choices[0].text);
    });
});

describe("saved prompt states (--cache-ram)", () => {
    it("a slot given to another prompt keeps its KV in host memory, and the first prompt gets it back", async () => {
        const first = {prompt: "a long first prompt about the family", max_tokens: 3, temperature: 0};
        const second = {prompt: "something else entirely", max_tokens: 3, temperature: 0};
        const {app, state} = serve({maxConcurrency: 1});
        await complete(app, keys.a, first);
        await complete(app, keys.a, second);
        const again = await complete(app, keys.a, first);
        expect(cachedTokens(again)).toBe(again.usage.prompt_tokens - 1);
        expect(state.promptCache.restores).toBe(1);
        expect(state.promptCache.saved.count).toBeGreaterThan(0);
        // Another key never gets it.
        expect(cachedTokens(await complete(app, keys.b, first))).toBe(0);
        // Without the memory, the slot holds the second prompt only.
        const {app: without} = serve({maxConcurrency: 1, promptCacheBytes: 0});
        await complete(without, keys.a, first);
        await complete(without, keys.a, second);
        expect(cachedTokens(await complete(without, keys.a, first))).toBeLessThanOrEqual(1);
    });
});

describe("PromptCache", () => {
    it("keeps at most its capacity, evicts the least recently used, and empties what a failed generation leaves", async () => {
        const cache = new PromptCache(target, undefined, 2);
        const one = await cache.lease("t", [0, 1, 2], true, false);
        await one.target.evaluate([0, 1, 2], {positions: []});
        await one.release(true);
        const two = await cache.lease("t", [6, 5], true, false);
        expect(two.target).not.toBe(one.target);
        await two.target.evaluate([6, 5], {positions: []});
        await two.release(true);
        // A prompt sharing [0, 1] goes to the first; one sharing nothing takes the least recently used (the first again).
        const again = await cache.lease("t", [0, 1, 9], true, false);
        expect(again.target).toBe(one.target);
        await again.release(true);
        const unrelated = await cache.lease("t", [7, 7], true, false);
        expect(unrelated.target).toBe(two.target);
        expect(cache.size).toBe(2);
        await unrelated.release(false);
        expect(unrelated.target.tokens).toEqual([]);
        await cache.dispose();
    });

    it("never leases one sequence twice when requests arrive together", async () => {
        const cache = new PromptCache(target, undefined, 2);
        const warm = await Promise.all([cache.lease("t", [0, 1], true, false), cache.lease("t", [2, 3], true, false)]);
        for (const lease of warm) await lease.release(true);
        // At capacity, with both sequences idle: each of two leases made in one turn takes its own.
        const leases = await Promise.all([cache.lease("t", [4], true, false), cache.lease("t", [5], true, false)]);
        expect(leases[0]!.target).not.toBe(leases[1]!.target);
        expect(cache.leased).toBe(2);
        for (const lease of leases) await lease.release(true);
        await cache.dispose();
    });
});
