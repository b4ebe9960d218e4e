import type {ExportType} from "../exportLlamaGguf.js";

/** The corpus mixtures (names in corpusMixturePresets) the family trains on. */
export type FamilyMixture =
    | "balanced"
    | "english-heavy"
    | "copy-drill"
    | "tool-focus"
    | "tool-heavy"
    | "balanced-surface"
    | "tool-heavy-surface"
    | "arithmetic-tool-surface"
    | "arithmetic-focus";

/** One llama-finetune run; a member's later stages continue from the previous stage's weights. */
export interface TrainingStageRecipe {
    readonly mixture: FamilyMixture;
    /** A fixed number of optimizer steps, independent of how busy the machine is. */
    readonly steps: number;
    readonly epochs: number;
    /** The learning rate decays once per epoch, from this… */
    readonly learningRate: number;
    /** …to this in the last epoch (equal: constant). */
    readonly minimumLearningRate: number;
    /** Why the stage is there, for the model card. */
    readonly purpose: string;
}

/** One family member trained from random weights with llama-finetune, in one or more stages. */
export interface TrainedMemberRecipe {
    readonly kind: "trained";
    readonly name: string;
    readonly role: string;
    /** d,layers,heads,ff. */
    readonly shape: string;
    /** Seeds the initial weights of the first stage (unless `from` gives them). */
    readonly seed: number;
    /** The first stage continues from this member's final weights (built earlier in the recipe). */
    readonly from?: string;
    /** With `from`: start from only these blocks of it, in this order (keepLlamaLayers): a shallower, self-speculative draft. */
    readonly layers?: readonly number[];
    readonly stages: readonly TrainingStageRecipe[];
    /** The member the cards measure this one drafting for; default "target"; null: not a draft. */
    readonly draftsFor?: string | null;
}

/** One member made by re-encoding another. */
export interface QuantizedMemberRecipe {
    readonly kind: "quantized";
    readonly name: string;
    readonly role: string;
    readonly source: string;
    readonly type: ExportType;
    /** As for trained members; default "target". */
    readonly draftsFor?: string | null;
}

export type MemberRecipe = TrainedMemberRecipe | QuantizedMemberRecipe;

/**
 * The reference family. The corpus seed is fixed so every member and every rebuild sees the same
 * documents and one shared test split (the test split does not depend on the mixture). Every run is
 * a fixed number of optimizer steps, so a rebuild does the same work on any machine and thread count
 * (two threads are faster on an idle machine, but ggml's threads wait on each other at every
 * operation, so any other busy process slows a 2-thread run several-fold).
 *
 * Why the target is 1.1M parameters and trained in stages (docs/history.md, "The copy curriculum", and
 * the target's model card): an answer copies numbers and strings from its request, and a model this
 * small learns to copy only after phase changes. Pure copy drills reach the first (a larger shape,
 * slower per step, had not reached it in the same time); the balanced mixture with 30%
 * drills then keeps the mechanism and learns the tasks (arithmetic needs the most steps); stages with
 * tool calls weighted up teach it to copy search terms and cities, and at last to bind a conversion's
 * two currency codes to `from` and `to` in order (a second phase change, at a higher rate), after
 * which a lower rate consolidates the arithmetic. Each stage was kept because the one before it left
 * a measured gap (the model cards and docs/history.md give the figures). The drafts are an order of
 * magnitude smaller and train in one stage on the data (not on the
 * target's outputs).
 *
 * target-surface and draft-surface are the same models taught to write each answer in several
 * equivalent forms (surfaceVariant), so a draft and its target can differ without either being
 * wrong: the neutral divergence that lossy verification (seeds 001, 004) exists for, and which the
 * canonical family's answers, token-exact, leave almost none of (BENCHMARKS.md, the score-preserving
 * oracle).
 *
 * draft-shallow is the canonical target cut to its first and last blocks (keepLlamaLayers) and
 * fine-tuned: half the target's parameters and per-token cost. Of blocks [0, 1] and [0, 3], fine-tuned
 * side by side for the first two stages, [0, 3] rebuilt the copying (42 of 50 drills against 14).
 * Alone it answers few sums right, but it starts from the target's embeddings and writes the
 * canonical forms that target-surface, drafted for, often does not (BENCHMARKS.md, draft-shallow).
 */
export const familyRecipe = {
    corpus: {seed: 7, samples: 60_000, testProblems: 50},
    contextLength: 256,
    members: [
        {
            kind: "trained",
            name: "target",
            role: "the verifier: the shape that learned to copy its prompt here (see models/README.md, Copying)",
            shape: "128,4,4,512",
            seed: 1,
            stages: [
                {
                    mixture: "copy-drill",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 1e-3,
                    minimumLearningRate: 1e-3,
                    purpose: "warm-up on copy drills: forms the mechanism that copies a prompt's numbers"
                },
                {
                    mixture: "balanced",
                    steps: 36_000,
                    epochs: 2,
                    learningRate: 1e-3,
                    minimumLearningRate: 3e-4,
                    purpose: "the tasks, with 30% drills that keep the copying"
                },
                {
                    mixture: "balanced",
                    steps: 32_000,
                    epochs: 1,
                    learningRate: 5e-4,
                    minimumLearningRate: 5e-4,
                    purpose: "more of the same: arithmetic is learnt once operands are copied"
                },
                {
                    mixture: "balanced",
                    steps: 24_000,
                    epochs: 1,
                    learningRate: 3e-4,
                    minimumLearningRate: 3e-4,
                    purpose: "more of the same at a lower rate"
                },
                {
                    mixture: "tool-focus",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 5e-4,
                    minimumLearningRate: 5e-4,
                    purpose: "tool calls weighted up: search terms and cities are copied too"
                },
                {
                    mixture: "tool-focus",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 3e-4,
                    minimumLearningRate: 3e-4,
                    purpose: "the same at a lower rate, which consolidates the arithmetic"
                },
                {
                    mixture: "tool-heavy",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 3e-4,
                    minimumLearningRate: 3e-4,
                    purpose: "tool calls weighted up further: currency codes still guessed"
                },
                {
                    mixture: "tool-heavy",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 5e-4,
                    minimumLearningRate: 5e-4,
                    purpose: "the same at a higher rate: the two currency codes are bound to from and to (a second phase change)"
                },
                {
                    mixture: "tool-heavy",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 3e-4,
                    minimumLearningRate: 3e-4,
                    purpose: "consolidation at a lower rate: arithmetic recovers, currency codes stay bound"
                }
            ]
        },
        {
            kind: "trained",
            name: "draft",
            role: "draft for target, same balanced mixture",
            shape: "64,2,2,112",
            seed: 2,
            stages: [
                {
                    mixture: "balanced",
                    steps: 30_000,
                    epochs: 2,
                    learningRate: 2e-3,
                    minimumLearningRate: 1e-4,
                    purpose: "the balanced mixture"
                }
            ]
        },
        {
            kind: "trained",
            name: "draft-skewed",
            role: "draft for target trained on 90% English, 0.2% Japanese (language-disparity experiments)",
            shape: "64,2,2,112",
            seed: 2,
            stages: [
                {
                    mixture: "english-heavy",
                    steps: 30_000,
                    epochs: 2,
                    learningRate: 2e-3,
                    minimumLearningRate: 1e-4,
                    purpose: "90% English, Spanish and German 4.9% each, Japanese 0.2%"
                }
            ]
        },
        {
            kind: "quantized",
            name: "target-q8_0",
            role: "Q8_0 copy of target, the quantized-draft deployment pattern",
            source: "target",
            type: "q8_0"
        },
        {
            kind: "trained",
            name: "target-surface",
            role: "target that writes each answer in several equivalent forms (lossy-verification experiments)",
            shape: "128,4,4,512",
            seed: 1,
            from: "target",
            draftsFor: null,
            stages: [
                {
                    mixture: "tool-heavy-surface",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 3e-4,
                    minimumLearningRate: 3e-4,
                    purpose: "the target's answers in equivalent forms: operator spacing, step separator, ×, JSON spacing"
                },
                {
                    mixture: "arithmetic-tool-surface",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 3e-4,
                    minimumLearningRate: 3e-4,
                    purpose: "arithmetic weighted up: the new forms had cost sums it knew"
                }
            ]
        },
        {
            kind: "trained",
            name: "draft-surface",
            role: "draft for target-surface, same forms",
            shape: "64,2,2,112",
            seed: 2,
            draftsFor: "target-surface",
            stages: [
                {
                    mixture: "balanced-surface",
                    steps: 30_000,
                    epochs: 2,
                    learningRate: 2e-3,
                    minimumLearningRate: 1e-4,
                    purpose: "the balanced mixture, answers in equivalent forms"
                }
            ]
        },
        {
            kind: "trained",
            name: "draft-shallow",
            role: "draft for target-surface: blocks 0 and 3 of the canonical target, fine-tuned (self-speculative)",
            shape: "128,2,4,512",
            seed: 4,
            from: "target",
            layers: [0, 3],
            draftsFor: "target-surface",
            stages: [
                {
                    mixture: "arithmetic-focus",
                    steps: 16_000,
                    epochs: 1,
                    learningRate: 5e-4,
                    minimumLearningRate: 5e-4,
                    purpose: "the two kept blocks learn to work without the middle two (the copying is lost: 0/50 drills)"
                },
                {
                    mixture: "copy-drill",
                    steps: 12_000,
                    epochs: 1,
                    learningRate: 1e-3,
                    minimumLearningRate: 1e-3,
                    purpose: "copy drills rebuild the copying in two blocks (42/50 drills)"
                },
                {
                    mixture: "arithmetic-focus",
                    steps: 24_000,
                    epochs: 2,
                    learningRate: 5e-4,
                    minimumLearningRate: 3e-4,
                    purpose: "the tasks again, on the rebuilt copying"
                }
            ]
        }
    ] satisfies MemberRecipe[] as MemberRecipe[]
};
