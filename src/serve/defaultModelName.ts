import {basename, dirname, resolve} from "node:path";
import {GgufReader} from "../gguf/GgufReader.js";

/**
 * The model id a server answers to when none is given: the GGUF's `general.name`; without one, the
 * folder of a file named model.gguf (models/target/model.gguf → "target"), else the file name
 * without .gguf.
 */
export function defaultModelName(path: string): string {
    let name: unknown;
    try {
        name = GgufReader.readHeader(path).metadata.get("general.name")?.value;
    } catch {
        name = undefined; // the model load reports an unreadable file; the id falls back to the path
    }
    if (typeof name === "string" && name.trim() !== "") return name.trim();
    const file = basename(path);
    if (/^model\.gguf$/i.test(file)) return basename(dirname(resolve(path)));
    return file.replace(/\.gguf$/i, "");
}
