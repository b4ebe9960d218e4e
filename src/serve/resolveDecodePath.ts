import {sharesVocabulary} from "../backend/assertSameVocabulary.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {pairDraftModel} from "../engine/drafters/pairDraftModel.js";
import {
    type DrafterSpec,
    drafterLabel,
    drafterRetokenizes,
    drafterUsesModel,
    parseDrafterSpec
} from "../engine/drafters/parseDrafterSpec.js";
import {InvalidDrafterError, InvalidInputError} from "../errors.js";
import {parsePolicyConfig} from "../policies/createPolicy.js";
import {parsePolicySpec, policyLabel} from "../policies/parsePolicySpec.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";
import {parseTreeShape, type TreeShape, treeShapeLabel} from "../engine/drafters/TreeDraftSession.js";
import {RequestPermissions} from "./RequestPermissions.js";
import {gammaLabel, parseGammaSpec} from "../engine/gammaSpec.js";
import type {SpeculativeField} from "./speculativeFieldSchema.js";

/** The server's speculative settings, used where a request does not override them. */
export interface SpeculativeDefaults {
    /** The server's drafter (--drafter, or `model` with --draft); absent: target-only unless a request names one. */
    readonly drafter?: DrafterSpec;
    readonly policy: PolicyConfig;
    readonly gamma: number;
    readonly draftSampling: "sample" | "greedy";
    readonly draftLength: "fixed" | "schedule" | "auto";
    /** Largest draft of `schedule` and `auto` (default 2·γ). */
    readonly maxGamma?: number;
    readonly minConfidence: number;
    /** Token trees instead of chains (--tree); their width is the most a request may ask for. */
    readonly tree?: TreeShape;
}

/**
 * How the server's draft model pairs with its target: in tokens (the same vocabulary, by llama.cpp's
 * rule: every drafter), in text only (another vocabulary: `model:retokenize`), or not at all (none).
 */
export type DraftPairing = "none" | "tokens" | "text";

/**
 * The pairing of a server's draft model, found once at start-up. A draft of another vocabulary is
 * refused unless the server's default drafter drafts in text (or uses no model), with what differs
 * and the spec that drafts across it.
 */
export function pairServeDraft(
    target: ModelBackend,
    draft: ModelBackend | undefined,
    defaultDrafter: DrafterSpec | undefined
): DraftPairing {
    if (draft === undefined) return "none";
    if (defaultDrafter !== undefined && drafterUsesModel(defaultDrafter) && !drafterRetokenizes(defaultDrafter)) {
        // Throws, naming what differs and the spec that drafts across it.
        pairDraftModel(target, draft, undefined);
        return "tokens";
    }
    return sharesVocabulary(target, draft) ? "tokens" : "text";
}

/** What one request decodes with: target-only, or speculative with these settings. */
export type ResolvedDecodePath =
    {readonly mode: "target_only"} | ({readonly mode: "speculative"; readonly drafter: DrafterSpec} & SpeculativeDefaults);

/**
 * Applies a request's `speculative` field to the server defaults. A request may name its drafter
 * (`"drafter": "ngram"`); one that drafts with a model needs the server's draft model. Without a
 * drafter (none configured and none named) only target-only decoding exists. A policy or drafter a
 * request names must be one the operator offers (`permissions`). A calibrated policy's `memory` is a
 * file path and is refused: a request never names a file on the server (the server's own correction
 * memory is used instead).
 */
export function resolveDecodePath(
    field: SpeculativeField | null | undefined,
    defaults: SpeculativeDefaults,
    draft: DraftPairing,
    permissions = new RequestPermissions()
): ResolvedDecodePath {
    if (field === "off") return {mode: "target_only"};
    const drafter = field?.drafter !== undefined ? parseDrafterSpec(field.drafter, "speculative.drafter") : defaults.drafter;
    if (field?.drafter !== undefined && drafter !== undefined) permissions.checkDrafter(drafter, defaults.drafter);
    if (drafter === undefined) {
        if (field != null)
            throw new InvalidInputError(
                'this server has no draft model or drafter; only "off" or a drafter without a model ("drafter": "ngram") is available',
                "speculative"
            );
        return {mode: "target_only"};
    }
    if (drafterUsesModel(drafter) && draft === "none")
        throw new InvalidDrafterError(
            `"${drafterLabel(drafter)}" drafts with a model and this server has no draft model`,
            "speculative.drafter"
        );
    if (drafterUsesModel(drafter) && draft === "text" && !drafterRetokenizes(drafter))
        throw new InvalidDrafterError(
            `"${drafterLabel(drafter)}" drafts in the target's tokens and this server's draft model has another vocabulary; "model:retokenize" drafts with it in text`,
            "speculative.drafter"
        );
    const policy =
        field?.policy === undefined
            ? defaults.policy
            : typeof field.policy === "string"
              ? parsePolicySpec(field.policy, "speculative.policy")
              : parsePolicyConfig(field.policy, "speculative.policy");
    if (field?.policy !== undefined) permissions.checkPolicy(policy, defaults.policy);
    if (policy.kind === "calibrated" && policy.memory !== undefined)
        throw new InvalidInputError(
            "file paths are not accepted in requests; the server's correction memory is used",
            "speculative.policy.memory"
        );
    const requested = field?.gamma !== undefined ? parseGammaSpec(field.gamma, "speculative.gamma") : undefined;
    const gamma = requested?.gamma ?? defaults.gamma;
    // A request's own γ replaces the server's: a number is a fixed length unless draft_length says otherwise.
    const draftLength =
        requested?.draftLength ??
        field?.draft_length ??
        (requested !== undefined && defaults.draftLength === "auto" ? "fixed" : defaults.draftLength);
    const maxGamma = requested !== undefined ? requested.maxGamma : defaults.maxGamma;
    if (gamma === 0) return {mode: "target_only"};
    const tree = requestedTree(field?.tree, defaults.tree, drafter);
    return {
        mode: "speculative",
        drafter,
        policy,
        gamma,
        draftSampling: field?.draft_sampling ?? defaults.draftSampling,
        draftLength,
        ...(maxGamma !== undefined ? {maxGamma} : {}),
        minConfidence: field?.min_confidence ?? defaults.minConfidence,
        ...(tree !== undefined ? {tree} : {})
    };
}

/**
 * A request's tree: "off" (a chain), "WIDTHxDEPTH" no wider than the server's --tree (its sequences
 * have that many branches), or the server's default. Trees are drafted by the draft model or head.
 */
function requestedTree(field: string | undefined, serverTree: TreeShape | undefined, drafter: DrafterSpec): TreeShape | undefined {
    if (field === "off") return undefined;
    if (field === undefined) return draftsTrees(drafter) ? serverTree : undefined;
    const tree = parseTreeShape(field, "speculative.tree");
    if (serverTree === undefined || tree.width > serverTree.width)
        throw new InvalidInputError(
            serverTree === undefined
                ? "this server decodes no token trees (its operator enables them with --tree)"
                : `this server's trees are at most ${serverTree.width} wide (--tree ${treeShapeLabel(serverTree)})`,
            "speculative.tree"
        );
    if (!draftsTrees(drafter))
        throw new InvalidInputError(
            'token trees are drafted by the draft model or EAGLE-3 head: use the drafter "model" or "eagle3"',
            "speculative.tree"
        );
    return tree;
}

/** The draft model in the target's tokens, or an EAGLE-3 head, alone: what drafts token trees. */
function draftsTrees(drafter: DrafterSpec): boolean {
    return (drafter.kind === "model" && drafter.retokenize !== true) || drafter.kind === "eagle3";
}

/** A short description for responses and logs: "target-only", "fuzzy:js:0.4, γ=4" (draft model) or "ngram:3:16, strict, γ=4". */
export function decodePathLabel(path: ResolvedDecodePath): string {
    if (path.mode === "target_only") return "target-only";
    const shape =
        path.tree !== undefined
            ? `tree ${treeShapeLabel(path.tree)}${path.draftLength === "auto" ? ", depth auto" : ""}`
            : path.draftLength === "auto"
              ? gammaLabel({gamma: path.gamma, draftLength: "auto", maxGamma: path.maxGamma ?? 2 * path.gamma})
              : `γ=${path.gamma}`;
    return `${path.drafter.kind === "model" ? "" : `${drafterLabel(path.drafter)}, `}${policyLabel(path.policy)}, ${shape}`;
}
