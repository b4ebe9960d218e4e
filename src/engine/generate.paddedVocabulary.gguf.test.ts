import {mkdir, mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {backendKinds, loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {TokenizerMismatchError} from "../errors.js";
import {letterPieces} from "../gguf/letterPieces.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {generate} from "./generate.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * A Qwen2.5-style pair on every backend: the draft has 151,936 tokens, the target the same plus 128
 * unused `[PAD<id>]` rows (152,064), as Qwen2.5 0.5B and 7B GGUFs. llama.cpp pairs them; so must we.
 */
const draftSize = 151_936;
const padding = 128;
let directory: string;
let paths: {targetPath: string; draftPath: string};
let mismatchedPaths: {targetPath: string; draftPath: string};

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-padded-"));
    const shapes = {
        target: {embeddingLength: 32, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 64},
        draft: {embeddingLength: 16, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 32}
    };
    paths = await writeRandomLlamaPair({
        directory,
        seed: 4,
        pieces: letterPieces(draftSize - 260),
        targetPaddingTokens: padding,
        ...shapes
    });
    const other = join(directory, "other");
    await mkdir(other);
    // Same sizes, two pieces swapped: id 934 (260 + 674) is "zy" in the pair above and "zz" here.
    const pieces = letterPieces(draftSize - 260);
    [pieces[675], pieces[674]] = [pieces[674], pieces[675]];
    mismatchedPaths = await writeRandomLlamaPair({directory: other, seed: 4, pieces, ...shapes});
}, 120_000);

afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe.each(backendKinds)("a pair 128 tokens apart (152,064 vs 151,936), %s backend", (backend) => {
    let target: ModelBackend;
    let draft: ModelBackend;
    beforeAll(async () => {
        target = await loadModelBackend(paths.targetPath, {threads: 1, backend, contextSize: 256});
        draft = await loadModelBackend(paths.draftPath, {threads: 1, backend, contextSize: 256});
    }, 120_000);
    afterAll(async () => {
        await draft?.dispose();
        await target?.dispose();
    });

    it("loads with the sizes of the files", () => {
        expect(target.vocabularySize).toBe(draftSize + padding);
        expect(draft.vocabularySize).toBe(draftSize);
    });

    it("strict at T = 0 generates exactly what the target generates alone", async () => {
        for (const prompt of ["Once upon a time", "東京は", "def f(x):"]) {
            const baseline = await generate(target, undefined, prompt, {sampling: {temperature: 0}, maxTokens: 32});
            const speculative = await generate(target, draft, prompt, {
                policy: {kind: "strict"},
                gamma: 4,
                sampling: {temperature: 0},
                maxTokens: 32
            });
            expect(speculative.tokens).toEqual(baseline.tokens);
            expect(speculative.telemetry.toJSON().acceptedTokens).toBeGreaterThan(0);
        }
    }, 120_000);

    it("at T = 1, in both directions, never emits an id beyond the draft's vocabulary", async () => {
        for (const [first, second] of [
            [target, draft],
            [draft, target]
        ]) {
            const result = await generate(first, second, "Hello", {
                policy: {kind: "strict"},
                gamma: 3,
                sampling: {temperature: 1},
                maxTokens: 24,
                seed: 9
            });
            expect(result.tokens.every((token) => token < draftSize)).toBe(true);
        }
    }, 120_000);

    it("refuses a draft whose token texts differ, naming the first differing token", async () => {
        const other = await loadModelBackend(mismatchedPaths.draftPath, {threads: 1, backend, contextSize: 256});
        try {
            await expect(generate(target, other, "hello")).rejects.toThrow(TokenizerMismatchError);
            await expect(generate(target, other, "hello")).rejects.toThrow(
                'draft: token 934 differs: the target\'s is "zy", the draft\'s "zz"'
            );
        } finally {
            await other.dispose();
        }
    }, 120_000);
});
