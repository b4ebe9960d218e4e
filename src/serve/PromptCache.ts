import type {BackendSequence, ModelBackend} from "../backend/ModelBackend.js";

/** The sequences one request runs on, and how to hand them back. */
export interface PromptCacheLease {
    readonly target: BackendSequence;
    /** Present when the request asked for one (a draft-model drafter). */
    readonly draft: BackendSequence | undefined;
    /** Hands the sequences back; `intact` false (the generation failed mid-call) empties them first. */
    release(intact: boolean): Promise<void>;
}

interface Entry {
    readonly target: BackendSequence;
    draft: BackendSequence | undefined;
    /** Whose tokens the sequences hold: a lease to another tenant empties them first. */
    tenant: string;
    lastUsed: number;
    leased: boolean;
}

/**
 * Sequences kept between requests with their KV cache, as llama-server's slots keep theirs
 * (cache_prompt): a request runs on the idle sequence of its own tenant whose tokens share the
 * longest prefix with its prompt, and the engine decodes only what follows that prefix. Without a
 * shared prefix it takes a fresh sequence while fewer than `capacity` exist, else the least recently
 * used idle one. A sequence leased to another tenant than the one whose tokens it holds, or to a
 * request with cache_prompt off, is emptied first: one API key's prompts never shorten another's
 * prompt processing (which would tell it what the other sent).
 */
export class PromptCache {
    private readonly entries: Entry[] = [];
    private clock = 0;

    public constructor(
        private readonly target: ModelBackend,
        private readonly draft: ModelBackend | undefined,
        /** Sequences kept at most (the server's concurrent generations: one per slot). */
        private readonly capacity: number
    ) {}

    /** Sequences held now, leased or idle. */
    public get size(): number {
        return this.entries.length;
    }

    /** Sequences leased to generations now. */
    public get leased(): number {
        return this.entries.filter((entry) => entry.leased).length;
    }

    /**
     * Sequences for a request of `tenant` whose prompt, as the engine decodes it (BOS included), is
     * `prompt`; `reuse` false (cache_prompt off) starts from empty ones.
     */
    public async lease(tenant: string, prompt: readonly number[], reuse: boolean, withDraft: boolean): Promise<PromptCacheLease> {
        const entry = (reuse ? this.longestMatch(tenant, prompt) : undefined) ?? (await this.freeEntry());
        entry.leased = true;
        try {
            if (entry.tenant !== tenant || !reuse) await this.empty(entry);
            entry.tenant = tenant;
            if (withDraft && entry.draft === undefined && this.draft !== undefined) entry.draft = await this.draft.createSequence();
        } catch (error) {
            await this.drop(entry);
            throw error;
        }
        return {
            target: entry.target,
            draft: withDraft ? entry.draft : undefined,
            release: async (intact) => {
                if (!entry.leased) return;
                entry.lastUsed = ++this.clock;
                if (this.entries.length > this.capacity) return this.drop(entry);
                try {
                    if (!intact) await this.empty(entry);
                    entry.leased = false;
                } catch {
                    await this.drop(entry);
                }
            }
        };
    }

    public async dispose(): Promise<void> {
        for (const entry of this.entries.splice(0)) {
            await entry.target.dispose();
            await entry.draft?.dispose();
        }
    }

    /** The tenant's idle entry sharing the longest prefix (at least one token) with `prompt`. */
    private longestMatch(tenant: string, prompt: readonly number[]): Entry | undefined {
        let best: Entry | undefined;
        let bestLength = 0;
        for (const entry of this.entries) {
            if (entry.leased || entry.tenant !== tenant) continue;
            const length = sharedPrefixLength(entry.target.tokens, prompt);
            if (length > bestLength) {
                best = entry;
                bestLength = length;
            }
        }
        return best;
    }

    /** A new entry while below capacity, else the least recently used idle one (a new one if none is idle). */
    private async freeEntry(): Promise<Entry> {
        const idle = this.entries.filter((entry) => !entry.leased);
        if (this.entries.length >= this.capacity && idle.length > 0)
            return idle.reduce((oldest, entry) => (entry.lastUsed < oldest.lastUsed ? entry : oldest));
        const entry: Entry = {target: await this.target.createSequence(), draft: undefined, tenant: "", lastUsed: 0, leased: false};
        this.entries.push(entry);
        return entry;
    }

    private async empty(entry: Entry): Promise<void> {
        if (entry.target.tokens.length > 0) await entry.target.clear();
        if (entry.draft !== undefined && entry.draft.tokens.length > 0) await entry.draft.clear();
    }

    private async drop(entry: Entry): Promise<void> {
        const index = this.entries.indexOf(entry);
        if (index >= 0) this.entries.splice(index, 1);
        await entry.target.dispose().catch(() => undefined);
        await entry.draft?.dispose().catch(() => undefined);
    }
}

/** Leading tokens `a` and `b` have in common. */
export function sharedPrefixLength(a: readonly number[], b: readonly number[]): number {
    const limit = Math.min(a.length, b.length);
    let length = 0;
    while (length < limit && a[length] === b[length]) length++;
    return length;
}
