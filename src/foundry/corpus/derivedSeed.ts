import {createHash} from "node:crypto";

/**
 * A seed for a named purpose derived from a base seed (53 bits of SHA-256), so each task's stream
 * depends only on (seed, label): adding a task or changing a mixture never shifts another task's problems.
 */
export function derivedSeed(seed: number, label: string): number {
    const digest = createHash("sha256").update(`${seed}\u0000${label}`).digest();
    return (digest.readUInt32BE(0) & 0x1f_ffff) * 0x1_0000_0000 + digest.readUInt32BE(4);
}
