import {createHash} from "node:crypto";
import type {CorpusSplit, CorpusTask} from "./CorpusSample.js";

/** Fractions of distinct problems in the held-out splits; the rest is train. */
export const testFraction = 0.1;
export const validationFraction = 0.1;

/**
 * The split of a problem, from a hash of its task and canonical key alone. The seed is deliberately
 * not part of it: a problem is held out in every corpus, whatever its seed or mixture, so corpora of
 * one family never leak a test problem into another model's training data.
 */
export function splitOfProblem(task: CorpusTask, key: string): CorpusSplit {
    const unit = createHash("sha256").update(`${task}\u0000${key}`).digest().readUInt32BE(0) / 0x1_0000_0000;
    if (unit < testFraction) return "test";
    return unit < testFraction + validationFraction ? "validation" : "train";
}
