import type {CorpusLanguage} from "../corpus/CorpusSample.js";
import type {ModelEvaluation} from "../evaluateModel.js";
import type {FinetuneTrainingReport} from "../finetune/trainWithLlamaFinetune.js";
import type {MemberRecipe} from "./familyRecipe.js";

/** What a model card says about one member. */
export interface MemberReport {
    readonly recipe: MemberRecipe;
    readonly file: string;
    readonly bytes: number;
    readonly storage: "F32" | "F16" | "Q8_0";
    readonly parameters: number;
    readonly shape: string;
    readonly contextLength: number;
    readonly vocabularyIdentity: string;
    /** Absent for members made by re-encoding. */
    readonly training?: FinetuneTrainingReport;
    /** Every stage's report in order (the last is `training`); absent for members made by re-encoding. */
    readonly stages?: readonly FinetuneTrainingReport[];
    /** Trained members: matrices still at their seeded initialisation (up to scale), found by tensorsLeftAtInitialisation. */
    readonly untrainedTensors?: readonly string[];
    readonly evaluation: ModelEvaluation;
    /** This member drafting for its verifier (greedy, γ = 4, T = 0); absent for members that draft for none. */
    readonly asDraft?: {
        /** The member it drafts for (recipe draftsFor, default "target"); absent in reports from before it existed. */
        readonly verifier?: string;
        readonly overall: number;
        readonly byLanguage: Partial<Record<CorpusLanguage, number>>;
        /** Best minus worst language, in percentage points. */
        readonly languageGapPoints: number;
        readonly outputsMatchTarget: boolean;
    };
}

export interface FamilyReport {
    readonly format: "specgate-family/1";
    readonly corpus: {readonly seed: number; readonly samples: number; readonly testProblems: number};
    readonly members: MemberReport[];
}
