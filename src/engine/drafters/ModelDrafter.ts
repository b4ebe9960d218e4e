import {assertSameVocabulary} from "../../backend/assertSameVocabulary.js";
import type {ArgmaxCapableSequence, BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import {restrictSequence, restrictVocabulary} from "../../backend/restrictVocabulary.js";
import {readsResiduals} from "../../backend/residualSequence.js";
import {supportsArgmax} from "../../backend/sequenceCapabilities.js";
import {evaluateRows} from "../../backend/evaluateRows.js";
import {timedEvaluation} from "../../backend/timedEvaluation.js";
import {argmax} from "../../distributions/argmax.js";
import {processLogits} from "../../distributions/processLogits.js";
import {sumOf} from "../../policies/rowOperations.js";
import {type Drafter, type DrafterSession, type DrafterStart, type DraftRequest, type DrawnDraft} from "./Drafter.js";
import {sharedPrefixLength} from "../../backend/sharedPrefixLength.js";

/**
 * A draft model (GGUF) drafting token by token in its own sequence:
 *  - argmax-only steps draft greedily on argmax ids (no rows);
 *  - device-draw steps (DraftRequest.deviceDraws) draw each token on the device and read its
 *    probability; at a rejection, q at the target's draws is read by decoding the row's input again;
 *  - otherwise each token is sampled from the draft's sampler row (passed as q, which keeps `strict`
 *    exact at any temperature) or, with draftSampling "greedy", taken as the argmax and verified as a
 *    q-less proposal (q = δ_x); drafting stops early when the top probability is below minConfidence.
 * The sequence mirrors the history lazily: at each proposal it drops what the history no longer
 * shares and evaluates the missing tokens in one batch (the pending token at least, whose logits
 * give the first draft row). After a step this is the rejected suffix and [accepted tail, final];
 * in a chain whose other member proposed, it is everything emitted since this drafter last ran.
 */
export class ModelDrafter implements Drafter {
    public readonly label = "model";
    public readonly members = ["model"];

    public constructor(private readonly draft: ModelBackend) {}

    public get vocabularySize(): number {
        return this.draft.vocabularySize;
    }

    /** The draft model (token trees draft with it directly). */
    public get model(): ModelBackend {
        return this.draft;
    }

    public async start(context: DrafterStart): Promise<DrafterSession> {
        const {options, chance, telemetry} = context;
        // The engine has already cut the target to the shared ids; a longer draft is cut to match.
        const shared = assertSameVocabulary(context.target, this.draft);
        const size = Math.min(shared, context.target.vocabularySize);
        const lent = context.sequence;
        const sequence: BackendSequence =
            lent !== undefined ? restrictSequence(this.draft, lent, size) : await restrictVocabulary(this.draft, size).createSequence();
        // Tokens in the draft's KV cache, in order.
        const cache: number[] = [...sequence.tokens];
        // Length of the prefix that `cache` and the history are known to share.
        let agreed = 0;
        try {
            const head = context.promptTokens.slice(0, -1);
            const common = sharedPrefixLength(cache, head);
            if (cache.length > common) await sequence.rollback(cache.length - common);
            cache.length = common;
            if (head.length > common) {
                await sequence.evaluate(head.slice(common), {positions: []});
                cache.push(...head.slice(common));
            }
            agreed = head.length;
        } catch (error) {
            if (lent === undefined) await sequence.dispose();
            throw error;
        }

        const timed = async <T>(tokens: readonly number[], evaluation: () => Promise<T>): Promise<T> => {
            const timedResult = await timedEvaluation(sequence, evaluation);
            telemetry.recordDraftEvaluation(timedResult.milliseconds, tokens.length, timedResult.native);
            cache.push(...tokens);
            return timedResult.result;
        };
        // Argmax-only steps draft on argmax ids, which the engine asks for only where the sequence returns them.
        const argmaxSequence = supportsArgmax(sequence) ? sequence : undefined;
        const evaluateArgmax = async (ids: ArgmaxCapableSequence, tokens: readonly number[]): Promise<number> =>
            (await timed(tokens, () => ids.evaluateArgmax(tokens)))[0];
        const probabilityRow = async (token: number): Promise<Float64Array> => {
            const result = await evaluateRows(sequence, [token], options.sampling, {withoutLogits: true});
            return result.probabilities?.[0] ?? processLogits(result.logits[0], options.sampling);
        };
        const evaluate = async (tokens: readonly number[]): Promise<{logits: Float64Array; probabilities: Float64Array}> => {
            const result = await timed(tokens, () => evaluateRows(sequence, tokens, options.sampling));
            // A backend without native sampler rows: computed here, outside the timed model call.
            const logits = result.logits[0];
            return {logits, probabilities: result.probabilities?.[0] ?? processLogits(logits, options.sampling)};
        };

        // Device draws stand for sampled drafts without minConfidence (which reads the top probability of each row).
        const drawable = options.draftSampling === "sample" && options.minConfidence === 0 && this.draft.tokenSelection === "device";
        const residualSequence = drawable && readsResiduals(sequence) ? sequence : undefined;
        /**
         * Decodes again the input token of row `row` of the proposal whose history ended at `start` (the
         * pending token, or drafted token row − 1) and reads its row; the cache then ends at that token.
         */
        const redecode = async <T>(start: number, row: number, read: (token: number) => Promise<T>): Promise<T> => {
            const index = start + row;
            const token = cache[index]!;
            await sequence.rollback(cache.length - index);
            cache.length = index;
            agreed = Math.min(agreed, index);
            const result = await timed([token], () => read(token));
            sequence.idle?.();
            return result;
        };

        return {
            supportsArgmax: argmaxSequence !== undefined,
            drawsOnDevice: residualSequence !== undefined,
            async propose(request: DraftRequest) {
                const {history, maxTokens, argmaxOnly} = request;
                // Keep at least the pending token to evaluate: its row is the first draft row.
                const limit = Math.min(cache.length, history.length - 1);
                let common = Math.min(agreed, limit);
                while (common < limit && cache[common] === history[common]) common++;
                if (cache.length > common) {
                    await sequence.rollback(cache.length - common);
                    cache.length = common;
                }
                agreed = history.length;
                const tokens: number[] = [];
                if (argmaxOnly && argmaxSequence !== undefined) {
                    let token = await evaluateArgmax(argmaxSequence, history.slice(common));
                    for (let position = 0; position < maxTokens; position++) {
                        tokens.push(token);
                        if (position < maxTokens - 1) token = await evaluateArgmax(argmaxSequence, [token]);
                    }
                    sequence.idle?.();
                    return {tokens, source: "model", consulted: ["model"]};
                }
                const deviceDraws = request.deviceDraws;
                if (deviceDraws !== undefined && residualSequence !== undefined) {
                    const start = history.length - 1;
                    const probabilities: number[] = [];
                    // One sampler chain for the draws and the reads at a rejection: K ids read beside every draw (none here).
                    const none = [new Array<number>(options.residualCandidates).fill(-1)];
                    const drawScored = (batch: readonly number[]) =>
                        timed(batch, () =>
                            residualSequence.evaluateScored(batch, options.sampling, [deviceDraws.uniform()], {gather: none})
                        );
                    let scored = await drawScored(history.slice(common));
                    for (let position = 0; position < maxTokens; position++) {
                        if (scored.hostRows > 0) telemetry.noteRowsCopied("device declined the sampler");
                        tokens.push(scored.tokens[0]!);
                        probabilities.push(scored.probabilities[0]!);
                        if (position < maxTokens - 1) scored = await drawScored([scored.tokens[0]!]);
                    }
                    sequence.idle?.();
                    const drawn: DrawnDraft = {
                        probabilities,
                        probabilitiesAt: (row, ids) =>
                            redecode(start, row, async (token) => {
                                // The draw made beside the read is not used: any uniform does.
                                const read = await residualSequence.evaluateScored([token], options.sampling, [0.5], {gather: [ids]});
                                if (read.hostRows > 0) telemetry.noteRowsCopied("device declined the sampler");
                                return read.gathered[0]!;
                            }),
                        rowAt: (row) => redecode(start, row, probabilityRow)
                    };
                    return {tokens, drawn, source: "model", consulted: ["model"]};
                }
                const probs: Float64Array[] = [];
                const logitRows: Float64Array[] = [];
                let rows = await evaluate(history.slice(common));
                for (let position = 0; position < maxTokens; position++) {
                    const {logits, probabilities} = rows;
                    if (options.minConfidence > 0 && probabilities[argmax(probabilities)] < options.minConfidence) break;
                    const token = options.draftSampling === "greedy" ? argmax(logits) : chance.choose(probabilities, sumOf(probabilities));
                    tokens.push(token);
                    logitRows.push(logits);
                    probs.push(probabilities);
                    if (position < maxTokens - 1) rows = await evaluate([token]);
                }
                // The draft model is not asked again before the target has verified: a batching backend
                // stops holding its steps for this sequence meanwhile.
                sequence.idle?.();
                // Greedy drafts were not drawn from their rows: they are verified as q-less proposals (q = δ_x).
                return {
                    tokens,
                    probs: options.draftSampling === "sample" ? probs : undefined,
                    logits: logitRows,
                    source: "model",
                    consulted: ["model"]
                };
            },
            observe() {},
            finish() {},
            async dispose() {
                if (lent === undefined) await sequence.dispose();
            }
        };
    }
}
