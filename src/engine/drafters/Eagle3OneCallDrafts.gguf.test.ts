import {existsSync, readFileSync} from "node:fs";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import type {NativeEagle3HeadHandle} from "../../backend/Eagle3HeadHandle.js";
import {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import {nativeBackendAvailable} from "../../backend/nativeAddon.js";
import {processLogits} from "../../distributions/processLogits.js";
import {sumOf} from "../../policies/rowOperations.js";
import {Random} from "../../random/Random.js";
import {SeededChance} from "../../random/SeededChance.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {generate} from "../generate.js";

vi.setConfig(modelTestTimeouts);

/** An EAGLE-3 head's drafts in one native call at T > 0: greedy ids, and sampled drafts drawn natively. */
const root = new URL("../../../", import.meta.url).pathname;
const targetPath = join(root, "models", "target", "model.gguf");
const headPath = join(root, "models", "eagle3", "model.gguf");
const prompt = (JSON.parse(readFileSync(join(root, "examples", "family-prompts.jsonl"), "utf8").split("\n")[0]) as {prompt: string}).prompt;
const sampling = {temperature: 1, topK: 0, topP: 1, minP: 0};

describe.runIf(existsSync(targetPath) && existsSync(headPath) && nativeBackendAvailable("cpu"))(
    "EAGLE-3 drafts in one call at T > 0",
    () => {
        let target: ModelBackend;
        let head: Eagle3HeadBackend;
        beforeAll(async () => {
            target = await loadModelBackend(targetPath, {backend: "native", threads: 1});
            head = await Eagle3HeadBackend.load(headPath, {threads: 1});
        });
        afterAll(async () => {
            await head?.dispose();
            await target?.dispose();
        });

        const run = (seed: number, draftSampling: "greedy" | "sample", minConfidence: number) =>
            generate(target, head, prompt, {
                policy: {kind: "strict"},
                gamma: 4,
                sampling,
                draftSampling,
                minConfidence,
                maxTokens: 48,
                seed,
                drafter: "eagle3"
            });

        it("greedy drafts are γ ids in one call, the tokens drafting row by row gives", async () => {
            for (const seed of [1, 2, 3]) {
                // A minConfidence no row falls below keeps the row-by-row path, which takes the same argmax.
                const [ids, rows] = [await run(seed, "greedy", 0), await run(seed, "greedy", 1e-30)];
                expect(ids.tokens).toEqual(rows.tokens);
                expect(ids.telemetry.draftTokens).toBe(rows.telemetry.draftTokens);
                expect(ids.telemetry.draftTokens).toBeGreaterThan(0);
                // Row by row: a call per drafted token; ids: one per draft (single-token calls only where one token was asked for).
                expect(rows.telemetry.draftEvaluations[1]).toBeGreaterThanOrEqual(rows.telemetry.draftTokens);
                expect(ids.telemetry.draftEvaluations[1]).toBeLessThan(ids.telemetry.drafts);
            }
        });

        it("sampled drafts are drawn natively in one call per draft", async () => {
            const result = await run(5, "sample", 0);
            expect(result.telemetry.draftTokens).toBeGreaterThan(0);
            expect(result.telemetry.draftEvaluations[1]).toBeLessThan(result.telemetry.drafts);
        });

        describe("drawDrafts on the head's handle", () => {
            let sequence: BackendSequence;
            let handle: NativeEagle3HeadHandle;
            let history: Int32Array;
            beforeAll(async () => {
                head.pairWith(target);
                sequence = await target.createSequence();
                const tokens = [target.bosToken!, ...target.tokenize(prompt)];
                await sequence.evaluate(tokens.slice(0, -1));
                history = Int32Array.from(tokens);
                handle = head.openHead(sequence);
                // The prompt's catch-up decodes in one batch; from here each call writes the boundary pair alone, as both paths below do.
                await handle.draft(history, 1, new Int32Array(1));
            });
            afterAll(async () => {
                handle?.dispose();
                await sequence?.dispose();
            });

            /** Row by row in JS: the head's logits, processLogits and SeededChance.choose with the same uniforms. */
            const byRows = async (size: number, uniforms: Float64Array, settings: typeof sampling) => {
                const chance = new SeededChance(new Random(0));
                const uniform = uniforms.values();
                chance.random.nextDouble = () => uniform.next().value!;
                const row = new Float64Array(handle.vocabularySize);
                await handle.draft(history, 1, row);
                const tokens: number[] = [];
                const rows: Float64Array[] = [];
                for (let index = 0; index < uniforms.length; index++) {
                    if (index > 0) await handle.next(tokens[index - 1], row);
                    const probabilities = processLogits(row.slice(0, size), settings);
                    rows.push(probabilities);
                    tokens.push(chance.choose(probabilities, sumOf(probabilities)));
                }
                return {tokens, rows};
            };

            it("draws the tokens and rows JS draws from the head's rows with the same uniforms", async () => {
                const size = target.vocabularySize;
                for (const settings of [sampling, {temperature: 0.7, topK: 20, topP: 0.9, minP: 0.02}]) {
                    const uniforms = Float64Array.from([0.03, 0.51, 0.97, 0.25, 0.68]);
                    const ids = new Int32Array(uniforms.length);
                    const probabilities = new Float64Array(uniforms.length * size);
                    const logits = new Float64Array(uniforms.length * size);
                    const result = await handle.drawDrafts(
                        history,
                        uniforms,
                        {sampling: settings, size, minConfidence: 0},
                        ids,
                        probabilities,
                        logits
                    );
                    expect(result.groups[0]?.error).toBeUndefined();
                    // The encoder's g rows and each output's logits and pre-norm row crossed.
                    expect(result.deviceToHostBytes).toBeGreaterThanOrEqual(uniforms.length * (handle.vocabularySize + 128) * 4);
                    const expected = await byRows(size, uniforms, settings);
                    expect(Array.from(ids)).toEqual(expected.tokens);
                    // processRow computes processLogits' steps natively (its exponentials vectorised): equal to the last few bits.
                    expected.rows.forEach((row, index) =>
                        row.forEach((value, id) => expect(probabilities[index * size + id]).toBeCloseTo(value, 12))
                    );
                }
            });

            it("stops where a row's top probability is below minConfidence, −1 past the draft's end", async () => {
                const size = target.vocabularySize;
                const ids = new Int32Array(4);
                const rows = () => new Float64Array(4 * size);
                await handle.drawDrafts(
                    history,
                    Float64Array.from([0.5, 0.5, 0.5, 0.5]),
                    {sampling, size, minConfidence: 1},
                    ids,
                    rows(),
                    rows()
                );
                expect(Array.from(ids)).toEqual([-1, -1, -1, -1]);
            });

            it("refuses hostile arguments with an error naming them", () => {
                const size = target.vocabularySize;
                const options = {sampling, size, minConfidence: 0};
                const [ids, rows] = [new Int32Array(2), new Float64Array(2 * size)];
                const uniforms = Float64Array.from([0.1, 0.2]);
                expect(() => handle.drawDraftsNow(history, Float64Array.from([1, 0]), options, ids, rows, rows)).toThrow(
                    /uniforms\[0\] must be in \[0, 1\)/
                );
                expect(() => handle.drawDraftsNow(history, uniforms, options, new Int32Array(1), rows, rows)).toThrow(
                    /ids holds 1 elements/
                );
                expect(() => handle.drawDraftsNow(history, uniforms, options, ids, new Float64Array(size), rows)).toThrow(RangeError);
                expect(() => handle.drawDraftsNow(history, uniforms, {...options, size: 0}, ids, rows, rows)).toThrow(/options.size/);
                expect(() => handle.drawDraftsNow(history, uniforms, {...options, minConfidence: 2}, ids, rows, rows)).toThrow(
                    /options.minConfidence/
                );
                expect(() => handle.drawDraftsNow(history, uniforms, options, ids, rows, new Int32Array(2 * size) as never)).toThrow(
                    TypeError
                );
            });
        });
    }
);
