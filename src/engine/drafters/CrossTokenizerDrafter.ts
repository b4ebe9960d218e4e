import {addsBos} from "../../backend/addsBos.js";
import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import {timedEvaluation} from "../../backend/timedEvaluation.js";
import {argmax} from "../../distributions/argmax.js";
import {type Drafter, type DrafterSession, type DrafterStart, type DraftRequest, noProposal} from "./Drafter.js";
import {IncrementalTokenization, textAfter, tokensContinuing, withoutPartialCharacter} from "./retokenize.js";
import {sharedPrefixLength} from "../../backend/sharedPrefixLength.js";

/** Label of the drafter that drafts with a model of another vocabulary (the spec `model:retokenize`). */
export const crossTokenizerLabel = "model:retokenize";
/** Target tokens of the history whose text is the context a proposal is re-tokenized after. */
const targetContextTokens = 8;
/** Draft tokens before the proposal whose text is the context the proposal is decoded after. */
const draftContextTokens = 8;

/**
 * Drafting across tokenizers (Hugging Face's universal assisted generation): a draft model whose
 * vocabulary differs from the target's drafts in text, not ids.
 *  - The draft model's context is the target's text re-tokenized by the draft's tokenizer
 *    (IncrementalTokenization: only a tail window is re-tokenized as the text grows); at each
 *    proposal its sequence rolls back to the longest common prefix with that and evaluates the rest.
 *    Text the target's detokenizer drops (control tokens such as a chat template's markers) is not
 *    seen by the draft; an incomplete UTF-8 character at the end of the target's text waits.
 *  - It drafts greedily (stopping at its EOS) as many tokens as γ + 1 target tokens take by the ratio
 *    of the two tokenizations of the text so far (2 to 3(γ + 1)), and decodes them after its
 *    context, dropping an incomplete UTF-8 character at the end.
 *  - The text is re-tokenized by the target after the text of the history's last tokens: kept are the
 *    tokens after those equal to the history's own, or else after the tokens whose text is exactly
 *    that context, so a first token that would merge with earlier text is never proposed (with no
 *    token boundary there, the text is tokenized alone). The last
 *    target token is dropped, since more draft text could extend it (γ + 1 tokens' worth leave about γ);
 *    a draft EOS becomes the target's EOS after complete text.
 * The proposal has no draft rows over the target's vocabulary, so it is verified as a q-less proposal
 * (q = δ_x): exact match at temperature 0, and `strict` stays exact at any temperature.
 */
export class CrossTokenizerDrafter implements Drafter {
    public readonly label = crossTokenizerLabel;
    public readonly members = [crossTokenizerLabel];

    public constructor(private readonly draft: ModelBackend) {}

    public async start(context: DrafterStart): Promise<DrafterSession> {
        const {target, telemetry} = context;
        const draft = this.draft;
        const sequence: BackendSequence = await draft.createSequence();
        const bos = addsBos(draft) ? [draft.bosToken!] : [];
        const draftText = new IncrementalTokenization(draft);
        // Tokens in the draft's KV cache, in order.
        const cache: number[] = [];
        const label = crossTokenizerLabel;

        const evaluate = async (tokens: readonly number[], wantsRow: boolean): Promise<number | undefined> => {
            const evaluation = await timedEvaluation(sequence, async () => {
                if (!wantsRow) {
                    await sequence.evaluate(tokens, {positions: []});
                    return undefined;
                }
                return sequence.evaluateArgmax != null
                    ? (await sequence.evaluateArgmax(tokens))[0]
                    : argmax((await sequence.evaluate(tokens))[0]);
            });
            telemetry.recordDraftEvaluation(evaluation.milliseconds, tokens.length, evaluation.native);
            cache.push(...tokens);
            return evaluation.result;
        };
        /** Rolls the draft's cache back to what it shares with `wanted`, keeping at least `keepOpen` tokens to evaluate. */
        const rollBackTo = async (wanted: readonly number[], keepOpen: number): Promise<number> => {
            const common = sharedPrefixLength(cache, wanted, wanted.length - keepOpen);
            if (cache.length > common) {
                await sequence.rollback(cache.length - common);
                cache.length = common;
            }
            return common;
        };
        /** The draft's tokens for the target's text of `history` (an incomplete last character left out). */
        const draftTokensFor = (history: readonly number[]): number[] => [
            ...bos,
            ...draftText.update(withoutPartialCharacter(target.detokenize(history)))
        ];

        try {
            const wanted = draftTokensFor(context.promptTokens);
            if (wanted.length > 1 && wanted.length <= draft.contextSize) await evaluate(wanted.slice(0, -1), false);
        } catch (error) {
            await sequence.dispose();
            throw error;
        }

        return {
            supportsArgmax: true,
            async propose(request: DraftRequest) {
                const {history, maxTokens} = request;
                const wanted = draftTokensFor(history);
                // γ + 1 target tokens' worth of draft tokens, by the ratio of the two tokenizations of the text so far.
                const ratio = (wanted.length - bos.length) / Math.max(1, history.length);
                const budget = Math.min(3 * (maxTokens + 1), Math.max(2, Math.ceil((maxTokens + 1) * ratio)));
                if (wanted.length === 0 || wanted.length + budget > draft.contextSize) return noProposal(label);
                const common = await rollBackTo(wanted, 1);
                const drafted: number[] = [];
                let endsWithEos = false;
                let token = (await evaluate(wanted.slice(common), true)) as number;
                for (;;) {
                    if (token === draft.eosToken) {
                        endsWithEos = true;
                        break;
                    }
                    drafted.push(token);
                    if (drafted.length === budget) break;
                    token = (await evaluate([token], true)) as number;
                }
                const text = textAfter(draft, wanted.slice(-draftContextTokens), drafted);
                const complete = withoutPartialCharacter(text);
                let tokens = complete === "" ? [] : targetTokensAfter(target, history, complete);
                // The last token may be cut short by the end of the draft's text, unless the draft ended it.
                if (!(endsWithEos && complete === text)) tokens = tokens.slice(0, -1);
                else if (target.eosToken != null) tokens.push(target.eosToken);
                const outside = tokens.findIndex((id) => id < 0 || id >= target.vocabularySize);
                if (outside >= 0) tokens = tokens.slice(0, outside);
                return {tokens: tokens.slice(0, maxTokens), source: label, consulted: [label]};
            },
            observe() {},
            finish() {},
            async dispose() {
                await sequence.dispose();
            }
        };
    }
}

/**
 * The target's tokens for `text` continuing `history`: tokenize(text of the last history tokens +
 * text), cut after the tokens equal to the history's own or, failing that, after the tokens whose
 * text is exactly the history's; where no token boundary falls there (the history's last token is
 * not how the target would tokenize its text), `text` tokenized alone. An incomplete character at
 * the history's end that the re-tokenization does not reproduce gives no tokens.
 */
export function targetTokensAfter(target: ModelBackend, history: readonly number[], text: string): number[] {
    const tail = history.slice(-targetContextTokens);
    const tailText = target.detokenize(tail);
    const clean = withoutPartialCharacter(tailText);
    const tokens = target.tokenize(clean + text);
    if (tail.length <= tokens.length && tail.every((token, index) => tokens[index] === token)) return tokens.slice(tail.length);
    if (clean !== tailText) return [];
    return tokensContinuing(target, clean, text) ?? target.tokenize(text);
}
