/** The first `count` strings of "aa", "ab", …, "zz", "aaa", … — unique pieces that enlarge the vocabulary. */
export function letterPieces(count: number): string[] {
    const pieces: string[] = [];
    for (let length = 2; pieces.length < count; length++) {
        const total = 26 ** length;
        for (let index = 0; index < total && pieces.length < count; index++) {
            let piece = "";
            for (let rest = index, position = 0; position < length; position++, rest = Math.floor(rest / 26))
                piece = String.fromCharCode(97 + (rest % 26)) + piece;
            pieces.push(piece);
        }
    }
    return pieces;
}
