import {InvalidArgumentError} from "commander";
import {type GammaSetting, parseGammaSpec} from "../engine/gammaSpec.js";
import {InvalidInputError} from "../errors.js";

/** Help for `--gamma` where it takes one value. */
export const gammaOptionHelp =
    "draft tokens per step: an integer in [0, 64] (0: target-only decoding), or auto (chosen before each step in 0..8 to maximise " +
    "predicted tokens/s from the measured step costs at the current load and the request's acceptance) or auto:MAX (0..MAX)";

/** Commander parser of `--gamma N|auto|auto:MAX` (parseGammaSpec), with its message. */
export function gammaOption(value: string): GammaSetting {
    try {
        return parseGammaSpec(value, "--gamma");
    } catch (error) {
        if (error instanceof InvalidInputError) throw new InvalidArgumentError(error.message);
        throw error;
    }
}
