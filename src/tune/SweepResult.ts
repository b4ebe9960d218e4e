import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import type {ConfigurationMeasurement} from "./measureConfiguration.js";
import type {ScorePreservingOracleMeasurement} from "./measureScorePreservingOracle.js";
import type {AllocationPoint} from "./randomAllocationLine.js";

/** What a sweep row is: a baseline of the same run, or one of the configurations asked for. */
export type SweepRole = "target-only" | "draft-only" | "strict" | "policy" | "random-acceptance";

export interface SweepPoint extends ConfigurationMeasurement {
    /** Unique within the sweep, e.g. "fuzzy:js:0.4 γ=4". */
    readonly label: string;
    readonly role: SweepRole;
    /** policyLabel of the verification policy ("target-only" and "draft-only" for plain decoding). */
    readonly policy: string;
    /** Null for the single-model baselines. */
    readonly gamma: number | null;
    /** Tokens/s relative to target-only decoding in the same run. */
    readonly speedup: number;
    readonly onFrontier: boolean;
    /** Accuracy of the random-allocation line at this point's tokens/s; null outside its speed range. */
    readonly randomAllocationAccuracy: number | null;
    /** For random acceptance: the label of the configuration whose acceptance rate it matches. */
    readonly matchedTo?: string;
    /**
     * The same row if verification cost one target step (oneStepVerificationSeconds): speed,
     * frontier and random-allocation comparison in the memory-bound regime of a GPU. Null when
     * a baseline emitted no tokens.
     */
    readonly oneStepVerification: OneStepVerificationPoint | null;
}

export interface OneStepVerificationPoint {
    readonly tokensPerSecond: number;
    readonly speedup: number;
    readonly onFrontier: boolean;
    readonly randomAllocationAccuracy: number | null;
}

export interface SweepResult {
    readonly settings: {
        /** Drafter of the speculative configurations, e.g. `model`, `ngram:3:16+model`. */
        readonly drafter: string;
        readonly items: number;
        readonly policies: readonly string[];
        readonly gammas: readonly number[];
        readonly sampling: SamplingOptions;
        readonly maxTokens: number;
        readonly stop: readonly string[];
        readonly seed: number;
    };
    readonly points: readonly SweepPoint[];
    /** The random-allocation baseline sampled at shares 0, 0.05, …, 1 (draft only → target only). */
    readonly randomAllocation: readonly AllocationPoint[];
    /** With `oracle`: the score-preserving oracle at each γ, the headroom for lossy verification. */
    readonly oracle?: readonly ScorePreservingOracleMeasurement[];
}
