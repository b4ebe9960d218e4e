import type {VerificationResult} from "../policies/VerificationPolicy.js";
import type {SeededChance} from "../random/SeededChance.js";
import type {GenerationChunk} from "./GenerationOutput.js";
import type {GenerationTelemetry} from "./GenerationTelemetry.js";
import type {FinishReason, StopDetector} from "./StopDetector.js";

/**
 * What the steps of one generation share, whichever way they draft: the history (prompt and emitted
 * tokens; the last one is `pending`, not yet in the target's cache), the random stream of every
 * draw, and the stop rules that let emitted tokens out.
 */
export class StepState {
    public readonly history: number[];
    public pending: number;
    public finishReason: FinishReason | undefined;

    public constructor(
        promptTokens: readonly number[],
        public readonly chance: SeededChance,
        public readonly stopDetector: StopDetector,
        private readonly telemetry: GenerationTelemetry
    ) {
        this.history = [...promptTokens];
        this.pending = promptTokens[promptTokens.length - 1];
    }

    /** The step's tokens join the history, the last one pending; telemetry; what the stop rules let out. */
    public emit(verification: VerificationResult, proposed: number, start: number): GenerationChunk {
        const telemetry = this.telemetry;
        this.history.push(...verification.emitted);
        this.pending = verification.emitted[verification.emitted.length - 1];
        telemetry.recordStep(proposed, verification.acceptedCount, verification.emitted.length);
        const emitted = this.stopDetector.accept(verification.emitted);
        this.finishReason = emitted.finished;
        telemetry.time.other += performance.now() - start;
        return {tokens: emitted.tokens, text: emitted.text, verification};
    }
}
