import {createHash} from "node:crypto";
import {basename} from "node:path";
import type {DecodePathDescription} from "../decodePaths/DecodePath.js";
import {canonicalJson} from "./canonicalJson.js";
import {engineIdentity, type EngineIdentity} from "./engineIdentity.js";
import {hashFile} from "./hashFile.js";

export interface DecodePathFingerprint {
    /** Hex sha256 of `inputs` in canonical JSON. */
    readonly fingerprint: string;
    readonly inputs: {
        readonly kind: DecodePathDescription["kind"];
        readonly parameters: Readonly<Record<string, unknown>>;
        /** Role → content hash; names are recorded for readers but do not enter the hash. */
        readonly files: Readonly<Record<string, string>>;
        /** Embedded paths only: HTTP paths run on a server whose engine is its own (see system_fingerprint). */
        readonly engine: EngineIdentity | null;
    };
    readonly fileNames: Readonly<Record<string, string>>;
}

/**
 * A stable sha256 of what a decode path computes: model file contents (not paths, so a copied
 * model keeps its fingerprint), policy and parameters, γ, sampler settings, and for embedded paths
 * the specgate and node-llama-cpp versions and the hash of the native llama.cpp binary. Two runs
 * with equal fingerprints decode with the same bytes of model and engine.
 */
export async function decodePathFingerprint(description: DecodePathDescription): Promise<DecodePathFingerprint> {
    const roles = Object.keys(description.files).sort();
    const hashes = await Promise.all(roles.map((role) => hashFile(description.files[role])));
    const inputs = {
        kind: description.kind,
        parameters: description.parameters,
        files: Object.fromEntries(roles.map((role, index) => [role, hashes[index]])),
        engine:
            description.kind === "embedded" ? await engineIdentity(description.backend, description.gpu, description.tokenSelection) : null
    };
    return {
        fingerprint: createHash("sha256").update(canonicalJson(inputs)).digest("hex"),
        inputs,
        fileNames: Object.fromEntries(roles.map((role) => [role, basename(description.files[role])]))
    };
}
