import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {parseDecodePathSpec} from "./parseDecodePathSpec.js";

describe("parseDecodePathSpec", () => {
    it("parses embedded target-only and speculative specs with policy parameters", () => {
        expect(parseDecodePathSpec("embedded:target=T.gguf")).toEqual({
            kind: "embedded",
            name: "embedded:target=T.gguf",
            target: "T.gguf",
            policy: {kind: "strict"},
            gamma: 0,
            threads: 1,
            topK: 0,
            topP: undefined,
            minP: undefined
        });
        expect(
            parseDecodePathSpec(
                "embedded:target=T.gguf,draft=D.gguf,policy=fuzzy,policy.threshold=0.5,policy.divergence=js,gamma=6,name=fuzzy6"
            )
        ).toMatchObject({name: "fuzzy6", draft: "D.gguf", gamma: 6, policy: {kind: "fuzzy", threshold: 0.5, divergence: "js"}});
        expect(parseDecodePathSpec("embedded:target=T.gguf,draft=D.gguf")).toMatchObject({gamma: 4, policy: {kind: "strict"}});
    });

    it("parses an embedded path's GPU choice and offloaded layers", () => {
        expect(parseDecodePathSpec("embedded:target=T.gguf,gpu=vulkan,gpu-layers=12")).toMatchObject({gpu: "vulkan", gpuLayers: 12});
        expect(parseDecodePathSpec("embedded:target=T.gguf")).not.toHaveProperty("gpu");
        expect(() => parseDecodePathSpec("embedded:target=T.gguf,gpu=metal")).toThrow(/gpu: must be one of auto, vulkan, cuda, off/);
        expect(() => parseDecodePathSpec("embedded:target=T.gguf,gpu-layers=-1")).toThrow(InvalidInputError);
    });

    it("parses an embedded path's context size (context=N, at least 8)", () => {
        expect(parseDecodePathSpec("embedded:target=t.gguf,context=2048")).toMatchObject({kind: "embedded", contextSize: 2048});
        expect(parseDecodePathSpec("embedded:target=t.gguf")).not.toHaveProperty("contextSize");
        expect(() => parseDecodePathSpec("embedded:target=t.gguf,context=4")).toThrow(/context: must be an integer ≥ 8, got "4"/);
    });

    it("parses openai specs with extra body fields and escaped commas", () => {
        expect(
            parseDecodePathSpec(
                "openai:base=http://127.0.0.1:8000/v1,model=m,key-env=OPENAI_API_KEY,body.spec_decode=true,body.tag=a\\,b,retries=2"
            )
        ).toEqual({
            kind: "openai",
            name: "openai:base=http://127.0.0.1:8000/v1,model=m,key-env=OPENAI_API_KEY,body.spec_decode=true,body.tag=a\\,b,retries=2",
            baseUrl: "http://127.0.0.1:8000/v1",
            model: "m",
            apiKeyEnv: "OPENAI_API_KEY",
            endpoint: "auto",
            extraBody: {spec_decode: true, tag: "a,b"},
            concurrency: 4,
            maxRetries: 2,
            timeoutMs: 120000
        });
    });

    it("rejects unknown kinds, unknown keys, missing required keys and bad numbers", () => {
        expect(() => parseDecodePathSpec("vllm:base=x")).toThrow(/unknown decode path kind/);
        expect(() => parseDecodePathSpec("embedded:target=T.gguf,gama=4")).toThrow(/unknown key gama/);
        expect(() => parseDecodePathSpec("embedded:draft=D.gguf")).toThrow(/needs target=/);
        expect(() => parseDecodePathSpec("openai:base=http://x/v1,model=m,concurrency=0")).toThrow(InvalidInputError);
        expect(() => parseDecodePathSpec("openai:base=http://x/v1,model")).toThrow(/expected key=value/);
        expect(() => parseDecodePathSpec("embedded:target=a,target=b")).toThrow(/given twice/);
    });
});
