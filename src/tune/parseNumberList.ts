import {InvalidInputError} from "../errors.js";

/** A comma-separated list of numbers from a flag ("2,4,6"), each checked by `valid`, which names what it wants. */
export function parseNumberList(text: string, flag: string, valid: {test: (value: number) => boolean; expected: string}): number[] {
    const entries = text.split(",").map((entry) => entry.trim());
    if (entries.every((entry) => entry === "")) throw new InvalidInputError("is empty", flag);
    return entries.map((entry) => {
        const value = Number(entry);
        if (entry === "" || !Number.isFinite(value) || !valid.test(value))
            throw new InvalidInputError(`expected ${valid.expected}, got "${entry}" in "${text}"`, flag);
        return value;
    });
}
