/** One progress report of llama-finetune (ggml_opt_epoch_callback_progress_bar). */
export interface FinetuneProgress {
    readonly phase: "train" | "val";
    /** Windows done and windows in this phase of the epoch. */
    readonly done: number;
    readonly total: number;
    /** Mean next-token cross-entropy (nats) over the phase so far, and its standard error. */
    readonly loss: number;
    readonly lossUncertainty: number;
    /** Share of positions whose argmax is the next token, in [0, 1]. */
    readonly accuracy: number;
    /** Seconds since the phase started. */
    readonly elapsedSeconds: number;
}

const progressPattern =
    /^(train|val):\s*\[[^\]]*\] data=(\d+)\/(\d+) loss=([-\d.naife]+)±([-\d.naife]+) acc=([-\d.naife]+)±[-\d.naife]+% t=(\d+):(\d+):(\d+)/;

/**
 * Parses one line of llama-finetune's stderr (the progress bar rewrites itself with "\r", so split
 * on both "\r" and "\n" first); null for any other line. Tied to the bundled llama.cpp's format:
 * `train: [███ ] data=0000128/0001024 loss=2.71±0.03 acc=31.2±0.5% t=00:00:14 ETA=00:01:40`.
 */
export function parseFinetuneProgress(line: string): FinetuneProgress | null {
    const match = progressPattern.exec(line.trim());
    if (match === null) return null;
    const [, phase, done, total, loss, lossUncertainty, accuracy, hours, minutes, seconds] = match;
    return {
        phase: phase as "train" | "val",
        done: Number(done),
        total: Number(total),
        loss: Number(loss),
        lossUncertainty: Number(lossUncertainty),
        accuracy: Number(accuracy) / 100,
        elapsedSeconds: Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds)
    };
}
