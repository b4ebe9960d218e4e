import {InvalidInputError} from "../errors.js";

/** How to decode one call's worth of new tree nodes (TreeLayout.add). */
export interface TreeDecodePlan {
    /** Position of each new node. */
    readonly positions: Int32Array;
    /** Each new node's own branch, the sequence id llama.cpp's attention mask reads for it. */
    readonly branches: Int32Array;
    /** (index among the new nodes, branch) pairs: more branches a new node belongs to. */
    readonly shared: Int32Array;
    /** Before the decode, branch `destination` takes `source`'s cells at positions [0, to). */
    readonly copies: ReadonlyArray<{readonly source: number; readonly destination: number; readonly to: number}>;
}

/** What keeping a path of the tree asks of the KV cache (TreeLayout.keep). */
export interface TreeKeepPlan {
    /** Branch 0 drops its cells from this position on. */
    readonly dropFrom: number;
    /** Then takes this branch's cells at [from, to) (absent when the path is branch 0's own). */
    readonly copy?: {readonly source: number; readonly from: number; readonly to: number};
    /** Branches emptied after that (every branch the tree opened). */
    readonly empty: readonly number[];
}

interface Node {
    readonly token: number;
    readonly parent: number;
    readonly position: number;
    readonly branch: number;
}

/**
 * Lays a token tree out on llama.cpp sequence ids ("branches"), as llama.cpp's batches allow: a node
 * belongs to every branch whose path runs through it, and a token attends to the cells of its own
 * branch, so each node sees exactly its ancestors and the sequence before the tree. Branch 0 is the
 * sequence's own id; a node's first child stays on its branch, every further child opens a new one,
 * which takes the ancestors' cells (copyTokens for those decoded before, shared ids for those decoded in
 * the same call). Invariant: a node's branch holds all its ancestors, and each branch is one path, so
 * keeping a path is "branch 0 drops the tree, then takes the path's cells from the path's branch".
 *
 * Nodes come in calls (the target decodes a whole tree at once, a draft model one depth per call); a
 * parent index refers to an earlier node of the tree, −1 to the sequence's last token. Pure
 * bookkeeping: the sequence applies the plans.
 */
export class TreeLayout {
    private readonly nodes: Node[] = [];
    /** Whether the root (index 0) or node i (index i + 1) has a child yet. */
    private readonly hasChild: boolean[] = [false];
    private readonly opened: number[] = [];

    /**
     * @param branchCount sequence ids the sequence may use (0 … branchCount − 1)
     * @param base position of the tree's first depth (the sequence's length when the tree opens)
     * @param contextSize positions a node may take: 0 … contextSize − 1
     */
    public constructor(
        private readonly branchCount: number,
        private readonly base: number,
        private readonly contextSize: number
    ) {}

    /** Tokens of the nodes `path` names, checking that it runs from the first depth, parent to child. */
    public pathTokens(path: readonly number[]): number[] {
        return path.map((node, depth) => {
            if (!Number.isInteger(node) || node < 0 || node >= this.nodes.length)
                throw new InvalidInputError(`node ${node} is not in the tree of ${this.nodes.length}`, `path[${depth}]`);
            const expected = depth === 0 ? -1 : path[depth - 1];
            if (this.nodes[node].parent !== expected)
                throw new InvalidInputError(`node ${node}'s parent is ${this.nodes[node].parent}, not ${expected}`, `path[${depth}]`);
            return this.nodes[node].token;
        });
    }

    /** Adds nodes (parents before children) and says how to decode them; nodes it refuses leave the tree as it was. */
    public add(tokens: readonly number[], parents: readonly number[]): TreeDecodePlan {
        const positions = this.checkNewNodes(tokens, parents);
        const first = this.nodes.length;
        const shared: number[] = [];
        const copies: Array<{source: number; destination: number; to: number}> = [];
        tokens.forEach((token, index) => {
            const parent = parents[index];
            const position = positions[index];
            const parentBranch = parent < 0 ? 0 : this.nodes[parent].branch;
            const firstChild = !this.hasChild[parent + 1];
            this.hasChild[parent + 1] = true;
            let branch = parentBranch;
            if (!firstChild) {
                branch = this.opened.length + 1;
                this.opened.push(branch);
                // Ancestors decoded in this call join the new branch through shared ids; those before, by a copy.
                let topmost = -1;
                for (let ancestor = parent; ancestor >= first; ancestor = this.nodes[ancestor].parent) {
                    shared.push(ancestor - first, branch);
                    topmost = ancestor;
                }
                copies.push({source: parentBranch, destination: branch, to: topmost >= 0 ? this.nodes[topmost].position : position});
            }
            this.nodes.push({token, parent, position, branch});
            this.hasChild.push(false);
        });
        const added = this.nodes.slice(first);
        return {
            positions: Int32Array.from(added, (node) => node.position),
            branches: Int32Array.from(added, (node) => node.branch),
            shared: Int32Array.from(shared),
            copies
        };
    }

    /** Keeps the nodes of `path` (from the first depth, parent to child; empty: none) and drops the rest of the tree. */
    public keep(path: readonly number[]): TreeKeepPlan {
        this.pathTokens(path);
        const empty = [...this.opened];
        if (path.length === 0) return {dropFrom: this.base, empty};
        const end = this.base + path.length;
        const branch = this.nodes[path[path.length - 1]].branch;
        if (branch === 0) return {dropFrom: end, empty};
        return {dropFrom: this.base, copy: {source: branch, from: this.base, to: end}, empty};
    }

    /**
     * The new nodes' positions, after checking, before anything changes, that each parent is an
     * earlier node (or −1), each position fits the context, and the branches they open exist.
     */
    private checkNewNodes(tokens: readonly number[], parents: readonly number[]): number[] {
        if (parents.length !== tokens.length)
            throw new InvalidInputError(`must be as long as tokens (${tokens.length}), got ${parents.length}`, "parents");
        const first = this.nodes.length;
        const positions: number[] = [];
        const parented = new Set<number>();
        let branches = this.opened.length + 1;
        parents.forEach((parent, index) => {
            if (!Number.isInteger(parent) || parent < -1 || parent >= first + index)
                throw new InvalidInputError(`parent ${parent} is not an earlier node (or −1)`, `parents[${index}]`);
            const position = parent < 0 ? this.base : parent < first ? this.nodes[parent].position + 1 : positions[parent - first] + 1;
            if (position >= this.contextSize)
                throw new InvalidInputError(
                    `a node at position ${position} is beyond the context size ${this.contextSize}`,
                    `parents[${index}]`
                );
            const hadChild = parented.has(parent) || (parent < first && this.hasChild[parent + 1]);
            if (hadChild && ++branches > this.branchCount)
                throw new InvalidInputError(`the tree needs more than the sequence's ${this.branchCount} branches`, `parents[${index}]`);
            parented.add(parent);
            positions.push(position);
        });
        return positions;
    }
}
