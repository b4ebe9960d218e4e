import {fsdReferenceJensenShannon, jensenShannon, klDivergence, totalVariation} from "./divergences.js";

/**
 * Divergences a fuzzy policy can threshold on, argument order (target p, draft q):
 * - `js`: textbook Jensen–Shannon (bounded by ln 2 ≈ 0.693);
 * - `js-fsd`: the FSD reference code's variant ½KL(m‖p)+½KL(m‖q) (reproduces its thresholds);
 * - `kl-draft-target`: KL(q‖p), what the FSD code calls "kl";
 * - `kl-target-draft`: KL(p‖q), its reversed variant;
 * - `tv`: total variation.
 */
export const divergenceKinds = ["js", "js-fsd", "kl-draft-target", "kl-target-draft", "tv"] as const;
export type DivergenceKind = (typeof divergenceKinds)[number];

export type DivergenceFunction = (target: ArrayLike<number>, draft: ArrayLike<number>, length?: number) => number;

export const divergenceByKind: Readonly<Record<DivergenceKind, DivergenceFunction>> = {
    js: jensenShannon,
    "js-fsd": fsdReferenceJensenShannon,
    "kl-draft-target": (target, draft, length) => klDivergence(draft, target, length),
    "kl-target-draft": (target, draft, length) => klDivergence(target, draft, length),
    tv: totalVariation
};
