import {describe, expect, it} from "vitest";
import {parseDrafterSpec} from "../engine/drafters/parseDrafterSpec.js";
import {parsePolicySpec} from "../policies/parsePolicySpec.js";
import {RequestPermissions} from "./RequestPermissions.js";
import type {ServeAppOptions} from "./createServeApp.js";
import {postCompletion, type Reply, tenantKeys, twoTenantApp} from "./testing/twoTenantApp.js";

const keys = tenantKeys;
const serve = twoTenantApp;
const complete = postCompletion;

describe("what clients may choose", () => {
    it("offers only the lossless policies by default and names --request-policies when refusing one", async () => {
        const {app} = serve();
        for (const policy of ["strict", "greedy", "match"]) {
            const reply = await complete(app, keys.a, {prompt: "ab", max_tokens: 4, temperature: 0, speculative: {policy}});
            expect(reply.status, policy).toBe(200);
        }
        for (const policy of [
            "random:1",
            "lossy:0.5",
            "fuzzy:js:0.4",
            "typical",
            "calibrated",
            {kind: "random", acceptanceProbability: 1}
        ]) {
            const reply = await complete(app, keys.a, {prompt: "ab", max_tokens: 4, speculative: {policy}});
            expect(reply.status, JSON.stringify(policy)).toBe(400);
            expect(reply.body.error).toMatchObject({param: "speculative.policy", code: "policy_not_allowed"});
            expect(reply.body.error.message).toContain("--request-policies");
        }
    });

    it("allows what the operator lists, and the server's own policy and drafter even when a request names them", async () => {
        const {app} = serve({
            requestPolicies: ["strict", "fuzzy"],
            requestDrafters: ["ngram"],
            speculative: {policy: parsePolicySpec("typical"), drafter: parseDrafterSpec("suffix:1:1:16:5000")}
        });
        expect((await complete(app, keys.a, {prompt: "ab", max_tokens: 4, speculative: {policy: "fuzzy:js:0.2"}})).status).toBe(200);
        expect((await complete(app, keys.a, {prompt: "ab", max_tokens: 4, speculative: {policy: "typical"}})).status).toBe(200);
        expect((await complete(app, keys.a, {prompt: "ab", max_tokens: 4, speculative: {drafter: "suffix:1:1:16:5000"}})).status).toBe(200);
        expect((await complete(app, keys.a, {prompt: "ab", max_tokens: 4, speculative: {drafter: "ngram:1:3"}})).status).toBe(200);
        for (const drafter of ["model", "suffix", "ngram+model"]) {
            const reply = await complete(app, keys.a, {prompt: "ab", max_tokens: 4, speculative: {drafter}});
            expect(reply.status, drafter).toBe(400);
            expect(reply.body.error).toMatchObject({param: "speculative.drafter", code: "drafter_not_allowed"});
            expect(reply.body.error.message).toContain("--request-drafters");
        }
        expect((await complete(app, keys.a, {prompt: "ab", max_tokens: 4, speculative: {policy: "random:1"}})).status).toBe(400);
    });

    it("parses the flags' lists and refuses unknown kinds", () => {
        expect(RequestPermissions.parsePolicies("strict, fuzzy,strict")).toEqual(["strict", "fuzzy"]);
        expect(RequestPermissions.parsePolicies("all")).toHaveLength(9);
        expect(RequestPermissions.parseDrafters("none")).toEqual([]);
        expect(() => RequestPermissions.parsePolicies("strict,nope")).toThrow(/^requestPolicies: unknown kind "nope"/);
        expect(() => RequestPermissions.parseDrafters("chain")).toThrow(/chain/);
    });
});

describe("drafter caches per API key", () => {
    // The worst case the operator could allow: a policy that accepts every draft, and the suffix drafter.
    const attack = {
        prompt: "hello",
        max_tokens: 40,
        temperature: 1,
        seed: 77,
        speculative: {drafter: "suffix:1:1:64:5000", policy: "random:1", gamma: 16}
    };
    const victim = {prompt: "hello", max_tokens: 40, temperature: 1, seed: 3, speculative: {drafter: "suffix:1:1:64:5000"}};

    async function attackAfterVictim(options: Partial<ServeAppOptions>): Promise<{secret: string; stolen: Reply}> {
        // The victim's reply goes into its key's suffix cache when its generation finishes.
        const {app} = serve({requestPolicies: ["strict", "random"], ...options});
        const secret = (await complete(app, keys.a, victim)).body.choices[0].text as string;
        const stolen = (await complete(app, keys.b, attack)).body;
        return {secret, stolen};
    }

    it("a second key cannot draw the first key's outputs from the suffix drafter", async () => {
        const {stolen} = await attackAfterVictim({});
        // Not one proposal: nothing of the first key's output can reach the reply, its counters or its timing.
        expect(stolen.speculative.num_draft_tokens).toBe(0);
        expect(stolen.speculative.num_accepted_tokens).toBe(0);
    });

    it("shares them only with --share-drafter-cache (the risk it documents)", async () => {
        const {secret, stolen} = await attackAfterVictim({shareDrafterCache: true});
        // Every accepted draft token is a continuation copied from the first key's reply.
        expect(stolen.speculative.num_accepted_tokens).toBeGreaterThan(0);
        expect(secret.length).toBeGreaterThan(0);
    });

    it("the same key still learns from its own outputs", async () => {
        const {app} = serve();
        const request = {prompt: "hello", max_tokens: 30, temperature: 0, seed: 3, speculative: {drafter: "suffix:1:1:16:5000"}};
        await complete(app, keys.a, request);
        expect((await complete(app, keys.a, request)).body.speculative.num_accepted_tokens).toBeGreaterThan(0);
        expect((await complete(app, keys.b, request)).body.speculative.num_draft_tokens).toBe(0);
    });
});

describe("the calibrated correction memory", () => {
    const request = {prompt: "hello", max_tokens: 40, temperature: 1.5, seed: 3, speculative: {policy: "calibrated"}};

    it("is not changed by requests unless the operator allows it", async () => {
        const {app, state} = serve({requestPolicies: ["calibrated"]});
        const first = await complete(app, keys.a, request);
        const second = await complete(app, keys.a, request);
        expect(first.body.speculative.correction_memory).toEqual({learning: false, version: 0});
        expect(second.body.speculative.correction_memory).toEqual({learning: false, version: 0});
        expect(second.body.choices[0].text).toBe(first.body.choices[0].text);
        expect(second.body.system_fingerprint).toBe(first.body.system_fingerprint);
        expect(state.tenants.correctionMemoryVersion("key-0")).toBe(0);
    });

    it("with --learn-from-requests learns per key: one key's traffic changes neither another's memory nor its fingerprint", async () => {
        const {app, state} = serve({requestPolicies: ["calibrated"], learnFromRequests: true});
        await complete(app, keys.b, request);
        const versionB = state.tenants.correctionMemoryVersion("key-1");
        for (let seed = 0; seed < 3; seed++) await complete(app, keys.a, {...request, seed});
        expect(state.tenants.correctionMemoryVersion("key-0")).toBeGreaterThan(versionB);
        expect(state.tenants.correctionMemoryVersion("key-1")).toBe(versionB);
        const after = await complete(app, keys.b, request);
        expect(after.body.speculative.correction_memory).toEqual({learning: true, version: versionB});
        const reachedA = await complete(app, keys.a, request);
        expect(reachedA.body.speculative.correction_memory.version).toBeGreaterThan(versionB);
        expect(reachedA.body.system_fingerprint).not.toBe(after.body.system_fingerprint);
    });
});
