import type {BackendSequence, ModelBackend} from "../backend/ModelBackend.js";
import {SavedPromptStates} from "./SavedPromptStates.js";
import {sharedPrefixLength} from "../backend/sharedPrefixLength.js";

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
 *
 * With `savedStateBytes` (llama-server's --cache-ram), a sequence about to be given to a prompt that
 * would discard most of what it holds first saves its KV to host memory (SavedPromptStates); a request
 * whose prompt shares a longer prefix with a saved state than with any idle sequence gets that state
 * restored. Saved states are per tenant too. With an EAGLE-3 head, a saved state carries the target's
 * layer rows for its tokens and a restored one gives them back to the head, whose drafts then read
 * the same features as if the prompt had been decoded.
 */
export class PromptCache {
    private readonly entries: Entry[] = [];
    private clock = 0;
    private readonly states: SavedPromptStates | undefined;
    /** Saved states put back into a sequence so far. */
    public restores = 0;

    public constructor(
        private readonly target: ModelBackend,
        private readonly draft: ModelBackend | undefined,
        /** Sequences kept at most (the server's concurrent generations: one per slot). */
        private readonly capacity: number,
        options: {readonly savedStateBytes?: number} = {}
    ) {
        const bytes = options.savedStateBytes ?? 0;
        this.states = bytes > 0 ? new SavedPromptStates(bytes) : undefined;
    }

    /** The most bytes of KV saved to host memory (0: none are saved). */
    public get savedLimitBytes(): number {
        return this.states?.limitBytes ?? 0;
    }

    /** Bytes of KV saved to host memory now (of them, the target's layer rows an EAGLE-3 head reads), and how many states. */
    public get saved(): {readonly bytes: number; readonly layerRowBytes: number; readonly count: number} {
        return {bytes: this.states?.bytes ?? 0, layerRowBytes: this.states?.layerRowBytes ?? 0, count: this.states?.count ?? 0};
    }

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
        const live = reuse ? this.longestMatch(tenant, prompt) : undefined;
        const saved = reuse && this.states !== undefined ? this.states.longestMatch(tenant, prompt) : undefined;
        const restore = saved?.state !== undefined && saved.length > (live?.length ?? 0) ? saved.state : undefined;
        const entry = restore === undefined && live !== undefined && this.worthKeeping(live) ? live.entry : await this.freeEntry();
        entry.leased = true;
        try {
            await this.saveBeforeReuse(entry, prompt);
            if (entry.tenant !== tenant || !reuse) await this.empty(entry);
            entry.tenant = tenant;
            if (restore !== undefined) {
                await entry.target.restoreState!(restore);
                this.restores++;
            }
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
                entry.target.idle?.();
                entry.draft?.idle?.();
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

    /** The tenant's idle entry sharing the longest prefix (at least one token) with `prompt`, and that length. */
    private longestMatch(tenant: string, prompt: readonly number[]): {readonly entry: Entry; readonly length: number} | undefined {
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
        return best === undefined ? undefined : {entry: best, length: bestLength};
    }

    /**
     * Whether to run on a matching idle sequence rather than a fresh one: yes when it keeps at least
     * half of what it holds, or when no new sequence may be made (a fresh one keeps the match for later).
     */
    private worthKeeping(match: {readonly entry: Entry; readonly length: number}): boolean {
        return this.entries.length >= this.capacity || 2 * match.length >= match.entry.target.tokens.length;
    }

    /**
     * Saves what `entry` holds to host memory when giving it to `prompt` discards most of it (over half,
     * at least minimumSavedTokens), unless its tenant already keeps a state holding as much.
     */
    private async saveBeforeReuse(entry: Entry, prompt: readonly number[]): Promise<void> {
        const states = this.states;
        const held = entry.target.tokens;
        if (states === undefined || entry.target.saveState == null || held.length < minimumSavedTokens) return;
        if (2 * sharedPrefixLength(held, prompt) >= held.length || states.covers(entry.tenant, held)) return;
        states.add(entry.tenant, await entry.target.saveState());
    }

    /**
     * A new entry while below capacity, else the least recently used idle one (a new one if none is
     * idle), marked leased before any await: leases that start in the same turn never share an entry.
     */
    private async freeEntry(): Promise<Entry> {
        const idle = this.entries.filter((entry) => !entry.leased);
        if (this.entries.length >= this.capacity && idle.length > 0) {
            const oldest = idle.reduce((oldest, entry) => (entry.lastUsed < oldest.lastUsed ? entry : oldest));
            oldest.leased = true;
            return oldest;
        }
        const entry: Entry = {target: await this.target.createSequence(), draft: undefined, tenant: "", lastUsed: 0, leased: true};
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

/** Shorter prompts are cheaper to decode again than to keep. */
const minimumSavedTokens = 8;
