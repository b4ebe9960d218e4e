import type {BackendSequence, EvaluationSplit} from "./ModelBackend.js";

export interface TimedEvaluation<T> {
    readonly result: T;
    /** Wall milliseconds of the whole call. */
    readonly milliseconds: number;
    /** The backend's own split of this call (llama_decode, row transfer, sampler rows); undefined where it does not measure. */
    readonly native?: EvaluationSplit;
}

/** Runs one evaluation of `sequence` and reports its wall time and, where measured, its native split. */
export async function timedEvaluation<T>(sequence: BackendSequence, evaluation: () => Promise<T>): Promise<TimedEvaluation<T>> {
    const before = sequence.timings === undefined ? undefined : {...sequence.timings};
    const started = performance.now();
    const result = await evaluation();
    const milliseconds = performance.now() - started;
    const after = sequence.timings;
    if (before === undefined || after === undefined) return {result, milliseconds};
    return {
        result,
        milliseconds,
        native: {
            decodeMilliseconds: after.decodeMilliseconds - before.decodeMilliseconds,
            transferMilliseconds: after.transferMilliseconds - before.transferMilliseconds,
            samplingMilliseconds: after.samplingMilliseconds - before.samplingMilliseconds,
            ...(after.batchWaitMilliseconds !== undefined
                ? {batchWaitMilliseconds: after.batchWaitMilliseconds - (before.batchWaitMilliseconds ?? 0)}
                : {}),
            ...(after.deviceToHostBytes !== undefined ? {deviceToHostBytes: after.deviceToHostBytes - (before.deviceToHostBytes ?? 0)} : {})
        }
    };
}
