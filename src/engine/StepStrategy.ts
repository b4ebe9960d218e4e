import type {BackendSequence, ModelBackend} from "../backend/ModelBackend.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";
import type {VerificationPolicy} from "../policies/VerificationPolicy.js";
import type {AdaptiveDraftLength} from "./AdaptiveDraftLength.js";
import type {GenerationChunk} from "./GenerationOutput.js";
import type {GenerationOptions} from "./GenerationOptions.js";
import type {GenerationTelemetry} from "./GenerationTelemetry.js";

/** The parts of one generation that every step works with, whichever way it drafts. */
export interface StepSetup {
    readonly target: ModelBackend;
    readonly sequence: BackendSequence;
    readonly options: GenerationOptions;
    readonly telemetry: GenerationTelemetry;
    readonly promptTokens: readonly number[];
    /** performance.now() when the generation started. */
    readonly started: number;
    readonly policy: VerificationPolicy;
    /** A draft sequence lent by the caller (prompt caching). */
    readonly draftSequence: BackendSequence | undefined;
    readonly constraint: TokenConstraint | undefined;
    /** draftLength "auto", or a shared load to report to (absent: neither). */
    readonly adaptive: AdaptiveDraftLength | undefined;
}

export interface StepInput {
    /** Tokens decoded before the pending one in the same target call: in a prompt step, the prompt but its last token. */
    readonly prefix: readonly number[];
    /** Most tokens to draft; 0: a target-only step. */
    readonly wanted: number;
    /** The step decodes the prompt (firstTokenFromPrompt) and gives the first token. */
    readonly promptStep: boolean;
}

export interface StepOutcome {
    readonly chunk: GenerationChunk;
    /** The draft length the step counts as proposed (a chain's draft tokens, a tree's depth). */
    readonly drafted: number;
    readonly accepted: number;
}

/**
 * How a generation drafts and verifies, chosen once per generation: a chain of drafts (ChainStep;
 * target-only decoding without a drafter) or a token tree (TreeStep). Each step costs one target call.
 */
export interface StepStrategy {
    /** The drafter has started, or there is none to start. */
    readonly started: boolean;
    /** Tokens the drafter must read before its next draft (a draft model catching up after steps without one); absent: none. */
    readonly draftLag?: number;
    /** Starts drafting once the prompt but its last token is in the target's cache. */
    start(): Promise<void>;
    step(input: StepInput): Promise<StepOutcome>;
    /** The generation's output, for the drafter to learn from. */
    finish(emitted: readonly number[]): void;
    dispose(): Promise<void>;
}
