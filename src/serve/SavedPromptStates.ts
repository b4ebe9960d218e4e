import type {SequenceState} from "../backend/ModelBackend.js";
import {savedLayerRowBytes} from "../backend/savedLayerRows.js";
import {sharedPrefixLength} from "../backend/sharedPrefixLength.js";

interface Saved {
    readonly tenant: string;
    readonly state: SequenceState;
    /** Of its bytes, those of the target's layer rows (an EAGLE-3 head's input, saved with the KV). */
    readonly layerRowBytes: number;
    lastUsed: number;
}

/**
 * Target KV caches saved to host memory, per tenant, at most `limitBytes` in all (llama-server's
 * --cache-ram): what a slot held before it was given to a different prompt, so a later request
 * sharing a prefix with it restores the KV instead of decoding the prompt again. The least
 * recently used states go first; a state whose tokens begin a newer one's is dropped as redundant.
 * A state's bytes are all it holds: with an EAGLE-3 head, the target's layer rows saved with the KV
 * (3 × hidden size × 4 bytes per token) count too.
 */
export class SavedPromptStates {
    private readonly saved: Saved[] = [];
    private clock = 0;
    private usedBytes = 0;
    private usedLayerRowBytes = 0;

    public constructor(public readonly limitBytes: number) {}

    /** Bytes held now. */
    public get bytes(): number {
        return this.usedBytes;
    }

    /** Of bytes, those of the target's layer rows saved with the KV (savedLayerRowBytes). */
    public get layerRowBytes(): number {
        return this.usedLayerRowBytes;
    }

    public get count(): number {
        return this.saved.length;
    }

    /** Whether a state of this many bytes can be kept at all. */
    public fits(bytes: number): boolean {
        return bytes > 0 && bytes <= this.limitBytes;
    }

    /** The tenant's state sharing the longest prefix with `prompt`, and that length (0 and undefined when none shares any). */
    public longestMatch(tenant: string, prompt: readonly number[]): {readonly state: SequenceState | undefined; readonly length: number} {
        let best: Saved | undefined;
        let bestLength = 0;
        for (const saved of this.saved) {
            if (saved.tenant !== tenant) continue;
            const length = sharedPrefixLength(saved.state.tokens, prompt);
            if (length > bestLength) {
                best = saved;
                bestLength = length;
            }
        }
        if (best !== undefined) best.lastUsed = ++this.clock;
        return {state: best?.state, length: bestLength};
    }

    /** Whether the tenant already keeps a state holding at least these tokens. */
    public covers(tenant: string, tokens: readonly number[]): boolean {
        return this.saved.some(
            (saved) =>
                saved.tenant === tenant &&
                saved.state.tokens.length >= tokens.length &&
                sharedPrefixLength(saved.state.tokens, tokens) === tokens.length
        );
    }

    public add(tenant: string, state: SequenceState): void {
        if (!this.fits(state.data.byteLength)) return;
        // States this one extends hold nothing it does not.
        for (let index = this.saved.length - 1; index >= 0; index--) {
            const other = this.saved[index];
            if (other.tenant === tenant && sharedPrefixLength(other.state.tokens, state.tokens) === other.state.tokens.length)
                this.remove(index);
        }
        while (this.usedBytes + state.data.byteLength > this.limitBytes) {
            const oldest = this.saved.reduce((best, saved, index) => (saved.lastUsed < this.saved[best].lastUsed ? index : best), 0);
            this.remove(oldest);
        }
        const layerRowBytes = savedLayerRowBytes(state.data);
        this.saved.push({tenant, state, layerRowBytes, lastUsed: ++this.clock});
        this.usedBytes += state.data.byteLength;
        this.usedLayerRowBytes += layerRowBytes;
    }

    private remove(index: number): void {
        this.usedBytes -= this.saved[index].state.data.byteLength;
        this.usedLayerRowBytes -= this.saved[index].layerRowBytes;
        this.saved.splice(index, 1);
    }
}
