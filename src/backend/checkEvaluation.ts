import {InvalidInputError, TokenOutOfRangeError} from "../errors.js";
import type {EvaluateOptions} from "./ModelBackend.js";

const isTokenId = (token: number, vocabularySize: number): boolean => Number.isInteger(token) && token >= 0 && token < vocabularySize;

export function checkToken(token: number, vocabularySize: number, field: string): void {
    if (!isTokenId(token, vocabularySize)) throw new TokenOutOfRangeError(`token ${token} is outside [0, ${vocabularySize})`, field);
}

/** checkToken for each of `tokens`, the field of a bad one named `field[index]` (built only then: this runs every step). */
export function checkTokens(tokens: readonly number[], vocabularySize: number, field = "tokens"): void {
    for (let index = 0; index < tokens.length; index++)
        if (!isTokenId(tokens[index]!, vocabularySize)) checkToken(tokens[index]!, vocabularySize, `${field}[${index}]`);
}

/**
 * Validates an evaluation request against a sequence holding `length` tokens and returns the
 * positions to read (default: the last token). Refuses to overflow the context rather than let a
 * runtime shift it and silently drop old tokens.
 */
export function checkEvaluation(
    tokens: readonly number[],
    options: EvaluateOptions,
    sizes: {vocabularySize: number; contextSize: number; length: number}
): number[] {
    const positions = [...(options.positions ?? (tokens.length > 0 ? [tokens.length - 1] : []))];
    if (tokens.length === 0) {
        if (positions.length > 0) throw new InvalidInputError("positions were requested but no tokens were given", "positions");
        return positions;
    }
    checkTokens(tokens, sizes.vocabularySize);
    positions.forEach((position, index) => {
        if (!Number.isInteger(position) || position < 0 || position >= tokens.length)
            throw new InvalidInputError(`position ${position} is outside [0, ${tokens.length})`, `positions[${index}]`);
    });
    if (sizes.length + tokens.length > sizes.contextSize)
        throw new InvalidInputError(`${sizes.length} + ${tokens.length} tokens exceed the context size ${sizes.contextSize}`, "tokens");
    return positions;
}

/** Checks a rollback of `count` tokens from a sequence holding `length`. */
export function checkRollback(count: number, length: number): void {
    if (!Number.isInteger(count) || count < 0 || count > length)
        throw new InvalidInputError(`can roll back 0..${length} tokens, got ${count}`, "count");
}
