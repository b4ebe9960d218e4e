import {type Command, InvalidArgumentError} from "commander";
import {type SamplingOptions, samplingOptionsSchema} from "../distributions/SamplingOptions.js";
import {InvalidInputError} from "../errors.js";

/** Commander parser for a finite number. */
export function numberOption(name: string) {
    return (value: string): number => {
        const parsed = Number(value);
        if (value.trim() === "" || !Number.isFinite(parsed)) throw new InvalidArgumentError(`${name} must be a number, got "${value}"`);
        return parsed;
    };
}

/** Adds --temperature --top-k --top-p --min-p (defaults as vLLM: 1, off, 1, 0, unless a command needs another temperature). */
export function addSamplingOptions(command: Command, defaults: {temperature: number} = {temperature: 1}): Command {
    return command
        .option("--temperature <T>", "sampling temperature; 0 = greedy", numberOption("temperature"), defaults.temperature)
        .option("--top-k <K>", "keep the K most likely tokens (0 = off)", numberOption("top-k"), 0)
        .option("--top-p <P>", "nucleus sampling mass", numberOption("top-p"), 1)
        .option("--min-p <P>", "keep tokens with p ≥ minP·p_max", numberOption("min-p"), 0);
}

export function samplingFromCli(options: {temperature: number; topK: number; topP: number; minP: number}): SamplingOptions {
    const parsed = samplingOptionsSchema.safeParse({
        temperature: options.temperature,
        topK: options.topK,
        topP: options.topP,
        minP: options.minP
    });
    if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new InvalidInputError(issue.message, `--${String(issue.path[0]).replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`);
    }
    return parsed.data;
}
