import {copyFile, mkdtemp, rm, stat, utimes, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import type {DecodePathDescription} from "../decodePaths/DecodePath.js";
import {canonicalJson} from "./canonicalJson.js";
import {decodePathFingerprint} from "./decodePathFingerprint.js";
import {engineIdentity} from "./engineIdentity.js";
import {hashFile} from "./hashFile.js";

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-fingerprint-"));
    await writeFile(join(directory, "target.gguf"), "target weights");
    await writeFile(join(directory, "draft.gguf"), "draft weights v1");
    await writeFile(join(directory, "other-draft.gguf"), "draft weights v2");
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

function embedded(draft: string, gamma: number, parameterOrder: "ab" | "ba" = "ab"): DecodePathDescription {
    const sampler = parameterOrder === "ab" ? {topK: 0, topP: 1} : {topP: 1, topK: 0};
    return {
        kind: "embedded",
        parameters: {policy: {kind: "strict"}, gamma, sampler},
        files: {target: join(directory, "target.gguf"), draft: join(directory, draft)}
    };
}

describe("decodePathFingerprint", () => {
    it("is stable across calls, key order and file copies", async () => {
        const first = await decodePathFingerprint(embedded("draft.gguf", 4));
        expect(first.fingerprint).toMatch(/^[0-9a-f]{64}$/);
        expect((await decodePathFingerprint(embedded("draft.gguf", 4, "ba"))).fingerprint).toBe(first.fingerprint);
        await copyFile(join(directory, "draft.gguf"), join(directory, "copy.gguf"));
        expect((await decodePathFingerprint(embedded("copy.gguf", 4))).fingerprint).toBe(first.fingerprint);
        expect(first.inputs.files.draft).toBe(await hashFile(join(directory, "draft.gguf")));
    });

    it("changes when the draft file, its content or γ changes", async () => {
        const base = (await decodePathFingerprint(embedded("draft.gguf", 4))).fingerprint;
        expect((await decodePathFingerprint(embedded("other-draft.gguf", 4))).fingerprint).not.toBe(base);
        expect((await decodePathFingerprint(embedded("draft.gguf", 5))).fingerprint).not.toBe(base);
        // Same path and size, new content and mtime: the cache must not hide the change.
        const draft = join(directory, "draft.gguf");
        const {mtime} = await stat(draft);
        await writeFile(draft, "draft weights v3");
        await utimes(draft, mtime, new Date(mtime.getTime() + 1000));
        expect((await decodePathFingerprint(embedded("draft.gguf", 4))).fingerprint).not.toBe(base);
    });

    it("includes the engine versions and the native binary's hash for embedded paths", async () => {
        const identity = await engineIdentity();
        expect(identity.nodeLlamaCppVersion).toMatch(/^3\.22\./);
        expect(identity.nativeBinary?.path).toMatch(/llama-addon\.node$/);
        expect(identity.nativeBinary?.sha256).toMatch(/^[0-9a-f]{64}$/);
        const {inputs} = await decodePathFingerprint(embedded("draft.gguf", 4));
        expect(inputs.engine).toEqual(identity);
        const remote = await decodePathFingerprint({kind: "openai", parameters: {model: "m"}, files: {}});
        expect(remote.inputs.engine).toBeNull();
    });

    it("names the backend and hashes its binary: the native addon and node-llama-cpp fingerprint differently", async () => {
        const native = await engineIdentity("native");
        expect(native.backend).toBe("native");
        expect(native.nativeBinary?.path).toBe("native/build/specgate_native.node");
        expect(native.nativeBinary?.sha256).toMatch(/^[0-9a-f]{64}$/);
        const onNative = await decodePathFingerprint({...embedded("draft.gguf", 4), backend: "native"});
        const onNodeLlamaCpp = await decodePathFingerprint({...embedded("draft.gguf", 4), backend: "node-llama-cpp"});
        expect(onNative.inputs.engine).toEqual(native);
        expect(onNative.fingerprint).not.toBe(onNodeLlamaCpp.fingerprint);
    });

    it("names a GPU build and its device, and leaves CPU identities as they were", async () => {
        const native = await engineIdentity("native");
        expect(native).not.toHaveProperty("gpu");
        const gpu = {build: "vulkan", device: "Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits))"} as const;
        const onGpu = await decodePathFingerprint({...embedded("draft.gguf", 4), backend: "native", gpu});
        const onCpu = await decodePathFingerprint({...embedded("draft.gguf", 4), backend: "native"});
        expect(onGpu.inputs.engine?.gpu).toEqual(gpu);
        expect(onGpu.inputs.engine?.nativeBinary?.path ?? "native/build/vulkan/specgate_native.node").toBe(
            "native/build/vulkan/specgate_native.node"
        );
        expect(onGpu.fingerprint).not.toBe(onCpu.fingerprint);
    });

    it("canonicalises JSON", () => {
        expect(canonicalJson({b: 1, a: {d: [2, {f: 1, e: 0}], c: undefined}})).toBe('{"a":{"d":[2,{"e":0,"f":1}]},"b":1}');
    });
});
