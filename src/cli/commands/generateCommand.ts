import {type Command, Option} from "commander";
import type {GpuChoice} from "../../backend/gpuChoice.js";
import type {BackendChoice} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {backendOption, gpuLayersOption, gpuOption, tokenSelectionOption} from "../backendOption.js";
import {createDrafter} from "../../engine/drafters/createDrafter.js";
import {streamGeneration, type GenerationChunk, type GenerationResult} from "../../engine/generate.js";
import type {GenerationOptionsInput} from "../../engine/GenerationOptions.js";
import type {Drafter} from "../../engine/drafters/Drafter.js";
import type {DrafterSpec} from "../../engine/drafters/parseDrafterSpec.js";
import type {SamplingOptions} from "../../distributions/SamplingOptions.js";
import {parsePolicySpec, policyLabel} from "../../policies/parsePolicySpec.js";
import type {PolicyConfig} from "../../policies/policyConfigSchema.js";
import {resolveCorrectionMemory} from "../../correctionMemory/resolveCorrectionMemory.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {openCliModels} from "../openCliModels.js";
import {drafterOptionHelp, resolveCliDrafter} from "../drafterOption.js";
import {type DraftSampling, draftSamplingOption} from "../draftSamplingOption.js";
import {integerOption} from "../parseIntegerOption.js";
import {addSamplingOptions, numberOption, samplingFromCli} from "../samplingCliOptions.js";
import {writeJsonOutput} from "../writeJsonOutput.js";
import {stopStrings} from "../stopStrings.js";
import {interruptSignal, reportOnInterrupt} from "../interrupts.js";
import {compileConstraint} from "../../constraints/compileConstraint.js";
import {defaultGrammarBudget} from "../../constraints/GrammarBudget.js";
import {type CheckedSchema, checkJsonSchemaFile} from "../../constraints/jsonSchemaGrammar.js";
import {parseTreeShape, type TreeShape} from "../../engine/drafters/TreeDraftSession.js";
import {type GammaSetting, gammaLabel} from "../../engine/gammaSpec.js";
import {gammaOption, gammaOptionHelp} from "../gammaOption.js";
import {contextSizeOption} from "../contextSizeOption.js";
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
    draftSampling: DraftSampling;
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

const COMMAND_NAME = "specgate generate";

/** The flags checked (each bad one an error naming its flag), before any model loads. */
interface GenerateSettings {
    readonly policy: PolicyConfig;
    readonly drafterSpec: DrafterSpec | undefined;
    readonly sampling: SamplingOptions;
    readonly schema: CheckedSchema | undefined;
    readonly tree: TreeShape | undefined;
}

/** `specgate generate`: stream text from a target, speculatively with a draft when one is given. */
export function registerGenerateCommand(program: Command): void {
    addGenerateRunOptions(
        addSamplingOptions(
            program
                .command("generate")
                .description("generate text with a GGUF target, speculatively verified against a GGUF draft when --draft is given")
                .argument("<prompt>", "prompt text")
                .requiredOption("--target <T.gguf>", "target model")
                .option("--draft <D.gguf>", "draft model or EAGLE-3 head (omit for target-only decoding)")
                .option("--drafter <spec>", drafterOptionHelp)
                .option(
                    "--policy <spec>",
                    "verification policy, e.g. strict, block, greedy, fuzzy:js:0.4, calibrated, lossy:0.05",
                    "strict"
                )
                .option("--gamma <N|auto[:MAX]>", gammaOptionHelp, gammaOption, {gamma: 4})
                .addOption(
                    new Option("--draft-length <mode>", "fixed | schedule (HF +2/−1) | auto (as --gamma auto, at most 2·γ)")
                        .choices(["fixed", "schedule", "auto"])
                        .default("fixed")
                )
                .option(
                    "--min-confidence <P>",
                    "stop drafting below this draft top probability (0 = off)",
                    numberOption("min-confidence"),
                    0
                )
                .addOption(draftSamplingOption("sample | greedy").default("sample"))
                .option(
                    "--tree <WxD>",
                    "token trees from the draft model or EAGLE-3 head instead of a chain: WIDTH children of the last token, each DEPTH deep, verified in one target call (strict or greedy)"
                )
        )
    ).action(runGenerateAction);
}

/** Budget, stop strings, seed, where the models run, and the outputs. */
function addGenerateRunOptions(command: Command): Command {
    return command
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
        );
}

async function runGenerateAction(prompt: string, options: GenerateCliOptions): Promise<void> {
    const settings = await parseGenerateOptions(options);
    const models = await openCliModels(COMMAND_NAME, options, {
        threads: options.threads,
        contextSize: options.contextSize,
        backend: options.backend,
        gpu: options.gpu,
        gpuLayers: options.gpuLayers,
        deviceSelection: options.tokenSelection
    });
    let constraint: TokenConstraint | undefined;
    try {
        const correctionMemory = await resolveCorrectionMemory(settings.policy, {
            size: models.target.vocabularySize,
            identity: models.target.vocabularyIdentity()
        });
        const drafter = settings.drafterSpec != null ? createDrafter(settings.drafterSpec, models.draft) : undefined;
        // Off the main thread and within its budget, as serve compiles response_format: a schema
        // too costly to compile fails with the same message, and Ctrl-C stops the wait.
        constraint =
            settings.schema !== undefined
                ? await compileConstraint(
                      models.target,
                      settings.schema,
                      {...defaultGrammarBudget, timeoutMs: options.grammarTimeoutMs},
                      {signal: interruptSignal()}
                  )
                : undefined;
        const stream = streamGeneration(models.target, models.draft, prompt, generationOptions(options, settings), {
            correctionMemory,
            drafter,
            constraint,
            signal: interruptSignal()
        });
        const result = await printStream(stream, options);
        await renderGenerate(options, settings, {result, target: models.target, drafter, constrained: constraint !== undefined});
    } finally {
        constraint?.dispose();
        await models.draft?.dispose();
        await models.target.dispose();
    }
}

/** The flags checked in order, --json's path included. */
async function parseGenerateOptions(options: GenerateCliOptions): Promise<GenerateSettings> {
    const policy = parsePolicySpec(options.policy);
    const drafterSpec = resolveCliDrafter(options.drafter, options.draft);
    const sampling = samplingFromCli(options);
    await checkOutputFile(options.json, "--json");
    const schema = options.jsonSchema != null ? checkJsonSchemaFile(options.jsonSchema) : undefined;
    const tree = options.tree != null ? parseTreeShape(options.tree, "--tree") : undefined;
    return {policy, drafterSpec, sampling, schema, tree};
}

function generationOptions(options: GenerateCliOptions, settings: GenerateSettings): GenerationOptionsInput {
    return {
        policy: settings.policy,
        gamma: options.gamma.gamma,
        draftLength: options.gamma.draftLength ?? options.draftLength,
        ...(options.gamma.maxGamma !== undefined ? {maxGamma: options.gamma.maxGamma} : {}),
        minConfidence: options.minConfidence,
        draftSampling: options.draftSampling,
        ...(settings.tree !== undefined ? {tree: settings.tree} : {}),
        sampling: settings.sampling,
        maxTokens: options.maxTokens,
        stop: stopStrings(options.stop),
        seed: options.seed
    };
}

/** Writes the text as it comes (unless --json -) and returns the result; Ctrl-C stops the stream at its next step and says how far it got. */
async function printStream(
    stream: AsyncGenerator<GenerationChunk, GenerationResult>,
    options: GenerateCliOptions
): Promise<GenerationResult> {
    const printText = options.json !== "-";
    let generated = 0;
    const started = performance.now();
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
    if (printText) process.stdout.write("\n");
    return next.value;
}

/** What the generation produced, for the summary lines and the JSON. */
interface GenerateOutcome {
    readonly result: GenerationResult;
    readonly target: ModelBackend;
    readonly drafter: Drafter | undefined;
    readonly constrained: boolean;
}

/** The summary line, a context stop, the grammar's cost (stderr) and the JSON. */
async function renderGenerate(options: GenerateCliOptions, settings: GenerateSettings, outcome: GenerateOutcome): Promise<void> {
    const {result, target, drafter} = outcome;
    const telemetry = result.telemetry;
    const finish = generateFinish(result, options.maxTokens);
    process.stderr.write(summaryLine(options, settings, outcome, finish));
    if (finish === "context")
        process.stderr.write(
            `${COMMAND_NAME}: stopped at the ${target.contextSize}-token context after ${result.tokens.length} of --max-tokens ${options.maxTokens} ` +
                `(the prompt has ${result.promptTokens}); raise --context-size or lower --max-tokens\n`
        );
    // The grammar's cost on a line of its own: masks run on a worker, and their time is not the model's.
    if (outcome.constrained)
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
            policy: settings.policy,
            gamma: options.gamma.draftLength === "auto" ? gammaLabel(options.gamma).slice(2) : options.gamma.gamma,
            sampling: settings.sampling,
            telemetry: telemetry.toJSON(),
            engine: {
                backend: target.backendKind ?? null,
                build: target.nativeBuild ?? null,
                device: target.device ?? null,
                tokenSelection: target.tokenSelection ?? null
            }
        });
}

/** `[drafter, policy, γ] N tokens, tok/s, finish…`: one stderr line. */
function summaryLine(options: GenerateCliOptions, settings: GenerateSettings, {result, drafter}: GenerateOutcome, finish: string): string {
    const telemetry = result.telemetry;
    const setup =
        drafter != null
            ? `${drafter.label}, ${policyLabel(settings.policy)}, ${settings.tree !== undefined ? `tree ${options.tree}` : gammaLabel(options.gamma)}`
            : "target-only";
    const draftLengths =
        telemetry.draftLengths.skipped + telemetry.draftLengths.probes > 0 || options.gamma.draftLength === "auto"
            ? `, mean draft length ${telemetry.draftLengths.mean.toFixed(2)} (${telemetry.draftLengths.skipped} steps without a draft)`
            : "";
    const acceptance =
        drafter != null
            ? `, acceptance ${(100 * telemetry.acceptanceRate).toFixed(1)}%, mean acceptance length ${telemetry.meanAcceptanceLength.toFixed(2)}` +
              draftLengths
            : "";
    return `[${setup}] ${result.tokens.length} tokens, ${telemetry.tokensPerSecond.toFixed(1)} tok/s, finish: ${finish}${acceptance}\n`;
}
