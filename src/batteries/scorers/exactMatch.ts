export interface ExactMatchOptions {
    /** Ignore leading/trailing whitespace (default true): a trailing newline is not an answer change. */
    readonly trim?: boolean;
    /** Treat every run of whitespace as one space (default false). */
    readonly collapseWhitespace?: boolean;
    readonly caseSensitive?: boolean;
}

/** Whether an output equals a reference string, after the normalisations asked for. */
export function exactMatch(output: string, reference: string, options: ExactMatchOptions = {}): boolean {
    const normalize = (text: string): string => {
        let result = options.trim === false ? text : text.trim();
        if (options.collapseWhitespace === true) result = result.replace(/\s+/g, " ");
        return options.caseSensitive === false ? result.toLowerCase() : result;
    };
    return normalize(output) === normalize(reference);
}
