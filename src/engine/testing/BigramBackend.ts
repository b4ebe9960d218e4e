import type {BackendSequence, EvaluateOptions, ModelBackend, SequenceState} from "../../backend/ModelBackend.js";
import {argmax} from "../../distributions/argmax.js";
import {Random} from "../../random/Random.js";

/**
 * A model-free backend for engine tests: next-token logits depend only on the previous token
 * (a bigram table), so exact expectations are easy to compute. Token 0 is BOS, token 1 is EOS;
 * text maps letters a.. to ids 2.. . Counts evaluate calls so tests can check one target call per step.
 */
export class BigramBackend implements ModelBackend {
    public readonly bosToken = 0;
    public readonly eosToken: number | undefined = 1;
    public evaluateCalls: number[] = [];

    public constructor(
        public readonly table: Float64Array[],
        public readonly contextSize = 512,
        private readonly identity = "bigram-test-vocabulary"
    ) {}

    public static random(
        seed: number,
        vocabularySize: number,
        options: {scale?: number; eosBias?: number; contextSize?: number} = {}
    ): BigramBackend {
        const random = new Random(seed);
        const table = Array.from({length: vocabularySize}, () =>
            Float64Array.from({length: vocabularySize}, (_value, id) =>
                id === 1 ? (options.eosBias ?? -4) : (options.scale ?? 2) * (random.nextDouble() - 0.5) * 2
            )
        );
        return new BigramBackend(table, options.contextSize);
    }

    /** A draft that is this table plus noise: correlated, so some drafts are accepted. */
    public noisyCopy(seed: number, noise: number): BigramBackend {
        const random = new Random(seed);
        return new BigramBackend(
            this.table.map((row) => row.map((value) => value + noise * (random.nextDouble() - 0.5) * 2)),
            this.contextSize,
            this.identity
        );
    }

    public get vocabularySize(): number {
        return this.table.length;
    }

    public tokenize(text: string): number[] {
        return [...text].map(
            (character) =>
                2 + ((((character.codePointAt(0)! - 97) % (this.vocabularySize - 2)) + this.vocabularySize - 2) % (this.vocabularySize - 2))
        );
    }

    public detokenize(tokens: readonly number[]): string {
        return tokens
            .filter((token) => token > 1)
            .map((token) => String.fromCharCode(97 + token - 2))
            .join("");
    }

    public vocabularyIdentity(): string {
        return this.identity;
    }

    public async createSequence(): Promise<BackendSequence> {
        const table = this.table;
        const contextSize = this.contextSize;
        const evaluateCalls = this.evaluateCalls;
        const tokens: number[] = [];
        return {
            get tokens() {
                return tokens;
            },
            async evaluate(batch: readonly number[], options: EvaluateOptions = {}) {
                if (tokens.length + batch.length > contextSize) throw new RangeError("context overflow");
                evaluateCalls.push(batch.length);
                tokens.push(...batch);
                const positions = options.positions ?? [batch.length - 1];
                return positions.map((position) => Float64Array.from(table[batch[position]]));
            },
            async evaluateArgmax(batch: readonly number[], options: EvaluateOptions = {}) {
                if (tokens.length + batch.length > contextSize) throw new RangeError("context overflow");
                evaluateCalls.push(batch.length);
                tokens.push(...batch);
                const positions = options.positions ?? [batch.length - 1];
                return positions.map((position) => argmax(table[batch[position]]));
            },
            async rollback(count: number) {
                if (count < 0 || count > tokens.length) throw new RangeError(`bad rollback ${count}`);
                tokens.length -= count;
            },
            async clear() {
                tokens.length = 0;
            },
            // The "KV cache" is the tokens themselves: the data is their bytes (4 per token, as a native state's size grows with them).
            async saveState(): Promise<SequenceState> {
                return {tokens: [...tokens], data: new Uint8Array(Int32Array.from(tokens).buffer)};
            },
            async restoreState(state: SequenceState) {
                if (state.tokens.length > contextSize) throw new RangeError("context overflow");
                tokens.length = 0;
                tokens.push(...state.tokens);
            },
            async dispose() {}
        };
    }

    public async dispose(): Promise<void> {}
}
