import {cpus, totalmem} from "node:os";

import {nativeAddon} from "../../backend/nativeAddon.js";
import type {DecodePathDescription} from "../../decodePaths/DecodePath.js";
import {engineVersions} from "../../fingerprint/engineVersions.js";
import {type NativeEngineBuild, describeServingFramework} from "./describeServingFramework.js";
import type {TaisStackIdentity} from "./taisCard.js";

/** The TAIS paper names of the acceptance methods it covers; other policies keep their own name. */
const ACCEPTANCE_METHODS: Readonly<Record<string, string>> = {strict: "rejection_sampling", typical: "typical_acceptance"};

/**
 * The card's cell_identity for a `tais run`, from what the two decode paths say about themselves:
 * the model files as the decode-path specs name them, the target from the target-only arm, the draft, acceptance method and framework
 * (the engine, build and device that decoded) from the speculative arm, and this machine's processor and memory when the speculative arm runs here.
 * What a path cannot know (a remote server's hardware or acceptance method) stays null.
 */
export function describeTaisStack(targetOnly: DecodePathDescription, speculative: DecodePathDescription): TaisStackIdentity {
    const target = targetOnly.files.target ?? speculative.files.target;
    if (speculative.kind === "openai") {
        const parameters = speculative.parameters as {baseUrl?: unknown};
        return {
            // The target-only arm's model is the target; a server behind the speculative arm names its own.
            target_model: target ?? modelName(targetOnly) ?? modelName(speculative),
            draft_model: null,
            acceptance_method: null,
            serving_framework: typeof parameters.baseUrl === "string" ? `OpenAI-compatible endpoint ${parameters.baseUrl}` : null,
            hardware: null
        };
    }
    const parameters = speculative.parameters as {
        policy?: {kind?: unknown} | null;
        gamma?: unknown;
        speculative?: unknown;
        draftSampling?: unknown;
    };
    const policy = typeof parameters.policy?.kind === "string" ? parameters.policy.kind : null;
    const processors = cpus();
    return {
        target_model: target ?? null,
        draft_model: speculative.files.draft ?? null,
        acceptance_method:
            parameters.speculative === true && policy !== null
                ? `${ACCEPTANCE_METHODS[policy] ?? policy} (policy ${policy}, gamma ${String(parameters.gamma)}, ${String(parameters.draftSampling)} drafts)`
                : null,
        serving_framework: describeServingFramework(speculative, engineVersions(), nativeEngineBuild(speculative)),
        hardware:
            processors.length === 0
                ? null
                : `${processors[0].model.trim()} x${processors.length}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM`
    };
}

function modelName(description: DecodePathDescription): string | null {
    const model = (description.parameters as {model?: unknown}).model;
    return typeof model === "string" ? model : null;
}

/** ggml's version and commit from the addon build an embedded path decoded on (already loaded); null for other engines. */
function nativeEngineBuild(description: DecodePathDescription): NativeEngineBuild | null {
    if (description.backend !== "native") return null;
    try {
        const {ggmlVersion, ggmlCommit} = nativeAddon(description.gpu?.build ?? "cpu").backendInfo();
        return {ggmlVersion, ggmlCommit};
    } catch {
        return null;
    }
}
