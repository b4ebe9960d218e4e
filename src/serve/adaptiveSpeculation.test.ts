import {describe, expect, it} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {createServeApp} from "./createServeApp.js";
import {parsePrometheusText, sumSamples} from "./testing/parsePrometheusText.js";

/** `--gamma auto` in serve: the per-response summary, the request field, and the metrics. */
const target = BigramBackend.random(3, 28, {eosBias: -6});
const draft = target.noisyCopy(4, 0.5);

function serve(speculative: {gamma: number; draftLength?: "auto"; maxGamma?: number}) {
    return createServeApp({target, draft, modelName: "bigram", speculative: {policy: {kind: "strict"}, ...speculative}});
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = Record<string, any>;

async function complete(app: ReturnType<typeof serve>["app"], body: object): Promise<{status: number; reply: Reply}> {
    const response = await app.request("/v1/completions", {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify({model: "bigram", ...body})
    });
    return {status: response.status, reply: (await response.json()) as Reply};
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

describe("serve with --gamma auto", () => {
    it("reports per-position counts and the draft lengths chosen, and decodes the target's greedy text", async () => {
        const {app} = serve({gamma: 4, draftLength: "auto", maxGamma: 6});
        const request = {prompt: "abc", max_tokens: 40, temperature: 0, seed: 1};
        const auto = await complete(app, request);
        const targetOnly = await complete(app, {...request, speculative: "off"});
        expect(auto.status).toBe(200);
        expect(auto.reply.choices[0].text).toBe(targetOnly.reply.choices[0].text);
        const summary = auto.reply.speculative;
        expect(summary).toMatchObject({mode: "speculative", gamma: "auto:6", draft_length: "auto"});
        expect(sum(summary.num_draft_tokens_per_pos)).toBe(summary.num_draft_tokens);
        expect(sum(summary.num_accepted_tokens_per_pos)).toBe(summary.num_accepted_tokens);
        expect(summary.draft_lengths.length).toBeLessThanOrEqual(7);
        expect(sum(summary.draft_lengths)).toBeGreaterThan(0);
        expect(summary.draft_lengths[0] ?? 0).toBeGreaterThanOrEqual(summary.num_skipped_steps);
        expect(summary.mean_draft_length).toBeGreaterThanOrEqual(0);
    });

    it("lets a request choose auto:MAX, or a fixed γ on an auto server, and refuses a bad MAX naming the field", async () => {
        const fixed = serve({gamma: 3});
        const chosen = await complete(fixed.app, {prompt: "xy", max_tokens: 20, speculative: {gamma: "auto:2"}});
        expect(chosen.reply.speculative).toMatchObject({gamma: "auto:2", draft_length: "auto"});
        expect(chosen.reply.speculative.draft_lengths.length).toBeLessThanOrEqual(3);
        const auto = serve({gamma: 4, draftLength: "auto", maxGamma: 8});
        const pinned = await complete(auto.app, {prompt: "xy", max_tokens: 20, speculative: {gamma: 2}});
        expect(pinned.reply.speculative).toMatchObject({gamma: 2, draft_length: "fixed"});
        expect(pinned.reply.speculative.num_skipped_steps).toBe(0);
        for (const gamma of ["auto:0", "auto:65", "sometimes"]) {
            const refused = await complete(fixed.app, {prompt: "xy", max_tokens: 4, speculative: {gamma}});
            expect(refused.status).toBe(400);
            expect(refused.reply.error.param).toBe("speculative.gamma");
        }
    });

    it("counts drafted tokens per position, draft lengths and skipped steps in /metrics, agreeing with the responses", async () => {
        const {app} = serve({gamma: 4, draftLength: "auto", maxGamma: 6});
        const replies: Reply[] = [];
        for (let seed = 0; seed < 4; seed++) replies.push((await complete(app, {prompt: "hello", max_tokens: 30, seed})).reply);
        const samples = parsePrometheusText(await (await app.request("/metrics")).text());
        const total = (key: string) => sum(replies.map((reply) => reply.speculative[key] as number));
        expect(sumSamples(samples, "spec_decode_num_draft_tokens_per_pos_total")).toBe(total("num_draft_tokens"));
        expect(sumSamples(samples, "spec_decode_num_draft_tokens_per_pos_total", {position: "0"})).toBe(
            sum(replies.map((reply) => reply.speculative.num_draft_tokens_per_pos[0] ?? 0))
        );
        expect(sumSamples(samples, "spec_decode_draft_length_count")).toBe(
            sum(replies.map((reply) => sum(reply.speculative.draft_lengths)))
        );
        expect(sumSamples(samples, "spec_decode_draft_length_sum")).toBeCloseTo(
            sum(replies.map((reply) => sum(reply.speculative.draft_lengths.map((count: number, length: number) => count * length)))),
            9
        );
        expect(sumSamples(samples, "spec_decode_num_skipped_steps_total")).toBe(total("num_skipped_steps"));
        expect(sumSamples(samples, "spec_decode_num_probe_steps_total")).toBe(total("num_probe_steps"));
    });
});
