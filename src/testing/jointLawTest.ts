import type {ModelBackend} from "../backend/ModelBackend.js";
import type {GenerationResult} from "../engine/GenerationOutput.js";
import {type ChiSquareResult, chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {targetLaw} from "./targetLaw.js";

/** A χ² test of generated outputs against the target's law, and how many draft tokens the generations drafted and kept. */
export interface JointLawTest {
    readonly test: ChiSquareResult;
    /** Cells of the law (besides its rest) and the probability the rest holds. */
    readonly cells: number;
    readonly rest: number;
    readonly accepted: number;
    readonly drafted: number;
}

/**
 * Generates once per seed in [0, runs) and tests the first `length` tokens of those outputs against
 * the target's joint law of them after `prompt` (targetLaw, with `prefixFloor`): what lossless
 * speculative sampling must preserve at temperature 1. An output stopped early at EOS counts as its
 * tokens then EOS, as the law keys it.
 */
export async function jointLawTest(
    target: ModelBackend,
    law: {readonly prompt: string; readonly length: number; readonly prefixFloor: number; readonly runs: number},
    generateSeed: (seed: number) => Promise<GenerationResult>
): Promise<JointLawTest> {
    const {cells, rest} = await targetLaw(target, [target.bosToken!, ...target.tokenize(law.prompt)], law.length, law.prefixFloor);
    const keys = [...cells.keys()];
    const index = new Map(keys.map((key, position) => [key, position]));
    const expected = Float64Array.from([...cells.values(), rest]);
    const observed = new Float64Array(expected.length);
    let accepted = 0;
    let drafted = 0;
    for (let seed = 0; seed < law.runs; seed++) {
        const result = await generateSeed(seed);
        accepted += result.telemetry.acceptedTokens;
        drafted += result.telemetry.draftTokens;
        const stopped = result.tokens.length < law.length && result.finishReason === "stop";
        const tokens = stopped ? [...result.tokens, target.eosToken!] : result.tokens;
        observed[index.get(tokens.slice(0, law.length).join(",")) ?? keys.length]++;
    }
    return {test: chiSquareGoodnessOfFit(observed, expected), cells: keys.length, rest, accepted, drafted};
}
