import {assertSameVocabulary} from "../../backend/assertSameVocabulary.js";
import type {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import {processLogits} from "../../distributions/processLogits.js";
import {type DraftTree, drawWithoutReplacement, topIds} from "../../policies/treeVerification.js";
import type {Chance} from "../../random/Chance.js";
import type {GenerationOptions} from "../GenerationOptions.js";
import type {GenerationTelemetry} from "../GenerationTelemetry.js";
import {eagle3Label} from "./Eagle3Drafter.js";
import {Eagle3HeadCalls} from "./Eagle3HeadCalls.js";
import type {TreeDrafting, TreeShape} from "./TreeDraftSession.js";

/** Most branches (sequence ids) a native target sequence may have for a tree (NativeBackend's limit). */
export const maxEagle3TreeBranches = 64;

/** Branches the target's sequence needs for a head's tree of `shape`: the spine's, and one per sibling. */
export function eagle3TreeBranches(shape: TreeShape): number {
    return 1 + (shape.width - 1) * shape.depth;
}

/**
 * Token trees from an EAGLE-3 head, whose KV cache holds one sequence: a spine the head drafts one
 * position per call, as a chain, and at each depth `width` children of the spine's node read off the
 * same row — the top ids at T = 0, draws without replacement from its sampler row at T > 0. The first
 * child continues the spine; its siblings are leaves. A tree of depth d costs d head calls, as a chain
 * of that length does, and its branches take the target's sequence 1 + (width − 1) × depth sequence
 * ids (eagle3TreeBranches). Verification stays exact: every node with children has its row in the tree
 * (recursive rejection sampling reads it), and a leaf's token is then the target's to follow.
 *
 * The head keeps nothing of the tree: the next draft catches up with the target along the accepted
 * path (the target's layer tap keeps the kept branch's rows) and drops the drafted spine.
 */
export class Eagle3TreeSession implements TreeDrafting {
    public readonly label = eagle3Label;
    private readonly row: Float64Array;

    private constructor(
        private readonly head: Eagle3HeadCalls,
        /** Ids the target reads: the head's rows are cut to them. */
        private readonly size: number,
        /** Positions the head's KV cache holds. */
        private readonly positions: number,
        private readonly shape: TreeShape,
        private readonly options: GenerationOptions,
        private readonly chance: Chance
    ) {
        this.row = new Float64Array(head.vocabularySize);
    }

    /** A head drafting trees for `targetSequence` (whose decodes keep the layers the head reads). */
    public static start(
        head: Eagle3HeadBackend,
        shape: TreeShape,
        setup: {
            target: ModelBackend;
            targetSequence: BackendSequence;
            options: GenerationOptions;
            chance: Chance;
            telemetry: GenerationTelemetry;
        }
    ): Eagle3TreeSession {
        const size = Math.min(assertSameVocabulary(setup.target, head), setup.target.vocabularySize);
        const calls = new Eagle3HeadCalls(head.openHead(setup.targetSequence), head.inlineBelowMilliseconds, setup.telemetry);
        return new Eagle3TreeSession(calls, size, head.contextSize, shape, setup.options, setup.chance);
    }

    public async propose(history: readonly number[], depth: number, argmaxOnly: boolean): Promise<DraftTree> {
        const greedy = argmaxOnly || this.options.sampling.temperature === 0;
        const tree = {tokens: [] as number[], parents: [] as number[], rows: [] as Array<Float64Array | undefined>};
        // The target holds every token of the history but the last; the head's drafts follow it.
        const levels = Math.min(depth, this.positions - (history.length - 1));
        if (levels < 1 || history.length < 2 || !(await this.head.draft(Int32Array.from(history), 1, this.row)))
            return greedy ? {tokens: [], parents: []} : tree;
        let parent = -1;
        for (let level = 0; level < levels; level++) {
            if (level > 0) await this.head.next(tree.tokens[parent], this.row);
            const children = this.children(greedy);
            if (children.ids.length === 0) break;
            tree.rows[parent + 1] = children.row;
            for (const token of children.ids) {
                tree.tokens.push(token);
                tree.parents.push(parent);
            }
            parent = tree.tokens.length - children.ids.length;
        }
        return greedy ? {tokens: tree.tokens, parents: tree.parents} : tree;
    }

    /** The head keeps nothing of the tree (its next draft catches up with the target). */
    public observe(): Promise<void> {
        return Promise.resolve();
    }

    public dispose(): Promise<void> {
        this.head.dispose();
        return Promise.resolve();
    }

    /** The children the head's last row gives (the spine's first): its top ids, or draws from its sampler row (also returned). */
    private children(greedy: boolean): {ids: number[]; row?: Float64Array} {
        const logits = this.row.slice(0, this.size);
        if (greedy) return {ids: topIds(logits, this.shape.width)};
        const row = processLogits(logits, this.options.sampling);
        return {ids: drawWithoutReplacement(row, this.shape.width, this.chance), row};
    }
}
