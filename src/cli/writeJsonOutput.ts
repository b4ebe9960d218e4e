import {writeFileAtomic} from "../io/writeFileAtomic.js";
import {writeOutputFile} from "./writeOutputFile.js";

/** JSON as every specgate command writes it: indented, newline-terminated, typed arrays as plain arrays. */
export function jsonText(value: unknown): string {
    return JSON.stringify(value, (_key, item) => (ArrayBuffer.isView(item) ? Array.from(item as Float64Array) : item), 2) + "\n";
}

/**
 * The `--json OUT` convention of every specgate command: OUT "-" writes to stdout, anything else is
 * a file written atomically.
 */
export async function writeJsonOutput(destination: string, value: unknown): Promise<void> {
    const text = jsonText(value);
    if (destination === "-") process.stdout.write(text);
    else await writeOutputFile(() => writeFileAtomic(destination, text), destination, "--json");
}
