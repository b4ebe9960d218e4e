import {RestrictedConstraint} from "./RestrictedConstraint.js";
import {argmax} from "../distributions/argmax.js";
import {InvalidInputError} from "../errors.js";
import {processLogits} from "../distributions/processLogits.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {checkTokens} from "./checkEvaluation.js";
import type {
    BackendSequence,
    BackendTimings,
    EvaluatedDistributions,
    EvaluateOptions,
    LayerSource,
    ModelBackend,
    SequenceState
} from "./ModelBackend.js";

/**
 * `backend` seen through its first `size` token ids: every logits row is cut to `size` entries (the
 * ids beyond have probability zero, as if their logits were −∞), argmax and sampler rows are taken
 * over the cut rows, and tokens at or beyond `size` are refused as input. What the engine runs a
 * draft/target pair through when their vocabularies differ in length (Qwen2.5 7B's 152,064 rows
 * against 0.5B's 151,936): neither model can then propose, emit or be fed an id the other cannot
 * represent. Returns `backend` itself when `size` is its whole vocabulary.
 *
 * Exactness: at temperature 0 the target's choice is its argmax over the shared ids; at T > 0 its
 * sampler row is processLogits over the cut logits, i.e. the target's distribution conditioned on
 * the shared ids. Every policy verifies against these rows, so `strict` stays lossless with respect
 * to that restricted distribution. Where the extra rows are padding no model ever ranks first (real
 * padded vocabularies: zero rows), output equals target-only decoding.
 */
export function restrictVocabulary(backend: ModelBackend, size: number): ModelBackend {
    if (size === backend.vocabularySize) return backend;
    if (!Number.isSafeInteger(size) || size < 1 || size > backend.vocabularySize)
        throw new InvalidInputError(`must be an integer in [1, ${backend.vocabularySize}], got ${size}`, "vocabularySize");
    return {
        backendKind: backend.backendKind,
        nativeBuild: backend.nativeBuild,
        device: backend.device,
        vocabularySize: size,
        contextSize: backend.contextSize,
        bosToken: backend.bosToken,
        eosToken: backend.eosToken,
        tokenize: (text) => backend.tokenize(text),
        tokenizeWithSpecialTokens:
            backend.tokenizeWithSpecialTokens == null ? undefined : (text) => backend.tokenizeWithSpecialTokens!(text),
        detokenize: (tokens) => backend.detokenize(tokens),
        vocabularyIdentity: () => backend.vocabularyIdentity(),
        vocabularyDescription: backend.vocabularyDescription == null ? undefined : () => backend.vocabularyDescription!(),
        createConstraint:
            backend.createConstraint == null
                ? undefined
                : (grammar) => new RestrictedConstraint(backend.createConstraint!(grammar), size, backend.vocabularySize),
        compileConstraint:
            backend.compileConstraint == null
                ? undefined
                : async (grammar, options) =>
                      new RestrictedConstraint(await backend.compileConstraint!(grammar, options), size, backend.vocabularySize),
        createSequence: async () => new RestrictedSequence(await backend.createSequence(), size),
        dispose: () => backend.dispose()
    };
}

/** A sequence of the backend restrictVocabulary(backend, size) was given (one a caller created itself), seen as that one's sequences are. */
export function restrictSequence(backend: ModelBackend, sequence: BackendSequence, size: number): BackendSequence {
    return size === backend.vocabularySize ? sequence : new RestrictedSequence(sequence, size);
}

class RestrictedSequence implements BackendSequence {
    public readonly evaluateArgmax?: (tokens: readonly number[], options?: EvaluateOptions) => Promise<number[]>;
    public readonly saveState?: () => Promise<SequenceState>;
    public readonly restoreState?: (state: SequenceState) => Promise<void>;

    public constructor(
        private readonly inner: BackendSequence,
        private readonly size: number
    ) {
        if (inner.evaluateArgmax != null) this.evaluateArgmax = (tokens, options) => this.argmaxOverShared(tokens, options);
        if (inner.saveState != null && inner.restoreState != null) {
            this.saveState = () => inner.saveState!();
            this.restoreState = async (state) => {
                // Tokens beyond the shared vocabulary never enter a restricted sequence (the state is another's).
                checkTokens(state.tokens, this.size, "state.tokens");
                await inner.restoreState!(state);
            };
        }
    }

    public get tokens(): readonly number[] {
        return this.inner.tokens;
    }

    public get timings(): BackendTimings | undefined {
        return this.inner.timings;
    }

    public layerSource(): LayerSource | undefined {
        return this.inner.layerSource?.();
    }

    public async evaluate(tokens: readonly number[], options?: EvaluateOptions): Promise<Float64Array[]> {
        this.check(tokens);
        return (await this.inner.evaluate(tokens, options)).map((row) => row.subarray(0, this.size));
    }

    /**
     * Sampler rows over the cut logits (top-p and the softmax's normaliser change when rows leave):
     * by the inner backend where it can limit its rows (natively), else here.
     */
    public async evaluateDistributions(
        tokens: readonly number[],
        sampling: SamplingOptions,
        options?: EvaluateOptions
    ): Promise<EvaluatedDistributions> {
        if (this.inner.evaluateDistributions != null) {
            this.check(tokens);
            const rows = await this.inner.evaluateDistributions(tokens, sampling, {...options, vocabularyLimit: this.size});
            const cut = (row: Float64Array): Float64Array => row.subarray(0, this.size);
            return {logits: rows.logits.map(cut), probabilities: rows.probabilities.map(cut)};
        }
        const logits = await this.evaluate(tokens, options);
        return {logits, probabilities: logits.map((row) => processLogits(row, sampling))};
    }

    /**
     * The inner argmax where it falls in the shared range (the usual case: it is the argmax of the cut
     * row too); otherwise the call is undone and redone with full rows, and the argmax taken over the cut.
     */
    private async argmaxOverShared(tokens: readonly number[], options?: EvaluateOptions): Promise<number[]> {
        this.check(tokens);
        const ids = await this.inner.evaluateArgmax!(tokens, options);
        if (ids.every((id) => id < this.size)) return ids;
        await this.inner.rollback(tokens.length);
        return (await this.evaluate(tokens, options)).map((row) => argmax(row));
    }

    public rollback(count: number): Promise<void> {
        return this.inner.rollback(count);
    }

    public idle(): void {
        this.inner.idle?.();
    }

    public clear(): Promise<void> {
        return this.inner.clear();
    }

    public dispose(): Promise<void> {
        return this.inner.dispose();
    }

    private check(tokens: readonly number[]): void {
        checkTokens(tokens, this.size);
    }
}
