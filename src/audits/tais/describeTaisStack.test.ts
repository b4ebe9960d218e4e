import {describe, expect, it} from "vitest";

import {describeTaisStack} from "./describeTaisStack.js";

describe("describeTaisStack", () => {
    it("names the models, the TAIS paper's acceptance method and this machine for embedded arms", () => {
        const identity = describeTaisStack(
            {kind: "embedded", parameters: {speculative: false, policy: null, gamma: 0}, files: {target: "models/target/model.gguf"}},
            {
                kind: "embedded",
                parameters: {speculative: true, policy: {kind: "strict"}, gamma: 4, draftSampling: "sample"},
                files: {target: "models/target/model.gguf", draft: "models/draft/model.gguf"}
            }
        );
        expect(identity).toMatchObject({
            target_model: "models/target/model.gguf",
            draft_model: "models/draft/model.gguf",
            acceptance_method: "rejection_sampling (policy strict, gamma 4, sample drafts)",
            serving_framework: "specgate embedded engine (node-llama-cpp)"
        });
        expect(identity.hardware).toMatch(/ x\d+, \d+ GiB RAM$/);
        const typical = describeTaisStack(
            {kind: "embedded", parameters: {}, files: {target: "t.gguf"}},
            {
                kind: "embedded",
                parameters: {speculative: true, policy: {kind: "typical"}, gamma: 2, draftSampling: "greedy"},
                files: {draft: "d.gguf"}
            }
        );
        expect(typical.acceptance_method).toBe("typical_acceptance (policy typical, gamma 2, greedy drafts)");
    });

    it("leaves what a remote server does not say null", () => {
        const identity = describeTaisStack(
            {kind: "openai", parameters: {baseUrl: "http://a:8000", model: "llama"}, files: {}},
            {kind: "openai", parameters: {baseUrl: "http://b:8080", model: "llama-spec"}, files: {}}
        );
        expect(identity).toEqual({
            target_model: "llama",
            draft_model: null,
            acceptance_method: null,
            serving_framework: "OpenAI-compatible endpoint http://b:8080",
            hardware: null
        });
    });
});
