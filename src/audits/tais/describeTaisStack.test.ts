import {describe, expect, it, vi} from "vitest";

import {nativeAddon, nativeBackendAvailable} from "../../backend/nativeAddon.js";
import {EmbeddedDecodePath} from "../../decodePaths/EmbeddedDecodePath.js";
import {engineVersions} from "../../fingerprint/engineVersions.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {describeServingFramework} from "./describeServingFramework.js";
import {describeTaisStack} from "./describeTaisStack.js";

vi.setConfig(modelTestTimeouts);

const versions = {specgate: "0.1.0", nodeLlamaCpp: "3.22.1", llamaCppRelease: "b6000"};

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
            acceptance_method: "rejection_sampling (policy strict, gamma 4, sample drafts)"
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

describe("describeServingFramework", () => {
    const path = {kind: "embedded", parameters: {}, files: {}} as const;

    it("names the native addon's build, ggml and the device it computed on", () => {
        const ggml = {ggmlVersion: "0.9.1", ggmlCommit: "abc1234"};
        expect(describeServingFramework({...path, backend: "native"}, versions, ggml)).toBe(
            "specgate 0.1.0, native llama.cpp addon, cpu build (ggml 0.9.1, commit abc1234), on CPU"
        );
        expect(
            describeServingFramework({...path, backend: "native", gpu: {build: "vulkan", device: "Vulkan0 (llvmpipe)"}}, versions, ggml)
        ).toBe("specgate 0.1.0, native llama.cpp addon, vulkan build (ggml 0.9.1, commit abc1234), on Vulkan0 (llvmpipe)");
        expect(describeServingFramework({...path, backend: "native", gpu: {build: "cuda", device: "CUDA0 (H100)"}}, versions, null)).toBe(
            "specgate 0.1.0, native llama.cpp addon, cuda build, on CUDA0 (H100)"
        );
    });

    it("names node-llama-cpp and its llama.cpp release, and says so when a backend names no engine", () => {
        expect(describeServingFramework({...path, backend: "node-llama-cpp"}, versions, null)).toBe(
            "specgate 0.1.0, node-llama-cpp 3.22.1 backend (its prebuilt binaries, llama.cpp b6000; not specgate's addon), on CPU"
        );
        expect(describeServingFramework(path, versions, null)).toMatch(/does not name its engine/);
    });
});

describe("the TAIS card of embedded arms on the shipped models", () => {
    const files = {target: "models/target/model.gguf", draft: "models/draft/model.gguf"};

    async function servingFramework(backend: "native" | "node-llama-cpp"): Promise<string | null> {
        const targetOnly = await EmbeddedDecodePath.open("a", {target: files.target}, {}, 1, backend);
        const speculative = await EmbeddedDecodePath.open("b", files, {policy: {kind: "strict"}, gamma: 4}, 1, backend);
        try {
            return describeTaisStack(targetOnly.describe(), speculative.describe()).serving_framework;
        } finally {
            await Promise.all([targetOnly.dispose(), speculative.dispose()]);
        }
    }

    it.runIf(nativeBackendAvailable())("names the native addon when it ran", async () => {
        const {ggmlVersion, ggmlCommit} = nativeAddon().backendInfo();
        expect(await servingFramework("native")).toBe(
            `specgate ${engineVersions().specgate}, native llama.cpp addon, cpu build (ggml ${ggmlVersion}, commit ${ggmlCommit}), on CPU`
        );
    });

    it("names node-llama-cpp when it ran", async () => {
        expect(await servingFramework("node-llama-cpp")).toMatch(
            /^specgate \S+, node-llama-cpp 3\.22\.\d+ backend .*; not specgate's addon\), on CPU$/
        );
    });
});
