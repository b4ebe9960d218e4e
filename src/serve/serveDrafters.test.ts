import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {parseDrafterSpec} from "../engine/drafters/parseDrafterSpec.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {createServeApp, type ServeAppOptions} from "./createServeApp.js";
import {parsePrometheusText, sumSamples} from "./testing/parsePrometheusText.js";

const target = BigramBackend.random(3, 28, {eosBias: -30});
const draft = target.noisyCopy(4, 0.5);

// Replies are read field by field; their shape is what the assertions check.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = Record<string, any>;

async function complete(
    app: ReturnType<typeof createServeApp>["app"],
    body: Record<string, unknown>
): Promise<{status: number; body: Reply}> {
    const response = await app.request("/v1/completions", {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify(body)
    });
    return {status: response.status, body: (await response.json()) as Reply};
}

describe("drafters in serve", () => {
    it("a server without a draft model serves a request's n-gram drafter, exactly as target-only at temperature 0, and refuses `model`", async () => {
        const {app} = createServeApp({target, modelName: "bigram"});
        const request = {prompt: "abcabcab", max_tokens: 24, temperature: 0, seed: 1};
        const off = await complete(app, {...request, speculative: "off"});
        const ngram = await complete(app, {...request, speculative: {drafter: "ngram:1:3", gamma: 4}});
        expect(ngram.status).toBe(200);
        expect(ngram.body.choices[0].text).toBe(off.body.choices[0].text);
        expect(ngram.body.speculative).toMatchObject({mode: "speculative", drafter: "ngram:1:3", policy: "strict", gamma: 4});
        expect(ngram.body.speculative.drafters["ngram:1:3"].lookups).toBeGreaterThan(0);
        const model = await complete(app, {...request, speculative: {drafter: "ngram+model"}});
        expect(model.status).toBe(400);
        expect(model.body.error.param).toBe("speculative.drafter");
        expect(model.body.error.message).toContain("this server has no draft model");
        const bad = await complete(app, {...request, speculative: {drafter: "ngram:9:2"}});
        expect(bad.status).toBe(400);
        expect(bad.body.error.param).toBe("speculative.drafter");
        expect(bad.body.error.message).toContain("MAX (2) is below MIN (9)");
    });

    it("shares one suffix cache across requests, bounded, and reports each drafter in the response and in /metrics", async () => {
        const {app, state} = createServeApp({
            target,
            draft,
            modelName: "bigram",
            speculative: {drafter: parseDrafterSpec("suffix:1:1:16:5000"), gamma: 4}
        });
        const models = (await (await app.request("/v1/models")).json()) as Reply;
        expect(models.data[0]).toMatchObject({speculative: true, drafter: "suffix:1:1:16:5000"});
        const request = {prompt: "hello", max_tokens: 30, temperature: 0, seed: 3};
        const first = await complete(app, request);
        expect(first.body.speculative.num_draft_tokens).toBe(0);
        const second = await complete(app, request);
        expect(second.body.choices[0].text).toBe(first.body.choices[0].text);
        expect(second.body.speculative.num_accepted_tokens).toBeGreaterThan(0);
        // A chain that names the same suffix spec uses the same cache: it proposes on its first request.
        const chained = await complete(app, {...request, speculative: {drafter: "suffix:1:1:16:5000+model"}});
        expect(chained.body.speculative.drafters["suffix:1:1:16:5000"].proposals).toBeGreaterThan(0);
        expect(state.tenants.suffixCacheNodes).toBeGreaterThan(0);
        expect(state.tenants.suffixCacheNodes).toBeLessThanOrEqual(5000);

        const samples = parsePrometheusText(await (await app.request("/metrics")).text());
        const responses = [first, second, chained].map((reply) => reply.body.speculative.drafters as Record<string, Reply>);
        // A response names the member's full spec; /metrics counts it under its kind.
        for (const [member, drafter] of [
            ["suffix:1:1:16:5000", "suffix"],
            ["model", "model"]
        ]) {
            const total = (key: string) => responses.reduce((sum, drafters) => sum + (drafters[member]?.[key] ?? 0), 0);
            expect(sumSamples(samples, "spec_decode_drafter_lookups_total", {drafter})).toBe(total("lookups"));
            expect(sumSamples(samples, "spec_decode_drafter_proposals_total", {drafter})).toBe(total("proposals"));
            expect(sumSamples(samples, "spec_decode_drafter_draft_tokens_total", {drafter})).toBe(total("draftTokens"));
            expect(sumSamples(samples, "spec_decode_drafter_accepted_tokens_total", {drafter})).toBe(total("acceptedTokens"));
            expect(sumSamples(samples, "spec_decode_drafter_accepted_tokens_per_pos_total", {drafter})).toBe(total("acceptedTokens"));
        }
        expect(sumSamples(samples, "spec_decode_suffix_cache_nodes")).toBe(state.tenants.suffixCacheNodes);
    });

    describe("system_fingerprint", () => {
        let directory: string;
        beforeAll(async () => {
            directory = await mkdtemp(join(tmpdir(), "specgate-serve-drafters-"));
            await writeFile(join(directory, "target.gguf"), "target bytes");
            await writeFile(join(directory, "draft-a.gguf"), "draft bytes A");
            await writeFile(join(directory, "draft-b.gguf"), "draft bytes B");
        });
        afterAll(async () => {
            await rm(directory, {recursive: true, force: true});
        });

        async function fingerprint(
            draftFile: string,
            speculative: Record<string, unknown>,
            options: Partial<ServeAppOptions> = {}
        ): Promise<string> {
            const {app} = createServeApp({
                target,
                draft,
                modelName: "bigram",
                modelFiles: {target: join(directory, "target.gguf"), draft: join(directory, draftFile)},
                ...options
            });
            return (await complete(app, {prompt: "a", max_tokens: 1, speculative})).body.system_fingerprint as string;
        }

        it("names the drafter and its parameters; the draft file counts only for drafters that use it", async () => {
            const model = await fingerprint("draft-a.gguf", {});
            expect(await fingerprint("draft-a.gguf", {drafter: "model"})).toBe(model);
            const ngram = await fingerprint("draft-a.gguf", {drafter: "ngram"});
            expect(ngram).not.toBe(model);
            expect(await fingerprint("draft-a.gguf", {drafter: "ngram:2:5"})).not.toBe(ngram);
            expect(await fingerprint("draft-b.gguf", {drafter: "ngram"})).toBe(ngram);
            expect(await fingerprint("draft-b.gguf", {drafter: "ngram+model"})).not.toBe(
                await fingerprint("draft-a.gguf", {drafter: "ngram+model"})
            );
        });
    });
});
