import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import type {Chance} from "../../random/Chance.js";
import type {GenerationOptions} from "../GenerationOptions.js";
import type {GenerationTelemetry} from "../GenerationTelemetry.js";

/**
 * Drafting, separate from verification: a drafter proposes up to γ tokens per step and learns from
 * what the target accepted. A `Drafter` is long-lived (it may hold state shared by every generation
 * it serves, such as the suffix cache); each generation opens its own `DrafterSession`.
 */
export interface Drafter {
    /** Canonical spec with every parameter, e.g. `ngram:3:16`, `suffix:3:1:24:100000`, `ngram:3:16+model`. */
    readonly label: string;
    /** Labels of the drafters that can make a proposal (the members of a chain, else the label). */
    readonly members: readonly string[];
    /**
     * Token ids the drafter's model can represent, [0, vocabularySize); absent when it can propose
     * and read any id the target has (lookup drafters). The engine restricts the target to it.
     */
    readonly vocabularySize?: number;
    start(context: DrafterStart): Promise<DrafterSession>;
}

/** What a session gets when a generation starts. */
export interface DrafterStart {
    /** The model that verifies the proposals (a draft model must share its vocabulary). */
    readonly target: ModelBackend;
    /** Prompt tokens, BOS included; all but the last are already in the target's cache. */
    readonly promptTokens: readonly number[];
    readonly options: GenerationOptions;
    /** The generation's random decisions (a sampling draft model draws from the same stream as the policy). */
    readonly chance: Chance;
    readonly telemetry: GenerationTelemetry;
    /**
     * A draft-model sequence lent by the caller (prompt caching): a model drafter runs on it, keeps
     * what it holds of the prompt, and does not dispose of it.
     */
    readonly sequence?: BackendSequence;
    /** The target's sequence, whose tokens the drafter's proposals are verified on (an EAGLE-3 head reads its layers). */
    readonly targetSequence?: BackendSequence;
}

export interface DraftRequest {
    /** Prompt and every token emitted so far; the last one is the pending token (not yet verified into the target's cache). */
    readonly history: readonly number[];
    /** Most tokens to propose (≥ 1). */
    readonly maxTokens: number;
    /**
     * The target verifies on argmax ids only (temperature 0, greedy-equivalent policy): a model
     * drafter then drafts greedily on argmax ids and returns no rows.
     */
    readonly argmaxOnly: boolean;
    /**
     * The target verifies on values read on the device (strict at T > 0, deviceDrawPath): a session
     * that draws on the device (DrafterSession.drawsOnDevice) draws each token there with these
     * uniforms of the generation's generator and returns its probability alone (DraftProposal.drawn).
     */
    readonly deviceDraws?: {readonly uniform: () => number};
}

/**
 * A draft model's tokens drawn on the device: q_j(x_j) per token, and the rows' other values on demand
 * for the residual at a rejection (a draft model decodes the row's input token again, its KV before it
 * intact; an EAGLE-3 head reads the rows it kept when it drew).
 */
export interface DrawnDraft {
    /** q_j(x_j): each drafted token's probability in the draft row it was drawn from. */
    readonly probabilities: readonly number[];
    /** Draft row `row`'s probabilities at `ids` (on the device: only those cross). */
    probabilitiesAt(row: number, ids: readonly number[]): Promise<number[]>;
    /** Draft row `row`'s whole sampler row (the fallback when every candidate was rejected). */
    rowAt(row: number): Promise<Float64Array>;
}

export interface DraftProposal {
    /** 0..maxTokens proposed ids; an empty proposal makes the step target-only. */
    readonly tokens: number[];
    /** Sampler rows the tokens were drawn from; absent for q-less proposals, verified as q = δ_x. */
    readonly probs?: Float64Array[];
    /** Raw draft logits per token, when the drafter is a model. */
    readonly logits?: Float64Array[];
    /** Tokens drawn on the device (DraftRequest.deviceDraws): q at each, the rest on demand; probs and logits are then absent. */
    readonly drawn?: DrawnDraft;
    /** Member label of the drafter that made the proposal (or, for an empty one, the last consulted). */
    readonly source: string;
    /** Member labels consulted this step, in order (a chain stops at the first that proposes). */
    readonly consulted: readonly string[];
}

export interface DraftOutcome {
    readonly proposal: DraftProposal;
    /** Leading proposed tokens the policy accepted. */
    readonly accepted: number;
    /** Tokens the step emitted: the accepted prefix and the final (recovered or bonus) token. */
    readonly emitted: readonly number[];
}

export interface DrafterSession {
    /** True when the session can draft on argmax ids alone (no logit rows). */
    readonly supportsArgmax: boolean;
    /**
     * True when the session, given DraftRequest.deviceDraws, returns only proposals drawn on the device
     * (DraftProposal.drawn) or without probabilities (q = δ): never rows.
     */
    readonly drawsOnDevice?: boolean;
    propose(request: DraftRequest): Promise<DraftProposal>;
    /** After verification; the next request's history ends with `outcome.emitted`. */
    observe(outcome: DraftOutcome): void;
    /** The generation ended normally: `output` is every token it emitted (stop-truncated). */
    finish(output: readonly number[]): void;
    dispose(): Promise<void>;
}

/** An empty proposal from `source`. */
export function noProposal(source: string): DraftProposal {
    return {tokens: [], source, consulted: [source]};
}
