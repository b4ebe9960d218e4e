/** Largest decode that may run inline: a draft step, a γ ≤ 7 verification, or a step of up to 8 one-token sequences. */
export const inlineTokenLimit = 8;

/**
 * Whether a native decode runs on the JS thread (`decodeNow`) or on a libuv worker (`decode`). A
 * worker costs a thread hand-off (tens of µs) on every call, which dominates a tiny model's small
 * decodes; on the JS thread, though, a decode blocks every other request. So a decode of at most
 * inlineTokenLimit tokens runs inline only while the moving average of recent small decodes' native
 * cost is below `belowMilliseconds` (NativeBackendOptions.inlineBelowMilliseconds; 0 = never).
 * The average starts at Infinity, so the first small decodes go to a worker and measure the cost.
 */
export class InlineDecodeChooser {
    private smallMilliseconds = Infinity;

    public constructor(private readonly belowMilliseconds: number) {}

    public inline(tokens: number): boolean {
        return tokens <= inlineTokenLimit && this.smallMilliseconds < this.belowMilliseconds;
    }

    /** Records what a decode of `tokens` tokens cost natively (decode, row transfer and sampling). */
    public record(tokens: number, milliseconds: number): void {
        if (tokens > inlineTokenLimit) return;
        this.smallMilliseconds = this.smallMilliseconds === Infinity ? milliseconds : 0.8 * this.smallMilliseconds + 0.2 * milliseconds;
    }
}
