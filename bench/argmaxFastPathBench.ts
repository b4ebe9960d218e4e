/**
 * The temperature-0 argmax fast path against the full-logits path at V = 32,000, alternated twice in
 * one process on the same fixture and prompt:
 *
 *   npx tsx bench/argmaxFastPathBench.ts
 */
import {mkdir} from "node:fs/promises";
import {NodeLlamaCppBackend} from "../src/backend/NodeLlamaCppBackend.js";
import {generate} from "../src/engine/generate.js";
import {writeRandomLlamaPair} from "../src/gguf/randomLlamaModel.js";

const directory = ".specgate/bench/fixture-v32k";
await mkdir(directory, {recursive: true});
// The byte vocabulary padded with letter pieces to 32,000 tokens (as `specgate fixtures --vocabulary-size 32000`).
const pieces: string[] = [];
for (let length = 2; pieces.length < 32_000 - 260; length++)
    for (let index = 0; index < 26 ** length && pieces.length < 32_000 - 260; index++)
        pieces.push(
            Array.from({length}, (_value, position) =>
                String.fromCharCode(97 + (Math.floor(index / 26 ** (length - 1 - position)) % 26))
            ).join("")
        );
const pair = await writeRandomLlamaPair({directory, seed: 1, pieces});
const target = await NodeLlamaCppBackend.load(pair.targetPath, {threads: 1});
const draft = await NodeLlamaCppBackend.load(pair.draftPath, {threads: 1});
process.stdout.write("| path | tok/s | first tokens |\n|---|---|---|\n");
for (const argmaxFastPath of [true, false, true, false]) {
    const result = await generate(target, draft, "hello world", {
        policy: {kind: "strict"},
        gamma: 4,
        sampling: {temperature: 0},
        maxTokens: 64,
        argmaxFastPath
    });
    process.stdout.write(
        `| ${argmaxFastPath ? "argmax only" : "full logits"} | ${result.telemetry.tokensPerSecond.toFixed(1)} | ${result.tokens.slice(0, 5).join(", ")} |\n`
    );
}
await draft.dispose();
await target.dispose();
