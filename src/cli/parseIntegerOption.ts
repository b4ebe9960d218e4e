import {InvalidArgumentError} from "commander";

/** Commander option parser for integers in [minimum, maximum], with a message naming the bound. */
export function integerOption(minimum: number, maximum = Number.MAX_SAFE_INTEGER) {
    return (value: string): number => {
        const parsed = Number(value);
        if (!Number.isSafeInteger(parsed) || parsed < minimum || parsed > maximum)
            throw new InvalidArgumentError(`expected an integer in [${minimum}, ${maximum}], got "${value}"`);
        return parsed;
    };
}
