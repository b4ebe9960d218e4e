import {argmax} from "../distributions/argmax.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";

/**
 * TokenConstraint.acceptTokens from the synchronous methods, for a constraint whose every check is
 * cheap (a test automaton): on the calling thread, with mark() and rewind() for `restore`.
 */
export function acceptTokensInTurn(constraint: TokenConstraint, tokens: readonly number[], restore: boolean): Promise<number> {
    if (restore) constraint.mark();
    let accepted = 0;
    try {
        while (accepted < tokens.length && constraint.allows(tokens[accepted]!)) constraint.accept(tokens[accepted++]!);
    } finally {
        if (restore) constraint.rewind();
    }
    return Promise.resolve(accepted);
}

/** TokenConstraint.maskRows from the other methods, for a constraint whose checks are cheap (see acceptTokensInTurn). */
export async function maskRowsInTurn(
    constraint: TokenConstraint,
    rows: readonly Float64Array[],
    tokens: readonly number[],
    greedy: boolean
): Promise<number> {
    constraint.mark();
    let masked = 0;
    try {
        for (let index = 0; index < rows.length; index++) {
            const row = rows[index]!;
            if (!greedy || !constraint.allows(argmax(row))) {
                await constraint.maskLogits(row);
                masked++;
            }
            const next = tokens[index];
            if (next === undefined || !constraint.allows(next)) break;
            constraint.accept(next);
        }
    } finally {
        constraint.rewind();
    }
    return masked;
}
