import type {TokenLogprob} from "../distributions/tokenLogprobs.js";
import type {VerificationResult} from "../policies/VerificationPolicy.js";
import type {GenerationTelemetry} from "./GenerationTelemetry.js";
import type {FinishReason} from "./StopDetector.js";

export interface GenerationChunk {
    /** Token ids emitted by this step (after stop handling). */
    tokens: number[];
    /** Text to append (held back while a UTF-8 character or a stop string is incomplete). */
    text: string;
    /** The policy's decision for this step (absent for the prompt). */
    verification?: VerificationResult;
    /** With options.logprobs: one entry per token of `tokens`, from the target's row at its position. */
    logprobs?: TokenLogprob[];
}

export interface GenerationResult {
    text: string;
    tokens: number[];
    promptTokens: number;
    finishReason: FinishReason;
    telemetry: GenerationTelemetry;
}
