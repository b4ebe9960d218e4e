/**
 * Per-step verification cost of every policy, at vocabulary sizes of Llama-2 (32,000) and Qwen2.5
 * (152,064, rounded to 152,000) and γ = 1, 4, 8. The rows are given (as the engine
 * hands them over after evaluation); the cost measured is the policy's `verify` only.
 *
 *   npm run bench:verify            # full table (a few minutes on 2 cores)
 *   npm run bench:verify -- --quick # V = 32,000 only
 *
 * Steps: target logits ~ 3·N(0,1)-ish (peaked enough that argmax is meaningful), draft = target
 * logits + noise, both softmaxed at T = 1; draft tokens sampled from the draft rows. 8 distinct steps
 * are cycled so branch prediction cannot memorise one. Reported: median over 7 batches of the mean
 * time per step, milliseconds.
 */
import {processLogits} from "../src/distributions/processLogits.js";
import {CorrectionMemory} from "../src/policies/CorrectionMemory.js";
import {createPolicy, parsePolicyConfig} from "../src/policies/createPolicy.js";
import type {VerificationStep} from "../src/policies/VerificationPolicy.js";
import {Random} from "../src/random/Random.js";
import {SeededChance} from "../src/random/SeededChance.js";

const quick = process.argv.includes("--quick");
const vocabularySizes = quick ? [32_000] : [32_000, 152_000];
const gammas = [1, 4, 8];
const policies = [
    {kind: "greedy"},
    {kind: "strict"},
    {kind: "match"},
    {kind: "typical"},
    {kind: "fuzzy", threshold: 0.4},
    {kind: "fuzzy", threshold: 0.4, topK: 50},
    {kind: "fuzzy", threshold: 0.4, distribution: "processed"},
    {kind: "calibrated"},
    {kind: "lossy", tau: 0.01},
    {kind: "random", acceptanceProbability: 0.7}
];

function gaussian(random: Random): number {
    return Math.sqrt(-2 * Math.log(1 - random.nextDouble())) * Math.cos(2 * Math.PI * random.nextDouble());
}

function buildSteps(vocabularySize: number, gamma: number, count: number): VerificationStep[] {
    const random = new Random(vocabularySize + gamma);
    const chance = new SeededChance(random.split());
    return Array.from({length: count}, () => {
        const targetLogits = Array.from({length: gamma + 1}, () => Float64Array.from({length: vocabularySize}, () => 3 * gaussian(random)));
        const draftLogits = targetLogits.slice(0, gamma).map((row) => row.map((value) => value + gaussian(random)));
        const targetProbs = targetLogits.map((row) => processLogits(row));
        const draftProbs = draftLogits.map((row) => processLogits(row));
        const draftTokens = draftProbs.map((row) => chance.choose(row, 1));
        return {draftTokens, targetProbs, draftProbs, targetLogits, draftLogits};
    });
}

function label(config: Record<string, unknown>): string {
    const {kind, ...rest} = config;
    const parameters = Object.entries(rest)
        .map(([key, value]) => `${key}=${String(value)}`)
        .join(",");
    return parameters === "" ? String(kind) : `${String(kind)}(${parameters})`;
}

const rows: string[] = [];
for (const vocabularySize of vocabularySizes) {
    for (const gamma of gammas) {
        const steps = buildSteps(vocabularySize, gamma, 8);
        for (const config of policies) {
            const policy = createPolicy(parsePolicyConfig(config), {correctionMemory: new CorrectionMemory(vocabularySize)});
            const chance = new SeededChance(1);
            let accepted = 0;
            // Warm-up so the JIT has compiled the policy before timing.
            for (let index = 0; index < 40; index++) policy.verify(steps[index % steps.length], chance);
            const perBatch: number[] = [];
            for (let batch = 0; batch < 7; batch++) {
                const iterations = Math.max(8, Math.round((40 * 32_000) / vocabularySize));
                const started = process.hrtime.bigint();
                for (let index = 0; index < iterations; index++)
                    accepted += policy.verify(steps[index % steps.length], chance).acceptedCount;
                perBatch.push(Number(process.hrtime.bigint() - started) / 1e6 / iterations);
            }
            perBatch.sort((a, b) => a - b);
            const median = perBatch[3];
            rows.push(
                `| ${vocabularySize} | ${gamma} | ${label(config)} | ${median.toFixed(4)} | ${(accepted / (7 * Math.max(8, Math.round((40 * 32_000) / vocabularySize)))).toFixed(2)} |`
            );
            process.stderr.write(`${rows[rows.length - 1]}\n`);
        }
    }
}
process.stdout.write(
    [
        `Verification cost per step (node ${process.version}, ${new Date().toISOString().slice(0, 10)})`,
        "",
        "| V | γ | policy | ms / step (median of 7) | mean accepted |",
        "|---|---|---|---|---|",
        ...rows,
        ""
    ].join("\n")
);
