import type {Command} from "commander";
import type {GpuChoice} from "../../backend/gpuChoice.js";
import {loadModelBackend, type BackendChoice} from "../../backend/loadModelBackend.js";
import {backendOption, gpuLayersOption, gpuOption, tokenSelectionOption} from "../backendOption.js";
import {createDrafter} from "../../engine/drafters/createDrafter.js";
import {streamGeneration, type GenerationResult} from "../../engine/generate.js";
import {parsePolicySpec, policyLabel} from "../../policies/parsePolicySpec.js";
import {resolveCorrectionMemory} from "../../calibration/resolveCorrectionMemory.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {drafterOptionHelp, resolveCliDrafter} from "../drafterOption.js";
import {integerOption} from "../parseIntegerOption.js";
import {addSamplingOptions, numberOption, samplingFromCli} from "../samplingCliOptions.js";
import {writeJsonOutput} from "../writeJsonOutput.js";
import {stopStrings} from "../stopStrings.js";
import {interruptSignal, reportOnInterrupt} from "../interrupts.js";
import {compileConstraint} from "../../constraints/compileConstraint.js";
import {defaultGrammarBudget} from "../../constraints/GrammarBudget.js";
import {checkJsonSchemaFile} from "../../constraints/jsonSchemaGrammar.js";
import {parseTreeShape} from "../../engine/drafters/TreeDraftSession.js";
import {type GammaSetting, gammaLabel} from "../../engine/gammaSpec.js";
import {gammaOption, gammaOptionHelp} from "../gammaOption.js";
import {contextSizeOption, trainedContextWarning} from "../contextSizeOption.js";
import {generateFinish} from "../generateFinish.js";
import type {TokenConstraint} from "../../backend/TokenConstraint.js";

interface GenerateCliOptions {
    jsonSchema?: string;
    grammarTimeoutMs: number;
    target: string;
    draft?: string;
    drafter?: string;
    policy: string;
    gamma: GammaSetting;
    tree?: string;
    draftLength: "fixed" | "schedule" | "auto";
    minConfidence: number;
    draftSampling: "sample" | "greedy";
    temperature: number;
    topK: number;
    topP: number;
    minP: number;
    maxTokens: number;
    stop: string[];
    seed: number;
    threads: number;
    backend?: BackendChoice;
    gpu?: GpuChoice;
    gpuLayers?: number;
    /** --token-selection: true device, false host, undefined auto. */
    tokenSelection?: boolean;
    contextSize?: number;
    json?: string;
}

/** `specgate generate`: stream text from a target, speculatively with a draft when one is given. */
export function registerGenerateCommand(program: Command): void {
    addSamplingOptions(
        program
            .command("generate")
            .description("generate text with a GGUF target, speculatively verified against a GGUF draft when --draft is given")
            .argument("<prompt>", "prompt text")
            .requiredOption("--target <T.gguf>", "target model")
            .option("--draft <D.gguf>", "draft model (omit for target-only decoding)")
            .option("--drafter <spec>", drafterOptionHelp)
            .option("--policy <spec>", "verification policy, e.g. strict, block, greedy, fuzzy:js:0.4, calibrated, lossy:0.05", "strict")
            .option("--gamma <N|auto[:MAX]>", gammaOptionHelp, gammaOption, {gamma: 4})
            .option("--draft-length <mode>", "fixed | schedule (HF +2/−1) | auto (as --gamma auto, at most 2·γ)", "fixed")
            .option("--min-confidence <P>", "stop drafting below this draft top probability (0 = off)", numberOption("min-confidence"), 0)
            .option("--draft-sampling <mode>", "sample | greedy", "sample")
            .option(
                "--tree <WxD>",
                "token trees from the draft model instead of a chain: WIDTH children of the last token, each DEPTH deep, verified in one target call (strict or greedy)"
            )
    )
        .option("--max-tokens <N>", "tokens to generate at most", integerOption(1), 128)
        .option("--stop <S...>", "stop strings (the text is cut before them; \\n and \\t decoded)", [])
        .option("--seed <S>", "seed of the sampler and of sampled drafts (the same seed gives the same text)", integerOption(0), 0)
        .option(
            "--threads <N>",
            "CPU threads per model evaluation; raise it for large models (node-llama-cpp's own default, every core, slows a small model down on a busy machine)",
            integerOption(1, 256),
            1
        )
        .addOption(backendOption())
        .addOption(gpuOption())
        .addOption(gpuLayersOption())
        .addOption(tokenSelectionOption())
        .addOption(
            contextSizeOption(
                "context tokens per sequence (default: the model's training context, at most 4096); a prompt that leaves no room " +
                    "for a generated token is refused, and generation that reaches the context stops there with finish: context"
            )
        )
        .option("--json <OUT>", 'write the result and telemetry as JSON to OUT ("-" for stdout)')
        .option("--json-schema <FILE>", "constrain the output to JSON matching this JSON Schema (llama.cpp's converter; native backend)")
        .option(
            "--grammar-timeout-ms <MS>",
            "with --json-schema: converting the schema and building its grammar (off the main thread) must end within this",
            integerOption(1, 600_000),
            defaultGrammarBudget.timeoutMs
        )
        .action(async (prompt: string, options: GenerateCliOptions) => {
            const policy = parsePolicySpec(options.policy);
            const drafterSpec = resolveCliDrafter(options.drafter, options.draft);
            const sampling = samplingFromCli(options);
            await checkOutputFile(options.json, "--json");
            const schema = options.jsonSchema != null ? checkJsonSchemaFile(options.jsonSchema) : undefined;
            const tree = options.tree != null ? parseTreeShape(options.tree, "--tree") : undefined;
            const loadOptions = {
                threads: options.threads,
                contextSize: options.contextSize,
                backend: options.backend,
                gpu: options.gpu,
                gpuLayers: options.gpuLayers,
                deviceSelection: options.tokenSelection
            };
            const target = await loadModelBackend(options.target, loadOptions);
            const draft = options.draft != null ? await loadModelBackend(options.draft, loadOptions) : undefined;
            // After the loads, so a context the machine cannot hold is the one line that is printed.
            for (const path of [options.target, options.draft])
                if (path != null) process.stderr.write(trainedContextWarning("specgate generate", path, options.contextSize));
            let constraint: TokenConstraint | undefined;
            try {
                const correctionMemory = await resolveCorrectionMemory(policy, {
                    size: target.vocabularySize,
                    identity: target.vocabularyIdentity()
                });
                const drafter = drafterSpec != null ? createDrafter(drafterSpec, draft) : undefined;
                // Off the main thread and within its budget, as serve compiles response_format: a schema
                // too costly to compile fails with the same message, and Ctrl-C stops the wait.
                constraint =
                    schema !== undefined
                        ? await compileConstraint(
                              target,
                              schema,
                              {...defaultGrammarBudget, timeoutMs: options.grammarTimeoutMs},
                              {signal: interruptSignal()}
                          )
                        : undefined;
                const stream = streamGeneration(
                    target,
                    draft,
                    prompt,
                    {
                        policy,
                        gamma: options.gamma.gamma,
                        draftLength: options.gamma.draftLength ?? options.draftLength,
                        ...(options.gamma.maxGamma !== undefined ? {maxGamma: options.gamma.maxGamma} : {}),
                        minConfidence: options.minConfidence,
                        draftSampling: options.draftSampling,
                        ...(tree !== undefined ? {tree} : {}),
                        sampling,
                        maxTokens: options.maxTokens,
                        stop: stopStrings(options.stop),
                        seed: options.seed
                    },
                    {correctionMemory, drafter, constraint, signal: interruptSignal()}
                );
                const printText = options.json !== "-";
                let generated = 0;
                const started = performance.now();
                // Ctrl-C stops the stream at its next step and says how far it got (src/cli/interrupts.ts).
                reportOnInterrupt(
                    () =>
                        `${generated} tokens generated in ${((performance.now() - started) / 1000).toFixed(1)} s${options.json != null && options.json !== "-" ? `, ${options.json} not written` : ""}`
                );
                let next = await stream.next();
                while (!next.done) {
                    generated += next.value.tokens.length;
                    if (printText) process.stdout.write(next.value.text);
                    next = await stream.next();
                }
                const result: GenerationResult = next.value;
                if (printText) process.stdout.write("\n");
                const telemetry = result.telemetry;
                const finish = generateFinish(result, options.maxTokens);
                process.stderr.write(
                    `[${drafter != null ? `${drafter.label}, ${policyLabel(policy)}, ${tree !== undefined ? `tree ${options.tree}` : gammaLabel(options.gamma)}` : "target-only"}] ${result.tokens.length} tokens, ` +
                        `${telemetry.tokensPerSecond.toFixed(1)} tok/s, finish: ${finish}` +
                        (drafter != null
                            ? `, acceptance ${(100 * telemetry.acceptanceRate).toFixed(1)}%, mean acceptance length ${telemetry.meanAcceptanceLength.toFixed(2)}` +
                              (telemetry.draftLengths.skipped + telemetry.draftLengths.probes > 0 || options.gamma.draftLength === "auto"
                                  ? `, mean draft length ${telemetry.draftLengths.mean.toFixed(2)} (${telemetry.draftLengths.skipped} steps without a draft)`
                                  : "")
                            : "") +
                        "\n"
                );
                if (finish === "context")
                    process.stderr.write(
                        `specgate generate: stopped at the ${target.contextSize}-token context after ${result.tokens.length} of --max-tokens ${options.maxTokens} ` +
                            `(the prompt has ${result.promptTokens}); raise --context-size or lower --max-tokens\n`
                    );
                // The grammar's cost on a line of its own: masks run on a worker, and their time is not the model's.
                if (constraint !== undefined)
                    process.stderr.write(
                        `[grammar] ${telemetry.grammarMasks} masked rows, ${telemetry.time.grammar.toFixed(1)} ms, ` +
                            `${telemetry.grammarMillisecondsPerToken.toFixed(3)} ms per token\n`
                    );
                if (options.json != null)
                    await writeJsonOutput(options.json, {
                        text: result.text,
                        tokens: result.tokens,
                        finishReason: finish,
                        promptTokens: result.promptTokens,
                        drafter: drafter?.label ?? null,
                        policy,
                        gamma: options.gamma.draftLength === "auto" ? gammaLabel(options.gamma).slice(2) : options.gamma.gamma,
                        sampling,
                        telemetry: telemetry.toJSON(),
                        engine: {
                            backend: target.backendKind ?? null,
                            build: target.nativeBuild ?? null,
                            device: target.device ?? null,
                            tokenSelection: target.tokenSelection ?? null
                        }
                    });
            } finally {
                constraint?.dispose();
                await draft?.dispose();
                await target.dispose();
            }
        });
}
