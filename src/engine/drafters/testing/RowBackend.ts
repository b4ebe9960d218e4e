import type {BackendSequence, EvaluateOptions, ModelBackend} from "../../../backend/ModelBackend.js";
import {argmax} from "../../../distributions/argmax.js";
import {textTail, tokensContinuing, withoutPartialCharacter} from "../retokenize.js";

/** A model double with a real backend's tokenizer whose logit row after `tokens` is `row(tokens)`. */
export class RowBackend implements ModelBackend {
    public readonly vocabularySize: number;
    public readonly contextSize: number;
    public readonly bosToken: number | undefined;
    public readonly eosToken: number | undefined;

    public constructor(
        private readonly base: ModelBackend,
        private readonly row: (tokens: readonly number[]) => Float64Array
    ) {
        this.vocabularySize = base.vocabularySize;
        this.contextSize = base.contextSize;
        this.bosToken = base.bosToken;
        this.eosToken = base.eosToken;
    }

    public tokenize(text: string): number[] {
        return this.base.tokenize(text);
    }

    public detokenize(tokens: readonly number[]): string {
        return this.base.detokenize(tokens);
    }

    public vocabularyIdentity(): string {
        return this.base.vocabularyIdentity();
    }

    public vocabularyDescription() {
        return this.base.vocabularyDescription!();
    }

    public async createSequence(): Promise<BackendSequence> {
        const tokens: number[] = [];
        const rows = (batch: readonly number[], options?: EvaluateOptions): Float64Array[] => {
            const start = tokens.length;
            tokens.push(...batch);
            return (options?.positions ?? [batch.length - 1]).map((position) => this.row(tokens.slice(0, start + position + 1)));
        };
        return {
            tokens,
            evaluate: async (batch, options) => rows(batch, options),
            evaluateArgmax: async (batch, options) => rows(batch, options).map((row) => argmax(row)),
            rollback: async (count) => {
                tokens.length -= count;
            },
            clear: async () => {
                tokens.length = 0;
            },
            dispose: async () => {}
        };
    }

    public async dispose(): Promise<void> {}
}

const oneHotRows = new Map<string, Float64Array>();

/** A row with logit 20 on `id` and 0 elsewhere (one shared instance per size and id: rows are only read). */
export function oneHot(size: number, id: number): Float64Array {
    const key = `${size}:${id}`;
    let row = oneHotRows.get(key);
    if (row === undefined) {
        row = new Float64Array(size);
        row[id] = 20;
        oneHotRows.set(key, row);
    }
    return row;
}

/**
 * An oracle draft with `draft`'s tokenizer that knows the whole text (`text`): it proposes the
 * draft tokenization of what follows its context's text, so every proposal is the target's future
 * text as the draft's vocabulary spells it.
 */
export function oracleDraft(draft: ModelBackend, text: string): RowBackend {
    const spelled = draft.tokenize(text);
    return new RowBackend(draft, (tokens) => oneHot(draft.vocabularySize, nextOf(tokens)));
    function nextOf(tokens: readonly number[]): number {
        const body = tokens[0] === draft.bosToken ? tokens.slice(1) : tokens;
        if (body.length < spelled.length && body.every((token, index) => token === spelled[index])) return spelled[body.length];
        const decoded = draft.detokenize(body);
        const clean = withoutPartialCharacter(decoded);
        if (clean !== decoded || !text.startsWith(clean) || clean.length === text.length) return draft.eosToken!;
        const rest = text.slice(clean.length);
        return (tokensContinuing(draft, textTail(clean, 32), rest) ?? draft.tokenize(rest))[0];
    }
}
