import {describe, expect, it} from "vitest";
import {drafterMetricKinds} from "./drafterMetricLabel.js";
import {parsePrometheusText, sumSamples, type PrometheusSample} from "./testing/parsePrometheusText.js";
import {postCompletion, tenantKeys, twoTenantApp} from "./testing/twoTenantApp.js";

const metricsKey = "operator-scrape-key";

async function scrape(app: ReturnType<typeof twoTenantApp>["app"], key: string): Promise<{status: number; samples: PrometheusSample[]}> {
    const response = await app.request("/metrics", {headers: {authorization: `Bearer ${key}`}});
    return {status: response.status, samples: response.status === 200 ? parsePrometheusText(await response.text()) : []};
}

/** Distinct drafter specs a client could send: suffix and n-gram parameters, and chains of both. */
function distinctSpecs(count: number, offset: number): string[] {
    return Array.from({length: count}, (_, index) => {
        const step = index + offset;
        const suffix = `suffix:1:1:${4 + (step % 60)}:${1000 + step}`;
        const ngram = `ngram:1:${1 + (step % 8)}:${1 + (step % 3)}`;
        return [suffix, ngram, `${ngram}+${suffix}`][index % 3];
    });
}

describe("/metrics label cardinality", () => {
    it("labels drafter series by kind, so many distinct client specs add no series", async () => {
        const {app} = twoTenantApp();
        const seriesAfter = async (specs: readonly string[]): Promise<PrometheusSample[]> => {
            for (const drafter of specs) {
                const reply = await postCompletion(app, tenantKeys.a, {
                    prompt: "abcabcabcabc",
                    max_tokens: 16,
                    temperature: 0,
                    speculative: {drafter, gamma: 2}
                });
                expect(reply.status, drafter).toBe(200);
            }
            return (await scrape(app, tenantKeys.a)).samples;
        };
        const first = await seriesAfter(distinctSpecs(30, 0));
        const second = await seriesAfter(distinctSpecs(60, 30));
        const drafterSeries = (samples: readonly PrometheusSample[]) => samples.filter((sample) => sample.labels.drafter !== undefined);
        const labels = new Set(drafterSeries(second).map((sample) => sample.labels.drafter));
        expect([...labels].sort()).toEqual(["ngram", "suffix"]);
        for (const label of labels) expect(drafterMetricKinds).toContain(label);
        // Sixty more distinct specs left the series as they were: only their values moved.
        expect(drafterSeries(second).length).toBe(drafterSeries(first).length);
        expect(second.length).toBe(first.length);
        // Each kind's lookups add up over every spec of that kind (chain members included).
        expect(sumSamples(second, "spec_decode_drafter_lookups_total", {drafter: "suffix"})).toBeGreaterThan(
            sumSamples(first, "spec_decode_drafter_lookups_total", {drafter: "suffix"})
        );
        expect(sumSamples(second, "request_success_total")).toBe(90);
    });
});

describe("/metrics and tenants", () => {
    it("holds no per-tenant series by default, and any API key reads the server-wide figures", async () => {
        const {app} = twoTenantApp();
        expect((await postCompletion(app, tenantKeys.a, {prompt: "ab", max_tokens: 4})).status).toBe(200);
        const {status, samples} = await scrape(app, tenantKeys.b);
        expect(status).toBe(200);
        expect(sumSamples(samples, "request_success_total")).toBe(1);
        expect(samples.filter((sample) => sample.labels.tenant !== undefined)).toEqual([]);
    });

    it("with a metrics key, only that key reads /metrics, with exact per-tenant counts; a tenant key reads nothing", async () => {
        const {app} = twoTenantApp({metricsApiKey: metricsKey});
        const requests = {a: 3, b: 2};
        let promptTokensOfA = 0;
        let generatedByA = 0;
        for (const [tenant, count] of Object.entries(requests) as Array<[keyof typeof requests, number]>)
            for (let index = 0; index < count; index++) {
                const reply = await postCompletion(app, tenantKeys[tenant], {prompt: `ab${"c".repeat(index)}`, max_tokens: 5});
                expect(reply.status).toBe(200);
                if (tenant === "a") {
                    promptTokensOfA += reply.body.usage.prompt_tokens as number;
                    generatedByA += reply.body.usage.completion_tokens as number;
                }
            }
        for (const key of [tenantKeys.a, tenantKeys.b, "wrong"]) {
            const response = await app.request("/metrics", {headers: {authorization: `Bearer ${key}`}});
            expect(response.status, key).toBe(401);
            const body = (await response.json()) as {error: {message: string; code: string}};
            expect(body.error.code).toBe("invalid_api_key");
            expect(body.error.message).toContain("--metrics-api-key");
        }
        expect((await app.request("/metrics")).status).toBe(401);
        // The metrics key opens /metrics only.
        expect((await postCompletion(app, metricsKey, {prompt: "ab", max_tokens: 2})).status).toBe(401);
        const {status, samples} = await scrape(app, metricsKey);
        expect(status).toBe(200);
        expect(sumSamples(samples, "tenant_request_success_total", {tenant: "key-0"})).toBe(requests.a);
        expect(sumSamples(samples, "tenant_request_success_total", {tenant: "key-1"})).toBe(requests.b);
        expect(sumSamples(samples, "tenant_prompt_tokens_total", {tenant: "key-0"})).toBe(promptTokensOfA);
        expect(sumSamples(samples, "tenant_generation_tokens_total", {tenant: "key-0"})).toBe(generatedByA);
        expect(sumSamples(samples, "request_success_total")).toBe(requests.a + requests.b);
        // Labels name a key's position, never the key.
        const text = await (await app.request("/metrics", {headers: {authorization: `Bearer ${metricsKey}`}})).text();
        for (const key of [...Object.values(tenantKeys), metricsKey]) expect(text).not.toContain(key);
    });

    it("refuses an empty or blank metrics key", () => {
        expect(() => twoTenantApp({metricsApiKey: ""})).toThrow(/metricsApiKey/);
        expect(() => twoTenantApp({metricsApiKey: "a b"})).toThrow(/metricsApiKey/);
    });
});
