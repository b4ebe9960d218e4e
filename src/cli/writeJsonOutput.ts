import {writeFileAtomic} from "../io/writeFileAtomic.js";

/**
 * The `--json OUT` convention of every specgate command: OUT "-" writes to stdout, anything else is
 * a file written atomically. Float64Arrays serialise as plain arrays.
 */
export async function writeJsonOutput(destination: string, value: unknown): Promise<void> {
    const text = JSON.stringify(value, (_key, item) => (ArrayBuffer.isView(item) ? Array.from(item as Float64Array) : item), 2) + "\n";
    if (destination === "-") process.stdout.write(text);
    else await writeFileAtomic(destination, text);
}
