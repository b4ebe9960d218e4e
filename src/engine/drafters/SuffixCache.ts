import {InvalidDrafterError} from "../../errors.js";

export interface SuffixCacheOptions {
    /** Longest indexed substring: every window doc[i .. i+depth) of every document is inserted. */
    readonly depth: number;
    /** While the trie holds more nodes than this, the oldest documents are removed. */
    readonly maxNodes: number;
    /** While more documents than this are kept, the oldest are removed. Default defaultMaxDocuments. */
    readonly maxDocuments?: number;
}

/**
 * Documents (outputs) a suffix cache keeps by default, as vLLM's suffix decoding keeps 10,000 cached
 * requests: identical outputs add no trie nodes, so the node bound alone would let their copies pile up.
 */
export const defaultMaxDocuments = 10_000;

const none = -1;
const root = 0;

/**
 * A depth-bounded suffix trie over earlier outputs (token sequences), shared by every generation a
 * suffix drafter serves. A path from the root is a substring of some document; its node counts how
 * many windows contain it as a prefix, so the children of the node reached by a context give the
 * continuations seen after that context and how often.
 *
 * Memory is bounded by `maxNodes` and `maxDocuments`: after each insertion the oldest documents (first
 * in, first out) are removed, their counts subtracted and emptied subtrees freed, until both bounds
 * hold. A document larger than the node bound on its own is dropped too, so the bounds always hold
 * between insertions.
 *
 * Nodes live in typed arrays (count, token, parent, first child, siblings) with a free list, and a
 * child is found through an open-addressing hash table on (parent, token): a server's cache churns
 * thousands of nodes per second, and as JS objects and Maps that churn was garbage that let the heap
 * (and RSS) swell between collections. The arrays grow by doubling to the largest size needed
 * (maxNodes plus one document's windows) and are then reused, so the cache's footprint stops moving.
 */
export class SuffixCache {
    private capacity = 0;
    private count = new Int32Array(0);
    private token = new Int32Array(0);
    private parent = new Int32Array(0);
    private firstChild = new Int32Array(0);
    private nextSibling = new Int32Array(0);
    private previousSibling = new Int32Array(0);
    private freeHead = none;
    private used = 1;
    private nodes = 0;
    // Hash table (parent, token) → node, linear probing; an empty slot has keyParent −1.
    private keyParent = new Int32Array(0);
    private keyToken = new Int32Array(0);
    private slotNode = new Int32Array(0);
    private mask = 0;
    private readonly documents: number[][] = [];
    private evictedDocuments = 0;
    private readonly maxDocuments: number;

    public constructor(public readonly options: SuffixCacheOptions) {
        if (!Number.isInteger(options.depth) || options.depth < 2)
            throw new InvalidDrafterError(`must be an integer ≥ 2, got ${options.depth}`, "suffix.depth");
        if (!Number.isInteger(options.maxNodes) || options.maxNodes < 1)
            throw new InvalidDrafterError(`must be a positive integer, got ${options.maxNodes}`, "suffix.maxNodes");
        this.maxDocuments = options.maxDocuments ?? defaultMaxDocuments;
        if (!Number.isInteger(this.maxDocuments) || this.maxDocuments < 1)
            throw new InvalidDrafterError(`must be a positive integer, got ${this.maxDocuments}`, "suffix.maxDocuments");
        this.grow(64);
        this.parent[root] = none;
        this.firstChild[root] = none;
    }

    /** Trie nodes held now (never above maxNodes after an insertion returns). */
    public get nodeCount(): number {
        return this.nodes;
    }

    /** Documents kept now (never above maxDocuments after an insertion returns). */
    public get documentCount(): number {
        return this.documents.length;
    }

    /** Documents removed to respect the node or document bound so far. */
    public get evictions(): number {
        return this.evictedDocuments;
    }

    /** Node slots allocated (live nodes, the root and free slots): the cache's footprint. */
    public get allocatedNodes(): number {
        return this.capacity;
    }

    /** Index one document (an output), then evict the oldest documents until both bounds hold. */
    public insert(document: readonly number[]): void {
        if (document.length === 0) return;
        const copy = [...document];
        this.documents.push(copy);
        this.update(copy, +1);
        while ((this.nodes > this.options.maxNodes || this.documents.length > this.maxDocuments) && this.documents.length > 0) {
            this.update(this.documents.shift()!, -1);
            this.evictedDocuments++;
        }
    }

    /**
     * The continuation of the longest context suffix found in the trie (contexts of `minMatch` to
     * depth/2 tokens, so a match leaves room for at least depth/2 proposed tokens). From the matched
     * node it follows the most frequent child while that child's count is at least `minCount` and at
     * least a tenth of its parent's, up to `maxTokens` tokens, the trie depth, and m − minMatch + 1
     * tokens for a context match of m (the same evidence rule as the n-gram drafter: a short match
     * risks one token). Empty when nothing passes.
     */
    public lookup(context: readonly number[], maxTokens: number, minCount: number, minMatch = 1): number[] {
        if (maxTokens <= 0 || this.nodes === 0) return [];
        const nodeOf = (length: number) => {
            let node = root;
            for (let index = context.length - length; index < context.length && node !== none; index++)
                node = this.child(node, context[index]);
            return node;
        };
        // A context in the trie has every suffix in it too (a substring's substrings are substrings),
        // so the longest context present is found by bisection.
        let present = 0;
        let absent = Math.min(Math.floor(this.options.depth / 2), context.length) + 1;
        while (absent - present > 1) {
            const middle = (present + absent) >> 1;
            if (nodeOf(middle) === none) absent = middle;
            else present = middle;
        }
        for (let length = present; length >= minMatch; length--) {
            let node = nodeOf(length);
            const proposal: number[] = [];
            const room = Math.min(maxTokens, this.options.depth - length, length - minMatch + 1);
            while (proposal.length < room) {
                let best = none;
                // Ties go to the lowest token id, so a lookup does not depend on insertion order.
                for (let child = this.firstChild[node]; child !== none; child = this.nextSibling[child])
                    if (
                        best === none ||
                        this.count[child] > this.count[best] ||
                        (this.count[child] === this.count[best] && this.token[child] < this.token[best])
                    )
                        best = child;
                if (best === none || this.count[best] < minCount || 10 * this.count[best] < this.count[node]) break;
                proposal.push(this.token[best]);
                node = best;
            }
            if (proposal.length > 0) return proposal;
        }
        return [];
    }

    private update(document: readonly number[], delta: 1 | -1): void {
        const depth = this.options.depth;
        for (let start = 0; start < document.length; start++) {
            let node = root;
            this.count[root] += delta;
            const end = Math.min(document.length, start + depth);
            for (let index = start; index < end; index++) {
                let child = this.child(node, document[index]);
                // Only insertion reaches a missing child: removal walks windows that were inserted.
                if (child === none) child = this.addChild(node, document[index]);
                this.count[child] += delta;
                if (this.count[child] === 0) {
                    // Removing the last window through this node frees its whole subtree (all counts are 0 below).
                    this.removeSubtree(child);
                    break;
                }
                node = child;
            }
        }
    }

    private slotOf(parent: number, token: number): number {
        let hash = Math.imul(parent, 0x9e3779b1) ^ Math.imul(token + 1, 0x85ebca77);
        hash ^= hash >>> 15;
        return hash & this.mask;
    }

    private child(parent: number, token: number): number {
        for (let slot = this.slotOf(parent, token); this.keyParent[slot] !== none; slot = (slot + 1) & this.mask)
            if (this.keyParent[slot] === parent && this.keyToken[slot] === token) return this.slotNode[slot];
        return none;
    }

    private addChild(parent: number, token: number): number {
        if (this.freeHead === none && this.used === this.capacity) this.grow(2 * this.capacity);
        let node: number;
        if (this.freeHead !== none) {
            node = this.freeHead;
            this.freeHead = this.nextSibling[node];
        } else {
            node = this.used++;
        }
        this.count[node] = 0;
        this.token[node] = token;
        this.parent[node] = parent;
        this.firstChild[node] = none;
        this.previousSibling[node] = none;
        this.nextSibling[node] = this.firstChild[parent];
        if (this.firstChild[parent] !== none) this.previousSibling[this.firstChild[parent]] = node;
        this.firstChild[parent] = node;
        let slot = this.slotOf(parent, token);
        while (this.keyParent[slot] !== none) slot = (slot + 1) & this.mask;
        this.keyParent[slot] = parent;
        this.keyToken[slot] = token;
        this.slotNode[slot] = node;
        this.nodes++;
        return node;
    }

    private removeSubtree(top: number): void {
        // Unlink the subtree's root from its siblings; its descendants go with it.
        const parent = this.parent[top];
        if (this.previousSibling[top] !== none) this.nextSibling[this.previousSibling[top]] = this.nextSibling[top];
        else this.firstChild[parent] = this.nextSibling[top];
        if (this.nextSibling[top] !== none) this.previousSibling[this.nextSibling[top]] = this.previousSibling[top];
        const stack = [top];
        while (stack.length > 0) {
            const node = stack.pop()!;
            for (let child = this.firstChild[node]; child !== none; child = this.nextSibling[child]) stack.push(child);
            this.deleteKey(this.parent[node], this.token[node]);
            this.nextSibling[node] = this.freeHead;
            this.freeHead = node;
            this.nodes--;
        }
    }

    /** Removes a present key, shifting later entries of its probe run back (no tombstones). */
    private deleteKey(parent: number, token: number): void {
        let slot = this.slotOf(parent, token);
        while (!(this.keyParent[slot] === parent && this.keyToken[slot] === token)) slot = (slot + 1) & this.mask;
        let hole = slot;
        for (let next = (hole + 1) & this.mask; this.keyParent[next] !== none; next = (next + 1) & this.mask) {
            const home = this.slotOf(this.keyParent[next], this.keyToken[next]);
            // The entry at `next` may fill the hole unless its home lies cyclically in (hole, next].
            const homeBetween = hole <= next ? home > hole && home <= next : home > hole || home <= next;
            if (homeBetween) continue;
            this.keyParent[hole] = this.keyParent[next];
            this.keyToken[hole] = this.keyToken[next];
            this.slotNode[hole] = this.slotNode[next];
            hole = next;
        }
        this.keyParent[hole] = none;
    }

    private grow(capacity: number): void {
        const resize = (array: Int32Array) => {
            const larger = new Int32Array(capacity);
            larger.set(array);
            return larger;
        };
        this.count = resize(this.count);
        this.token = resize(this.token);
        this.parent = resize(this.parent);
        this.firstChild = resize(this.firstChild);
        this.nextSibling = resize(this.nextSibling);
        this.previousSibling = resize(this.previousSibling);
        this.capacity = capacity;
        // The table keeps its load at most 1/2 of the node capacity.
        const slots = 2 * capacity;
        const oldParent = this.keyParent;
        const oldToken = this.keyToken;
        const oldNode = this.slotNode;
        this.keyParent = new Int32Array(slots).fill(none);
        this.keyToken = new Int32Array(slots);
        this.slotNode = new Int32Array(slots);
        this.mask = slots - 1;
        for (let slot = 0; slot < oldParent.length; slot++) {
            if (oldParent[slot] === none) continue;
            let target = this.slotOf(oldParent[slot], oldToken[slot]);
            while (this.keyParent[target] !== none) target = (target + 1) & this.mask;
            this.keyParent[target] = oldParent[slot];
            this.keyToken[target] = oldToken[slot];
            this.slotNode[target] = oldNode[slot];
        }
    }
}
