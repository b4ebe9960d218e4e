import {InvalidDrafterError} from "../../errors.js";

interface TrieNode {
    /** Occurrences of the path from the root to this node among the indexed windows. */
    count: number;
    children?: Map<number, TrieNode>;
}

export interface SuffixCacheOptions {
    /** Longest indexed substring: every window doc[i .. i+depth) of every document is inserted. */
    readonly depth: number;
    /** While the trie holds more nodes than this, the oldest documents are removed. */
    readonly maxNodes: number;
}

/**
 * A depth-bounded suffix trie over earlier outputs (token sequences), shared by every generation a
 * suffix drafter serves. A path from the root is a substring of some document; its node counts how
 * many windows contain it as a prefix, so the children of the node reached by a context give the
 * continuations seen after that context and how often.
 *
 * Memory is bounded by `maxNodes`: after each insertion the oldest documents (first in, first out)
 * are removed, their counts subtracted and emptied nodes freed, until the bound holds. A document
 * larger than the bound on its own is dropped too, so the bound always holds.
 */
export class SuffixCache {
    private readonly root: TrieNode = {count: 0};
    private readonly documents: number[][] = [];
    private nodes = 0;
    private evictedDocuments = 0;

    public constructor(public readonly options: SuffixCacheOptions) {
        if (!Number.isInteger(options.depth) || options.depth < 2)
            throw new InvalidDrafterError(`must be an integer ≥ 2, got ${options.depth}`, "suffix.depth");
        if (!Number.isInteger(options.maxNodes) || options.maxNodes < 1)
            throw new InvalidDrafterError(`must be a positive integer, got ${options.maxNodes}`, "suffix.maxNodes");
    }

    /** Trie nodes held now (never above maxNodes after an insertion returns). */
    public get nodeCount(): number {
        return this.nodes;
    }

    public get documentCount(): number {
        return this.documents.length;
    }

    /** Documents removed to respect the memory bound so far. */
    public get evictions(): number {
        return this.evictedDocuments;
    }

    /** Index one document (an output), then evict the oldest documents until the bound holds. */
    public insert(document: readonly number[]): void {
        if (document.length === 0) return;
        const copy = [...document];
        this.documents.push(copy);
        this.update(copy, +1);
        while (this.nodes > this.options.maxNodes && this.documents.length > 0) {
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
        const longest = Math.min(Math.floor(this.options.depth / 2), context.length);
        for (let length = longest; length >= minMatch; length--) {
            let node: TrieNode | undefined = this.root;
            for (let index = context.length - length; index < context.length && node != null; index++)
                node = node.children?.get(context[index]);
            if (node == null) continue;
            const proposal: number[] = [];
            const room = Math.min(maxTokens, this.options.depth - length, length - minMatch + 1);
            while (proposal.length < room && node.children != null) {
                let best: [number, TrieNode] | undefined;
                // Ties go to the lowest token id, so a lookup does not depend on insertion order.
                for (const entry of node.children)
                    if (best == null || entry[1].count > best[1].count || (entry[1].count === best[1].count && entry[0] < best[0])) best = entry;
                if (best == null || best[1].count < minCount || 10 * best[1].count < node.count) break;
                proposal.push(best[0]);
                node = best[1];
            }
            if (proposal.length > 0) return proposal;
        }
        return [];
    }

    private update(document: readonly number[], delta: 1 | -1): void {
        const depth = this.options.depth;
        for (let start = 0; start < document.length; start++) {
            let node = this.root;
            node.count += delta;
            const end = Math.min(document.length, start + depth);
            for (let index = start; index < end; index++) {
                const token = document[index];
                let child = node.children?.get(token);
                if (child == null) {
                    // Only insertion reaches a missing child: removal walks windows that were inserted.
                    child = {count: 0};
                    (node.children ??= new Map()).set(token, child);
                    this.nodes++;
                }
                child.count += delta;
                if (child.count === 0) {
                    // Removing the last window through this node frees its whole subtree (all counts are 0 below).
                    node.children!.delete(token);
                    if (node.children!.size === 0) node.children = undefined;
                    this.nodes -= countNodes(child);
                    break;
                }
                node = child;
            }
        }
    }
}

function countNodes(node: TrieNode): number {
    let total = 1;
    if (node.children != null) for (const child of node.children.values()) total += countNodes(child);
    return total;
}
