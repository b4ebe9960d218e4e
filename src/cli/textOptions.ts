import type {Command} from "commander";
import {InvalidInputError} from "../errors.js";

/**
 * Parsers for option values that commands receive as raw strings and validate themselves (so the
 * error is a typed InvalidInputError naming the flag, reported by the one handler in main.ts).
 */
export function requiredText(value: string | undefined, flag: string): string {
    if (value === undefined || value === "") throw new InvalidInputError("is required", flag);
    return value;
}

export function nonNegativeDecimal(text: string | undefined, flag: string, fallback: number): number {
    if (text === undefined) return fallback;
    if (!/^\d*\.?\d+(?:[eE][-+]?\d+)?$/.test(text)) throw new InvalidInputError(`must be a non-negative number, got "${text}"`, flag);
    return Number(text);
}

export function nonNegativeInteger(text: string | undefined, flag: string, fallback: number): number {
    if (text === undefined) return fallback;
    if (!/^\d+$/.test(text)) throw new InvalidInputError(`must be a non-negative integer, got "${text}"`, flag);
    return Number(text);
}

/** A non-negative integer that must also be at least 1 (token budgets, steps, resamples). */
export function positiveInteger(text: string | undefined, flag: string, fallback: number): number {
    const value = nonNegativeInteger(text, flag, fallback);
    if (value < 1) throw new InvalidInputError("must be at least 1", flag);
    return value;
}

/** The `tais` parent command, created by whichever of its subcommands registers first. */
export function taisParentCommand(program: Command): Command {
    return (
        program.commands.find((command) => command.name() === "tais") ??
        program.command("tais").description("TAIS screen: is speculative decoding safety-equivalent to target-only decoding?")
    );
}
