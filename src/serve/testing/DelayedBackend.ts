import type {BackendSequence, EvaluateOptions, ModelBackend} from "../../backend/ModelBackend.js";

/**
 * Wraps a backend so every evaluation takes at least `delayMilliseconds` (a timer, like real
 * inference, lets other requests run meanwhile) and counts the sequences not yet disposed, so tests
 * can see a slow generation hold its slot and an aborted one give its sequences back.
 */
export class DelayedBackend implements ModelBackend {
    public openSequences = 0;

    public constructor(
        private readonly inner: ModelBackend,
        public delayMilliseconds: number
    ) {}

    public get vocabularySize(): number {
        return this.inner.vocabularySize;
    }

    public get contextSize(): number {
        return this.inner.contextSize;
    }

    public get bosToken(): number | undefined {
        return this.inner.bosToken;
    }

    public get eosToken(): number | undefined {
        return this.inner.eosToken;
    }

    public tokenize(text: string): number[] {
        return this.inner.tokenize(text);
    }

    public detokenize(tokens: readonly number[]): string {
        return this.inner.detokenize(tokens);
    }

    public vocabularyIdentity(): string {
        return this.inner.vocabularyIdentity();
    }

    public async createSequence(): Promise<BackendSequence> {
        const sequence = await this.inner.createSequence();
        this.openSequences++;
        let disposed = false;
        const delay = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, this.delayMilliseconds));
        return {
            get tokens() {
                return sequence.tokens;
            },
            evaluate: async (tokens: readonly number[], options?: EvaluateOptions) => {
                await delay();
                return sequence.evaluate(tokens, options);
            },
            rollback: (count: number) => sequence.rollback(count),
            clear: () => sequence.clear(),
            dispose: async () => {
                if (!disposed) this.openSequences--;
                disposed = true;
                await sequence.dispose();
            }
        };
    }

    public dispose(): Promise<void> {
        return this.inner.dispose();
    }
}
