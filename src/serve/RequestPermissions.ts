import {type DrafterSpec, drafterLabel, type SingleDrafterSpec} from "../engine/drafters/parseDrafterSpec.js";
import {InvalidDrafterError, InvalidInputError, InvalidPolicyError} from "../errors.js";
import {policyLabel} from "../policies/parsePolicySpec.js";
import {type PolicyConfig, type PolicyKind, policyKinds} from "../policies/policyConfigSchema.js";

const drafterKinds: ReadonlyArray<SingleDrafterSpec["kind"]> = ["model", "ngram", "suffix"];

/**
 * The lossless policies: strict and block are exact at every temperature; greedy and match emit the
 * target's own argmax at temperature 0. Every other policy trades exactness for speed (or, like
 * `random`, exists to measure what that costs), so a client may pick it only when the operator allows it.
 */
export const defaultRequestPolicies: readonly PolicyKind[] = ["strict", "block", "greedy", "match"];
/** Drafters only change speed under a lossless policy, and their learned state is kept per API key. */
export const defaultRequestDrafters: ReadonlyArray<SingleDrafterSpec["kind"]> = drafterKinds;

/**
 * What a request's `speculative` field may choose: policy kinds and drafter kinds
 * (`--request-policies`, `--request-drafters`). The server's own defaults (`--policy`, `--drafter`)
 * are always allowed, also when a request names them.
 */
export class RequestPermissions {
    public readonly policies: ReadonlySet<PolicyKind>;
    public readonly drafters: ReadonlySet<SingleDrafterSpec["kind"]>;

    public constructor(
        policies: readonly PolicyKind[] = defaultRequestPolicies,
        drafters: ReadonlyArray<SingleDrafterSpec["kind"]> = defaultRequestDrafters
    ) {
        this.policies = new Set(policies);
        this.drafters = new Set(drafters);
    }

    /** Parses `--request-policies` ("strict,greedy,match", "all" or "none"). */
    public static parsePolicies(text: string, field = "requestPolicies"): PolicyKind[] {
        return parseKindList(text, policyKinds, field);
    }

    /** Parses `--request-drafters` ("model,ngram,suffix", "all" or "none"). */
    public static parseDrafters(text: string, field = "requestDrafters"): Array<SingleDrafterSpec["kind"]> {
        return parseKindList(text, drafterKinds, field);
    }

    /** Throws InvalidPolicyError (400) naming the flag unless the operator allows this policy for requests. */
    public checkPolicy(policy: PolicyConfig, serverDefault: PolicyConfig): void {
        if (this.policies.has(policy.kind) || policyLabel(policy) === policyLabel(serverDefault)) return;
        throw new InvalidPolicyError(
            `the policy "${policy.kind}" is not available to requests on this server; allowed: ${listed(this.policies)} ` +
                `(the operator chooses them with --request-policies)`,
            "speculative.policy",
            "policy_not_allowed"
        );
    }

    /** Throws InvalidDrafterError (400) naming the flag unless every member of the spec is allowed. */
    public checkDrafter(drafter: DrafterSpec, serverDefault: DrafterSpec | undefined): void {
        if (serverDefault !== undefined && drafterLabel(drafter) === drafterLabel(serverDefault)) return;
        const members = drafter.kind === "chain" ? drafter.members : [drafter];
        const refused = members.find((member) => !this.drafters.has(member.kind));
        if (refused === undefined) return;
        throw new InvalidDrafterError(
            `the drafter "${refused.kind}" is not available to requests on this server; allowed: ${listed(this.drafters)} ` +
                `(the operator chooses them with --request-drafters)`,
            "speculative.drafter",
            "drafter_not_allowed"
        );
    }
}

function listed(kinds: ReadonlySet<string>): string {
    return kinds.size === 0 ? "none" : [...kinds].join(", ");
}

function parseKindList<Kind extends string>(text: string, known: readonly Kind[], field: string): Kind[] {
    const trimmed = text.trim();
    if (trimmed === "all") return [...known];
    if (trimmed === "none") return [];
    const kinds = trimmed.split(",").map((part) => part.trim());
    for (const kind of kinds)
        if (!(known as readonly string[]).includes(kind))
            throw new InvalidInputError(
                `unknown kind "${kind}"; expected a comma-separated list of ${known.join(", ")}, or all, or none`,
                field
            );
    return [...new Set(kinds as Kind[])];
}
