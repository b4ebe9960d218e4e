import {InvalidDrafterError} from "../../errors.js";

export interface ModelDrafterSpec {
    readonly kind: "model";
    /**
     * Draft across tokenizers (`model:retokenize`): the draft's text is re-tokenized by the target,
     * so the draft model may have any vocabulary (CrossTokenizerDrafter).
     */
    readonly retokenize?: true;
}

/** The EAGLE-3 head given as the draft GGUF (--draft), drafting from the target's hidden states. */
export interface Eagle3DrafterSpec {
    readonly kind: "eagle3";
}

export interface NgramDrafterSpec {
    readonly kind: "ngram";
    /** Shortest match that proposes; a match of n tokens proposes at most n − minN + 1. */
    readonly minN: number;
    /** Longest match looked for (the longest found wins). */
    readonly maxN: number;
    /** Most tokens per proposal; absent: γ. */
    readonly length?: number;
}

export interface SuffixDrafterSpec {
    readonly kind: "suffix";
    /** Shortest context match that proposes; a match of m tokens proposes at most m − minMatch + 1. */
    readonly minMatch: number;
    /** A continuation token is proposed only if it followed the matched context at least this often. */
    readonly minCount: number;
    /** Longest substring indexed (matched context + proposal). */
    readonly depth: number;
    /** Memory bound: the cache drops its oldest outputs while it holds more trie nodes than this. */
    readonly maxNodes: number;
}

export type SingleDrafterSpec = ModelDrafterSpec | Eagle3DrafterSpec | NgramDrafterSpec | SuffixDrafterSpec;

/** One drafter, or a chain whose members are consulted in order (the first that proposes wins). */
export type DrafterSpec = SingleDrafterSpec | {readonly kind: "chain"; readonly members: readonly SingleDrafterSpec[]};

export const ngramDefaults = {minN: 3, maxN: 16} as const;
export const suffixDefaults = {minMatch: 3, minCount: 1, depth: 24, maxNodes: 100_000} as const;
const maximumNodes = 2_000_000;

/**
 * Parses a drafter spec:
 *   model                                  the draft GGUF (--draft)
 *   model:retokenize                       the draft GGUF with any vocabulary: its text is re-tokenized by the target
 *   eagle3                                 the EAGLE-3 head given as the draft GGUF (also what `model` means for one)
 *   ngram[:MIN[:MAX[:LENGTH]]]             e.g. ngram, ngram:2:5, ngram:1:3:8 (defaults 3, 16, γ)
 *   suffix[:MIN_MATCH[:MIN_COUNT[:DEPTH[:MAX_NODES]]]]
 *                                          e.g. suffix, suffix:2:2:32:500000 (defaults 3, 1, 24, 100000)
 *   A+B[+C]                                a chain, e.g. ngram+model, ngram:3:5+suffix+model
 * Throws InvalidDrafterError naming the part that is wrong.
 */
export function parseDrafterSpec(spec: string, field = "drafter"): DrafterSpec {
    const text = spec.trim();
    if (text === "")
        throw new InvalidDrafterError(
            "is empty; expected model, model:retokenize, eagle3, ngram, suffix or a chain such as ngram+model",
            field
        );
    const parts = text.split("+").map((part) => part.trim());
    const members = parts.map((part) => parseSingle(part, text, field));
    if (members.length === 1) return members[0];
    const kinds = new Set<string>();
    for (const member of members) {
        if (kinds.has(member.kind)) throw new InvalidDrafterError(`names "${member.kind}" twice in the chain "${text}"`, field);
        kinds.add(member.kind);
    }
    if (kinds.has("model") && kinds.has("eagle3"))
        throw new InvalidDrafterError(`names both "model" and "eagle3" in the chain "${text}": both draft with --draft, name one`, field);
    return {kind: "chain", members};
}

function parseSingle(part: string, spec: string, field: string): SingleDrafterSpec {
    if (part === "") throw new InvalidDrafterError(`has an empty member in the chain "${spec}"`, field);
    const [kind, ...argumentsText] = part.split(":");
    const argument = (index: number, name: string, minimum: number, maximum: number): number | undefined => {
        const value = argumentsText[index];
        if (value == null || value === "") return undefined;
        const parsed = Number(value);
        if (!Number.isInteger(parsed) || parsed < minimum || parsed > maximum)
            throw new InvalidDrafterError(
                `${kind} ${name} must be an integer in [${minimum}, ${maximum}], got "${value}" in "${spec}"`,
                field
            );
        return parsed;
    };
    const atMost = (count: number) => {
        if (argumentsText.length > count) throw new InvalidDrafterError(`"${kind}" takes at most ${count} arguments, got "${part}"`, field);
    };
    switch (kind) {
        case "model":
            atMost(1);
            if (argumentsText.length === 0) return {kind: "model"};
            if (argumentsText[0] !== "retokenize")
                throw new InvalidDrafterError(
                    `"model" takes no argument or "retokenize" (drafting across tokenizers), got "${part}"`,
                    field
                );
            return {kind: "model", retokenize: true};
        case "eagle3":
            if (argumentsText.length > 0) throw new InvalidDrafterError(`"eagle3" takes no argument, got "${part}"`, field);
            return {kind: "eagle3"};
        case "ngram": {
            atMost(3);
            const minN = argument(0, "MIN", 1, 64) ?? ngramDefaults.minN;
            const maxN = argument(1, "MAX", 1, 64) ?? Math.max(minN, ngramDefaults.maxN);
            if (maxN < minN) throw new InvalidDrafterError(`ngram MAX (${maxN}) is below MIN (${minN}) in "${spec}"`, field);
            const length = argument(2, "LENGTH", 1, 64);
            return length == null ? {kind: "ngram", minN, maxN} : {kind: "ngram", minN, maxN, length};
        }
        case "suffix": {
            atMost(4);
            const minMatch = argument(0, "MIN_MATCH", 1, 128) ?? suffixDefaults.minMatch;
            const minCount = argument(1, "MIN_COUNT", 1, 1_000_000) ?? suffixDefaults.minCount;
            const depth = argument(2, "DEPTH", 2, 256) ?? suffixDefaults.depth;
            // Contexts of up to depth/2 tokens are matched (the rest of the depth is room to propose).
            if (minMatch > Math.floor(depth / 2))
                throw new InvalidDrafterError(
                    `suffix MIN_MATCH (${minMatch}) must be at most DEPTH/2 (${Math.floor(depth / 2)}) in "${spec}"`,
                    field
                );
            return {
                kind: "suffix",
                minMatch,
                minCount,
                depth,
                maxNodes: argument(3, "MAX_NODES", 1, maximumNodes) ?? suffixDefaults.maxNodes
            };
        }
        default:
            throw new InvalidDrafterError(
                `unknown drafter "${kind}" in "${spec}"; expected model, model:retokenize, eagle3, ngram[:MIN[:MAX[:LENGTH]]], ` +
                    "suffix[:MIN_MATCH[:MIN_COUNT[:DEPTH[:MAX_NODES]]]] or a chain of them joined by + (e.g. ngram+model)",
                field
            );
    }
}

/** Canonical label with every parameter (parseDrafterSpec(drafterLabel(s)) equals s). */
export function drafterLabel(spec: DrafterSpec): string {
    switch (spec.kind) {
        case "model":
            return spec.retokenize === true ? "model:retokenize" : "model";
        case "eagle3":
            return "eagle3";
        case "ngram":
            return `ngram:${spec.minN}:${spec.maxN}${spec.length != null ? `:${spec.length}` : ""}`;
        case "suffix":
            return `suffix:${spec.minMatch}:${spec.minCount}:${spec.depth}:${spec.maxNodes}`;
        case "chain":
            return spec.members.map(drafterLabel).join("+");
    }
}

/** Whether the spec drafts with a draft model or an EAGLE-3 head (and so needs the draft file). */
export function drafterUsesModel(spec: DrafterSpec): boolean {
    const members = spec.kind === "chain" ? spec.members : [spec];
    return members.some((member) => member.kind === "model" || member.kind === "eagle3");
}

/**
 * Whether the spec's draft model drafts in text (`model:retokenize`), so the draft may have any
 * vocabulary; false for specs without a draft model, which pair with nothing.
 */
export function drafterRetokenizes(spec: DrafterSpec): boolean {
    const members = spec.kind === "chain" ? spec.members : [spec];
    return members.some((member) => member.kind === "model" && member.retokenize === true);
}
