import {readFile} from "node:fs/promises";
import {gunzipSync} from "node:zlib";
import {InvalidInputError} from "../errors.js";

/** Reads a data file as UTF-8 text, gunzipping `.gz` files; a missing file is an InvalidInputError naming it. */
export async function readDataFile(path: string): Promise<string> {
    let bytes: Buffer;
    try {
        bytes = await readFile(path);
    } catch (error) {
        throw new InvalidInputError(
            `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
            "battery"
        );
    }
    const text = (path.endsWith(".gz") ? gunzipSync(bytes) : bytes).toString("utf8");
    // A BOM would otherwise become part of the first field name or value.
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
