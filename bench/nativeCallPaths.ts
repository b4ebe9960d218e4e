/**
 * What a native evaluation costs through a libuv worker against inline on the main thread
 * (NativeBackendOptions.inlineBelowMilliseconds), measured on the same files in one run, arms
 * interleaved block by block:
 *  - the V = 152,000 fixture of `npm run bench:native` (.specgate/bench-native/v152k/target.gguf,
 *    written by that script): one-token evaluateDistributions at T = 0.8, as target-only decoding does;
 *  - the shipped family target: one-token evaluateArgmax, as T = 0 decoding does.
 * Each block appends 32 tokens, then rolls them back. Prints, per arm, the median over blocks of the
 * wall time per call and of llama_decode inside it.
 *
 *   npx tsx bench/nativeCallPaths.ts [--blocks 15]
 */
import {existsSync} from "node:fs";
import {NativeBackend} from "../src/backend/NativeBackend.js";
import type {BackendSequence} from "../src/backend/ModelBackend.js";

const blocksIndex = process.argv.indexOf("--blocks");
const blocks = blocksIndex >= 0 ? Number(process.argv[blocksIndex + 1]) : 15;
const callsPerBlock = 32;
const sampling = {temperature: 0.8, topK: 0, topP: 1, minP: 0};

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1];

async function block(sequence: BackendSequence, call: (token: number) => Promise<unknown>): Promise<{wall: number; decode: number}> {
    const decodeBefore = sequence.timings!.decodeMilliseconds;
    const started = performance.now();
    for (let index = 0; index < callsPerBlock; index++) await call(100 + index);
    const wall = (performance.now() - started) / callsPerBlock;
    const decode = (sequence.timings!.decodeMilliseconds - decodeBefore) / callsPerBlock;
    await sequence.rollback(callsPerBlock);
    return {wall, decode};
}

async function compare(label: string, path: string, kind: "distributions" | "argmax"): Promise<void> {
    if (!existsSync(path)) {
        console.log(`${label}: ${path} is missing (run \`npm run bench:native\` once to write it)`);
        return;
    }
    const arms = [
        {name: "worker", backend: await NativeBackend.load(path, {inlineBelowMilliseconds: 0})},
        {name: "inline", backend: await NativeBackend.load(path, {inlineBelowMilliseconds: 1000})}
    ];
    const results = new Map<string, {wall: number[]; decode: number[]}>();
    const sequences = await Promise.all(
        arms.map(async ({backend}) => {
            const sequence = await backend.createSequence();
            await sequence.evaluate(backend.tokenize("Once upon a time"), {positions: []});
            return sequence;
        })
    );
    for (let round = 0; round < blocks; round++) {
        for (let index = 0; index < arms.length; index++) {
            const arm = arms[(index + round) % arms.length];
            const sequence = sequences[arms.indexOf(arm)];
            const measured = await block(sequence, (token) =>
                kind === "distributions" ? sequence.evaluateDistributions!([token], sampling) : sequence.evaluateArgmax!([token])
            );
            const entry = results.get(arm.name) ?? {wall: [], decode: []};
            entry.wall.push(measured.wall);
            entry.decode.push(measured.decode);
            results.set(arm.name, entry);
        }
    }
    for (const [name, entry] of results)
        console.log(`${label}, ${name}: ${median(entry.wall).toFixed(3)} ms per call (llama_decode ${median(entry.decode).toFixed(3)} ms)`);
    for (const sequence of sequences) await sequence.dispose();
    for (const {backend} of arms) await backend.dispose();
}

await compare("V = 152,000, T = 0.8, evaluateDistributions of 1 token", ".specgate/bench-native/v152k/target.gguf", "distributions");
await compare("family target, evaluateArgmax of 1 token", "models/target/model.gguf", "argmax");
