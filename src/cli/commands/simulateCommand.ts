import {dirname} from "node:path";
import type {Command} from "commander";
import type {PolicyResources} from "../../policies/createPolicy.js";
import {resolveCorrectionMemory} from "../../correctionMemory/resolveCorrectionMemory.js";
import {maximumBlockWeightStates} from "../../simulate/analyticAcceptance.js";
import {enumerateStep} from "../../simulate/enumerateStep.js";
import {simulateStep, type SimulationReport} from "../../simulate/simulateStep.js";
import {parseStepInput, type StepInput} from "../../simulate/StepInput.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {integerOption} from "../parseIntegerOption.js";
import {readJsonFile} from "../readJsonFile.js";
import {writeJsonOutput} from "../writeJsonOutput.js";
import {endAtOnceOnSignals} from "../interrupts.js";

export interface SimulateOptions {
    input: string;
    samples: number;
    seed: number;
    json?: string;
    exact?: boolean;
}

/** `specgate simulate`: run one verification step N times on the user's distributions. */
export async function runSimulate(options: SimulateOptions): Promise<{report: SimulationReport & {exact?: unknown}; summary: string}> {
    await checkOutputFile(options.json, "--json");
    const input = parseStepInput(await readJsonFile(options.input));
    const resources = await loadResources(input, options.input);
    // The simulation is one synchronous loop: Ctrl-C ends the process at once (nothing is written before it ends).
    endAtOnceOnSignals();
    const report: SimulationReport & {exact?: unknown} = simulateStep(input, {samples: options.samples, seed: options.seed, resources});
    if (options.exact) {
        const exact = enumerateStep(input, {resources: await loadResources(input, options.input)});
        report.exact = {
            firstToken: Array.from(exact.firstToken),
            expectedAccepted: exact.expectedAccepted,
            firstTokenTotalVariation: exact.firstTokenTotalVariation,
            outcomes: exact.outcomes
        };
    }
    return {report, summary: formatSummary(report)};
}

async function loadResources(input: StepInput, stepPath: string): Promise<PolicyResources> {
    // A memory file without a recorded vocabulary identity is accepted here: STEP.json has no tokenizer.
    const correctionMemory = await resolveCorrectionMemory(input.policy, {size: input.vocabularySize}, dirname(stepPath));
    return correctionMemory == null ? {} : {correctionMemory};
}

function formatSummary(report: SimulationReport & {exact?: unknown}): string {
    const percent = (value: number) => `${(100 * value).toFixed(2)}%`;
    const lines = [
        `policy ${report.policy} (${report.lossless ? "lossless" : "not lossless"}), γ = ${report.gamma}, V = ${report.vocabularySize}, ${report.samples} samples, seed ${report.seed}`,
        `acceptance rate ${percent(report.acceptanceRate.overall)}; per position ${report.acceptanceRate.perPosition.map(percent).join(" ")}`,
        `mean accepted ${report.meanAccepted.toFixed(4)}, mean acceptance length ${report.meanAcceptanceLength.toFixed(4)}`,
        `emitted length histogram ${Object.entries(report.emittedLengthHistogram)
            .map(([length, count]) => `${length}:${count}`)
            .join(" ")}`,
        `first token vs target row 0: TV ${report.firstTokenVsTarget.totalVariation.toExponential(3)}, χ² ${report.firstTokenVsTarget.chiSquare.statistic.toFixed(2)} on ${report.firstTokenVsTarget.chiSquare.degreesOfFreedom} df, p = ${report.firstTokenVsTarget.chiSquare.pValue.toPrecision(3)}`
    ];
    const analytic = report.analytic;
    if (analytic != null && analytic.alphaPerPosition.length > 0)
        lines.push(`analytic α = Σ min(p, q) per position ${analytic.alphaPerPosition.map((alpha) => alpha.toFixed(4)).join(" ")}`);
    if (analytic?.acceptancePerPosition != null && analytic.expectedTokensPerStep != null)
        lines.push(
            `analytic acceptance (${analytic.rule}) per position ${analytic.acceptancePerPosition.map((alpha) => alpha.toFixed(4)).join(" ")}; expected tokens per step ${analytic.expectedTokensPerStep.toFixed(4)}`
        );
    if (analytic?.strictExpectedTokensPerStep != null) {
        const strict = analytic.strictExpectedTokensPerStep;
        const gain = analytic.expectedTokensPerStep == null ? null : analytic.expectedTokensPerStep / strict - 1;
        lines.push(
            `strict on the same step: expected tokens per step ${strict.toFixed(4)}; ` +
                (gain == null
                    ? `block's own expectation has more than ${maximumBlockWeightStates} weight values at a position: compare the sampled mean acceptance length`
                    : `block ${gain >= 0 ? "+" : ""}${(100 * gain).toFixed(2)}%`)
        );
    }
    const exact = report.exact as {expectedAccepted: number; firstTokenTotalVariation: number; outcomes: number} | undefined;
    if (exact != null)
        lines.push(
            `exact (enumerated ${exact.outcomes} outcomes): expected accepted ${exact.expectedAccepted.toFixed(6)}, TV(first token, target row 0) ${exact.firstTokenTotalVariation.toExponential(3)}`
        );
    lines.push(
        `${report.elapsedMilliseconds.toFixed(0)} ms (${((report.samples / report.elapsedMilliseconds) * 1000).toExponential(2)} steps/s)`
    );
    return lines.join("\n") + "\n";
}

export function registerSimulateCommand(program: Command): void {
    program
        .command("simulate")
        .description("run one speculative verification step N times on given distributions and report acceptance and output statistics")
        .requiredOption("--input <STEP.json>", "step file: policy, targetProbs|targetLogits, draftProbs|draftLogits, draftTokens")
        .option("--samples <N>", "number of simulated steps", integerOption(1, 1e9), 100_000)
        .option("--seed <S>", "seed of the generator (integer in [0, 2^53))", integerOption(0), 0)
        .option("--json <OUT>", 'write the full report as JSON to OUT ("-" for stdout)')
        .option("--exact", "also compute the exact output distribution by enumeration (small V and γ only)")
        .action(async (options: SimulateOptions) => {
            const {report, summary} = await runSimulate(options);
            if (options.json != null) await writeJsonOutput(options.json, report);
            if (options.json !== "-") process.stdout.write(summary);
        });
}
