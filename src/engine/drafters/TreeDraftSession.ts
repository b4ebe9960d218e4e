import type {BackendSequence, ModelBackend, TreeCapableSequence} from "../../backend/ModelBackend.js";
import {supportsTrees} from "../../backend/sequenceCapabilities.js";
import {timedEvaluation} from "../../backend/timedEvaluation.js";
import {processLogits} from "../../distributions/processLogits.js";
import {InvalidInputError} from "../../errors.js";
import {type DraftTree, drawWithoutReplacement, topIds} from "../../policies/treeVerification.js";
import type {Chance} from "../../random/Chance.js";
import type {GenerationOptions} from "../GenerationOptions.js";
import type {GenerationTelemetry} from "../GenerationTelemetry.js";
import {sharedPrefixLength} from "../../backend/sharedPrefixLength.js";

/** A token tree's shape: `width` children of the pending token, each the head of a chain `depth` tokens deep. */
export interface TreeShape {
    readonly width: number;
    readonly depth: number;
}

/** What proposes a generation's token trees (TreeStep): a draft model (TreeDraftSession) or an EAGLE-3 head (Eagle3TreeSession). */
export interface TreeDrafting {
    /** The drafter's label in telemetry. */
    readonly label: string;
    /**
     * A tree after `history` (whose last token is the pending one), at most `depth` deep. With
     * `argmaxOnly` (T = 0) the tree has no rows and is verified greedily.
     */
    propose(history: readonly number[], depth: number, argmaxOnly: boolean): Promise<DraftTree>;
    /** After verification: `path` is the accepted nodes, from the first depth down. */
    observe(path: readonly number[]): Promise<void>;
    dispose(): Promise<void>;
}

/**
 * A draft model proposing token trees (SpecInfer, SpecTr; the shape of multi-draft speculative
 * decoding): the pending token gets `width` children — the draft's top ids at T = 0, draws without
 * replacement from its sampler row at T > 0 — and each child grows a chain (argmax, or one draw) to
 * `depth` tokens. The draft sequence decodes one depth per call, every branch of it in one batch
 * (its own sequence ids on a unified KV cache), so a tree costs `depth` draft calls, as a chain of
 * that length does; its width costs tokens per call only.
 *
 * The tree stays open in the draft's sequence until `observe`, which keeps the accepted path's
 * decoded nodes; the next proposal decodes what the history adds after them (the final token).
 */
export class TreeDraftSession implements TreeDrafting {
    public readonly label = "model";
    /** Tokens in the draft's KV cache outside the open tree, in order. */
    private readonly cache: number[];
    /** Draft nodes decoded into the open tree, by node index (the last depth is drawn, never decoded). */
    private decoded: number[] = [];
    private open = false;

    private constructor(
        private readonly sequence: TreeCapableSequence,
        /** The sequence belongs to the caller (prompt caching): it is not disposed of. */
        private readonly lent: boolean,
        private readonly shape: TreeShape,
        private readonly options: GenerationOptions,
        private readonly chance: Chance,
        private readonly telemetry: GenerationTelemetry
    ) {
        this.cache = [...sequence.tokens];
    }

    /**
     * A session on `setup.sequence` (lent: what it holds of the prompt is kept) or a fresh draft
     * sequence with `shape.width` branches; the prompt but its last token is decoded.
     */
    public static async start(
        draft: ModelBackend,
        promptTokens: readonly number[],
        shape: TreeShape,
        setup: {options: GenerationOptions; chance: Chance; telemetry: GenerationTelemetry; sequence?: BackendSequence}
    ): Promise<TreeDraftSession> {
        const lent = setup.sequence !== undefined;
        const sequence = setup.sequence ?? (await draft.createSequence({branches: shape.width}));
        if (!supportsTrees(sequence) || (sequence.treeBranches ?? 1) < shape.width) {
            if (!lent) await sequence.dispose();
            throw new InvalidInputError("token trees need the native backend (its sequences decode trees)", "draft");
        }
        const session = new TreeDraftSession(sequence, lent, shape, setup.options, setup.chance, setup.telemetry);
        try {
            const head = promptTokens.slice(0, -1);
            // What a lent sequence holds beyond the prompt head is rolled back.
            await session.catchUp(head);
            const missing = head.slice(session.cache.length);
            if (missing.length > 0) await session.timed(() => sequence.evaluate(missing, {positions: []}), missing.length);
            session.cache.push(...missing);
        } catch (error) {
            await session.dispose();
            throw error;
        }
        return session;
    }

    /**
     * A tree after `history` (whose last token is the pending one), at most `depth` deep. With
     * `argmaxOnly` (T = 0) the tree has no rows and is verified greedily.
     */
    public async propose(history: readonly number[], depth: number, argmaxOnly: boolean): Promise<DraftTree> {
        await this.catchUp(history.slice(0, -1));
        const {width} = this.shape;
        const greedy = argmaxOnly || this.options.sampling.temperature === 0;
        const rootRow = await this.rootRow(history);
        const tokens: number[] = [];
        const parents: number[] = [];
        const rows: Array<Float64Array | undefined> = [greedy ? undefined : rootRow];
        for (const token of greedy ? topIds(rootRow, width) : drawWithoutReplacement(rootRow, width, this.chance)) {
            tokens.push(token);
            parents.push(-1);
        }
        let frontier = tokens.map((_token, index) => index);
        this.decoded = [];
        for (let level = 1; level < depth; level++) {
            this.open = true;
            const evaluation = await this.timed(
                () =>
                    this.sequence.evaluateTree(
                        frontier.map((node) => tokens[node]),
                        frontier.map((node) => this.decoded.indexOf(parents[node])),
                        greedy ? {kind: "argmax"} : {kind: "distributions", sampling: this.options.sampling}
                    ),
                frontier.length
            );
            this.decoded.push(...frontier);
            frontier = frontier.map((node, index) => {
                const row = greedy ? undefined : (evaluation.probabilities?.[index] ?? this.probabilities(evaluation.logits[index]));
                const child = row === undefined ? evaluation.argmax![index] : drawWithoutReplacement(row, 1, this.chance)[0];
                rows[node + 1] = row;
                tokens.push(child);
                parents.push(node);
                return tokens.length - 1;
            });
        }
        return greedy ? {tokens, parents} : {tokens, parents, rows};
    }

    /** After verification: the accepted path's decoded nodes stay in the draft's cache, the rest of the tree goes. */
    public async observe(path: readonly number[]): Promise<void> {
        if (!this.open) return;
        const kept = path.filter((node) => this.decoded.includes(node)).map((node) => this.decoded.indexOf(node));
        // The kept nodes form a path from the first depth down (decoded nodes are a prefix of every path).
        await this.sequence.keepTreePath(kept);
        this.open = false;
        this.cache.length = 0;
        this.cache.push(...this.sequence.tokens);
    }

    public async dispose(): Promise<void> {
        if (!this.lent) await this.sequence.dispose();
    }

    /** Closes an open tree and rolls the draft's cache back to what it shares with `tokens`. */
    private async catchUp(tokens: readonly number[]): Promise<void> {
        if (this.open) await this.observe([]);
        const common = sharedPrefixLength(this.cache, tokens);
        if (this.cache.length > common) {
            await this.sequence.rollback(this.cache.length - common);
            this.cache.length = common;
        }
    }

    /** Decodes the history's missing tokens (the pending one at least) and returns the root's row: logits at T = 0, else the sampler row. */
    private async rootRow(history: readonly number[]): Promise<Float64Array> {
        const missing = history.slice(this.cache.length);
        const logits = (await this.timed(() => this.sequence.evaluate(missing), missing.length))[0];
        this.cache.push(...missing);
        return this.options.sampling.temperature === 0 ? logits : this.probabilities(logits);
    }

    private probabilities(logits: Float64Array): Float64Array {
        const start = performance.now();
        const row = processLogits(logits, this.options.sampling);
        this.telemetry.time.sampling += performance.now() - start;
        return row;
    }

    private async timed<T>(evaluation: () => Promise<T>, batchSize: number): Promise<T> {
        const timed = await timedEvaluation(this.sequence, evaluation);
        this.telemetry.recordDraftEvaluation(timed.milliseconds, batchSize, timed.native);
        return timed.result;
    }
}

/** A TreeShape as "WIDTHxDEPTH", the form parseTreeShape reads. */
export function treeShapeLabel(shape: TreeShape): string {
    return `${shape.width}x${shape.depth}`;
}

/** "WIDTHxDEPTH" (e.g. "3x4") as a TreeShape; widths and depths of 1 to 16. */
export function parseTreeShape(text: string, field = "tree"): TreeShape {
    const match = /^(\d+)x(\d+)$/.exec(text.trim());
    const width = match === null ? NaN : Number(match[1]);
    const depth = match === null ? NaN : Number(match[2]);
    if (!(width >= 1 && width <= 16 && depth >= 1 && depth <= 16))
        throw new InvalidInputError(`must be WIDTHxDEPTH with both in 1..16 (e.g. 3x4), got "${text}"`, field);
    return {width, depth};
}
