import {UnknownLanguageError} from "../errors.js";

const names = new Intl.DisplayNames(["en"], {type: "language", fallback: "none"});

/**
 * The English name of a BCP 47 language tag ("ja" → "Japanese"), or an UnknownLanguageError when
 * the tag is malformed or names no language ICU knows — so a typo such as "jp" or "xx" fails loudly
 * instead of silently becoming its own group.
 */
export function languageName(tag: string, field = "language"): string {
    let name: string | undefined;
    try {
        name = names.of(tag);
    } catch {
        name = undefined;
    }
    if (name === undefined)
        throw new UnknownLanguageError(tag, `"${tag}" is not a known language tag (BCP 47, e.g. en, ja, zh-Hant)`, field);
    return name;
}
