import {cpus, totalmem} from "node:os";
import {basename} from "node:path";

import type {DecodePathDescription} from "../../decodePaths/DecodePath.js";
import type {TaisStackIdentity} from "./taisCard.js";

/** The seed 000 names of the acceptance methods it covers; other policies keep their own name. */
const ACCEPTANCE_METHODS: Readonly<Record<string, string>> = {strict: "rejection_sampling", typical: "typical_acceptance"};

/**
 * The card's cell_identity for a `tais run`, from what the two decode paths say about themselves:
 * the target from the target-only arm, the draft, acceptance method and framework from the
 * speculative arm, and this machine's processor and memory when the speculative arm runs here.
 * What a path cannot know (a remote server's hardware or acceptance method) stays null.
 */
export function describeTaisStack(targetOnly: DecodePathDescription, speculative: DecodePathDescription): TaisStackIdentity {
    const target = targetOnly.files.target ?? speculative.files.target;
    if (speculative.kind === "openai") {
        const parameters = speculative.parameters as {baseUrl?: unknown; model?: unknown};
        return {
            target_model: target !== undefined ? basename(target) : (typeof parameters.model === "string" ? parameters.model : null),
            draft_model: null,
            acceptance_method: null,
            serving_framework: typeof parameters.baseUrl === "string" ? `OpenAI-compatible endpoint ${parameters.baseUrl}` : null,
            hardware: null
        };
    }
    const parameters = speculative.parameters as {policy?: {kind?: unknown} | null; gamma?: unknown; speculative?: unknown; draftSampling?: unknown};
    const policy = typeof parameters.policy?.kind === "string" ? parameters.policy.kind : null;
    const processors = cpus();
    return {
        target_model: target !== undefined ? basename(target) : null,
        draft_model: speculative.files.draft !== undefined ? basename(speculative.files.draft) : null,
        acceptance_method: parameters.speculative === true && policy !== null
            ? `${ACCEPTANCE_METHODS[policy] ?? policy} (policy ${policy}, gamma ${String(parameters.gamma)}, ${String(parameters.draftSampling)} drafts)`
            : null,
        serving_framework: "specgate embedded engine (node-llama-cpp)",
        hardware: processors.length === 0 ? null : `${processors[0].model.trim()} x${processors.length}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM`
    };
}
