/**
 * Drafters compared by what they cost in model time, independently of how busy the machine is:
 * each row's target and draft evaluations are counted by batch size and priced from a cost curve
 * measured in the same process as the minimum of 40 evaluations per batch size (a quiet machine's
 * time). The modeled speed-up is target-only's priced time ÷ the row's; it leaves out what is not a
 * model call (the engine's JS, the lookups), which `specgate bench` measures along with everything
 * else. Every row's tokens are checked against target-only's (temperature 0).
 *
 *   npx tsx bench/drafterCostBench.ts --prompts examples/family-prompts.jsonl --max-tokens 128 --gamma 4
 *   npx tsx bench/drafterCostBench.ts --prompts repetitive --max-tokens 80 --gamma 8 --drafters ngram,suffix,ngram+suffix
 *
 * Defaults: the shipped family (models/target, models/draft), drafters model,ngram,suffix,ngram+suffix,ngram+model.
 */
import {parseArgs} from "node:util";
import {loadModelBackend} from "../src/backend/loadModelBackend.js";
import type {BackendSequence, ModelBackend} from "../src/backend/ModelBackend.js";
import {createDrafter} from "../src/engine/drafters/createDrafter.js";
import {generate} from "../src/engine/generate.js";
import {loadPrompts} from "../src/cli/loadPrompts.js";

const {values} = parseArgs({
    options: {
        target: {type: "string", default: "models/target/model.gguf"},
        draft: {type: "string", default: "models/draft/model.gguf"},
        prompts: {type: "string", default: "examples/family-prompts.jsonl"},
        drafters: {type: "string", default: "model,ngram,suffix,ngram+suffix,ngram+model"},
        gamma: {type: "string", default: "4"},
        "max-tokens": {type: "string", default: "128"}
    }
});
const gamma = Number(values.gamma);
const maxTokens = Number(values["max-tokens"]);
const prompts = await loadPrompts(values.prompts);
const target = await loadModelBackend(values.target, {threads: 1});
const rawDraft = await loadModelBackend(values.draft, {threads: 1});

/**
 * Wraps a backend so that every decode evaluation of its sequences is counted by batch size (a
 * prompt prefill asks for no logits, `positions: []`, and is not decode time).
 */
function counted(backend: ModelBackend, batches: Map<number, number>): ModelBackend {
    const count = (size: number, options?: {positions?: readonly number[]}) => {
        if (options?.positions?.length !== 0) batches.set(size, (batches.get(size) ?? 0) + 1);
    };
    return Object.create(backend, {
        createSequence: {
            value: async (): Promise<BackendSequence> => {
                const sequence = await backend.createSequence();
                return Object.create(sequence, {
                    evaluate: {
                        value: (tokens: readonly number[], options?: {positions?: readonly number[]}) => (
                            count(tokens.length, options),
                            sequence.evaluate(tokens, options)
                        )
                    },
                    evaluateArgmax: {
                        value: (tokens: readonly number[], options?: {positions?: readonly number[]}) => (
                            count(tokens.length, options),
                            sequence.evaluateArgmax!(tokens, options)
                        )
                    },
                    tokens: {get: () => sequence.tokens}
                }) as BackendSequence;
            }
        }
    }) as ModelBackend;
}

/** Minimum time of 40 argmax evaluations of each batch size, after a 40-token context. */
async function costCurve(model: ModelBackend, sizes: readonly number[]): Promise<Map<number, number>> {
    const sequence = await model.createSequence();
    const context = model.tokenize(
        'Request: Set a timer for 56 minutes.\nCall: {"name":"set_timer","arguments":{"minutes":56}}\n\nRequest:'
    );
    await sequence.evaluate(context.slice(0, 40), {positions: []});
    const curve = new Map<number, number>();
    for (const size of sizes) {
        const batch = context.slice(40, 40 + size);
        let best = Infinity;
        for (let repeat = 0; repeat < 40; repeat++) {
            const started = performance.now();
            await sequence.evaluateArgmax!(batch, {positions: batch.map((_token, index) => index)});
            best = Math.min(best, performance.now() - started);
            await sequence.rollback(batch.length);
        }
        curve.set(size, best);
    }
    await sequence.dispose();
    return curve;
}

const sizes = Array.from({length: Math.max(2, gamma + 1)}, (_value, index) => index + 1);
const targetCurve = await costCurve(target, sizes);
const draftCurve = await costCurve(rawDraft, sizes);
/** A batch's price from the curve; sizes beyond it (a chain's model catching up) extend its last slope. */
function price(batches: Map<number, number>, curve: Map<number, number>): number {
    const largest = Math.max(...curve.keys());
    const slope = curve.get(largest)! - curve.get(largest - 1)!;
    return [...batches].reduce(
        (sum, [size, count]) => sum + count * (curve.get(size) ?? curve.get(largest)! + (size - largest) * slope),
        0
    );
}
const format = (curve: Map<number, number>) => [...curve].map(([size, milliseconds]) => `${size}: ${milliseconds.toFixed(3)}`).join(", ");
process.stdout.write(`${prompts.length} prompts (${values.prompts}) × up to ${maxTokens} tokens, temperature 0, γ = ${gamma}, strict\n`);
process.stdout.write(`target ms by batch size: ${format(targetCurve)}\ndraft ms by batch size: ${format(draftCurve)}\n\n`);
process.stdout.write(
    "| drafter | target calls / token | tokens verified / token | acceptance | modeled speed-up |\n|---|---|---|---|---|\n"
);

const targetBatches = new Map<number, number>();
const draftBatches = new Map<number, number>();
const countedTarget = counted(target, targetBatches);
const draft = counted(rawDraft, draftBatches);
const baseline: number[][] = [];
let baselineMilliseconds = 0;
for (const spec of ["target-only", ...values.drafters.split(",")]) {
    const drafter = spec === "target-only" ? undefined : createDrafter(spec, draft);
    let tokens = 0;
    let accepted = 0;
    let drafted = 0;
    targetBatches.clear();
    draftBatches.clear();
    for (const [index, prompt] of prompts.entries()) {
        const result = await generate(countedTarget, undefined, prompt, {sampling: {temperature: 0}, maxTokens, gamma}, {drafter});
        if (spec === "target-only") baseline[index] = result.tokens;
        else if (result.tokens.join() !== baseline[index].join()) throw new Error(`${spec} differs from target-only on prompt ${index}`);
        tokens += result.tokens.length;
        accepted += result.telemetry.acceptedTokens;
        drafted += result.telemetry.draftTokens;
    }
    const decodeCalls = [...targetBatches.values()].reduce((sum, count) => sum + count, 0);
    const verified = [...targetBatches].reduce((sum, [size, count]) => sum + size * count, 0);
    const milliseconds = price(targetBatches, targetCurve) + price(draftBatches, draftCurve);
    if (spec === "target-only") baselineMilliseconds = milliseconds;
    process.stdout.write(
        `| ${spec} | ${(decodeCalls / tokens).toFixed(3)} | ${(verified / tokens).toFixed(3)} | ${drafted === 0 ? "–" : `${((100 * accepted) / drafted).toFixed(1)}%`} | ${(baselineMilliseconds / milliseconds).toFixed(2)}× |\n`
    );
}
await rawDraft.dispose();
await target.dispose();
