import {type Command, Option} from "commander";
import type {GpuChoice} from "../../backend/gpuChoice.js";
import type {BackendChoice, LoadModelBackendOptions} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {backendOption, gpuLayersOption, gpuOption, tokenSelectionOption} from "../backendOption.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import {InvalidInputError} from "../../errors.js";
import {parsePolicySpec} from "../../policies/parsePolicySpec.js";
import {loadCorrectionMemory} from "../../correctionMemory/correctionMemoryFile.js";
import {defaultRequestDrafters, defaultRequestPolicies, RequestPermissions} from "../../serve/RequestPermissions.js";
import {decodePathLabel, type ResolvedDecodePath} from "../../serve/resolveDecodePath.js";
import type {ChatTemplate} from "../../chat/ChatTemplate.js";
import {defaultModelName} from "../../serve/defaultModelName.js";
import {ggufChatTemplate} from "../../chat/ggufChatTemplate.js";
import {type RunningServeServer, type ServeServerOptions, startServeServer} from "../../serve/startServeServer.js";
import {HostAllowList, isLoopbackAddress} from "../../serve/accessControl.js";
import {drafterOptionHelp, resolveCliDrafter} from "../drafterOption.js";
import {type DraftSampling, draftSamplingOption} from "../draftSamplingOption.js";
import {parseTreeShape} from "../../engine/drafters/TreeDraftSession.js";
import {eagle3TreeBranches, maxEagle3TreeBranches} from "../../engine/drafters/Eagle3TreeSession.js";
import {readModelHeader} from "../../backend/readModelHeader.js";
import {contextSizeOption} from "../contextSizeOption.js";
import {openCliModels} from "../openCliModels.js";
import {integerOption} from "../parseIntegerOption.js";
import type {GammaSetting} from "../../engine/gammaSpec.js";
import {gammaOption, gammaOptionHelp} from "../gammaOption.js";
import {addSamplingOptions, numberOption, samplingFromCli} from "../samplingCliOptions.js";
import {handleSignalsItself} from "../interrupts.js";
import {defaultGrammarBudget} from "../../constraints/GrammarBudget.js";

interface ServeCliOptions {
    target: string;
    draft?: string;
    drafter?: string;
    policy: string;
    gamma: GammaSetting;
    tree?: string;
    draftSampling: DraftSampling;
    minConfidence: number;
    temperature: number;
    topK: number;
    topP: number;
    minP: number;
    host: string;
    port: number;
    maxConcurrency: number;
    batching: "on" | "off";
    stepTokens: number;
    /** Absent: unified up to unifiedUpTo generations (unifiedKvCacheFor). */
    kvUnified?: boolean;
    maxQueue: number;
    /** Absent: defaultCacheRamBytes. */
    cacheRam?: number;
    maxBodyBytes: number;
    maxPromptBytesPerToken: number;
    drainTimeout: number;
    grammarTimeoutMs: number;
    grammarComputeMs: number;
    grammarJobs: number;
    threads: number;
    backend?: BackendChoice;
    contextSize?: number;
    modelName?: string;
    chatTemplate: "auto" | "gguf" | "default";
    apiKey: string[];
    metricsApiKey?: string;
    allowedHosts?: string;
    corsOrigin: string[];
    requestPolicies: string;
    requestDrafters: string;
    shareDrafterCache: boolean;
    learnFromRequests: boolean;
    correctionMemory?: string;
    gpu?: GpuChoice;
    gpuLayers?: number;
    /** --token-selection: true device, false host, undefined auto. */
    tokenSelection?: boolean;
}

export interface ServeCommandHooks {
    /** Called once the server listens; `stop` drains it, closes it and unloads the models (what SIGTERM does). */
    onListening?(server: RunningServeServer, stop: () => Promise<void>): void;
}

/**
 * `specgate serve`: the OpenAI-compatible server (src/serve). The command resolves once the server
 * has stopped: on SIGINT/SIGTERM it drains in-flight requests (up to --drain-timeout seconds), closes
 * the port and unloads the models.
 */
export function registerServeCommand(program: Command, hooks: ServeCommandHooks = {}): void {
    const command = program
        .command("serve")
        .description("serve a GGUF target (speculatively with a GGUF draft) behind an OpenAI-compatible HTTP API with Prometheus metrics");
    addAccessFlags(addGrammarFlags(addCapacityFlags(addSamplingOptions(addModelFlags(command))))).action((options: ServeCliOptions) =>
        runServe(options, hooks)
    );
}

/** The models and how they speculate by default (requests may override most of it). */
function addModelFlags(command: Command): Command {
    return command
        .requiredOption("--target <T.gguf>", "target model")
        .option("--draft <D.gguf>", "draft model or EAGLE-3 head (omit to serve target-only or with a drafter that needs none)")
        .option(
            "--drafter <spec>",
            `default ${drafterOptionHelp} (requests may name another in speculative.drafter; with --draft, model is available to them)`
        )
        .option("--policy <spec>", "default verification policy, e.g. strict, block, fuzzy:js:0.4 (requests may override it)", "strict")
        .option("--gamma <N|auto[:MAX]>", `default ${gammaOptionHelp}`, gammaOption, {gamma: 4})
        .addOption(draftSamplingOption("sample | greedy").default("sample"))
        .option("--min-confidence <P>", "stop drafting below this draft top probability (0 = off)", numberOption("min-confidence"), 0)
        .option(
            "--tree <WxD>",
            'token trees from the draft model or EAGLE-3 head: WIDTH children of the last token, each DEPTH tokens deep, verified in one call (strict or greedy; requests may ask for a narrower tree, or "off", in speculative.tree)'
        );
}

/** Where the server listens, how many generations it runs and queues, and what one request may hold. */
function addCapacityFlags(command: Command): Command {
    return command
        .option("--host <HOST>", "address to listen on (set --api-key before listening beyond loopback)", "127.0.0.1")
        .option("--port <PORT>", "port (0 = any free port)", integerOption(0, 65535), 8000)
        .option("--max-concurrency <N>", "generations decoded at once", integerOption(1, 1024), 4)
        .addOption(
            new Option(
                "--batching <on|off>",
                "native backend: decode the concurrent generations together, one llama_decode per step for all (continuous batching); off: one context each"
            )
                .choices(["on", "off"])
                .default("on")
        )
        .option(
            "--step-tokens <N>",
            "with batching: most tokens one step decodes; longer prompts are decoded in chunks between other generations' steps",
            integerOption(1, 65536),
            512
        )
        .option(
            "--kv-unified",
            "with batching: one KV buffer for all generations (decodes steps that mix lengths in one pass; the default up to 4 generations, as llama-server's default slots)"
        )
        .option(
            "--no-kv-unified",
            "with batching: one KV stream per generation (faster attention at many streams; the default above 4 generations)"
        )
        .option("--max-queue <N>", "requests waiting for a slot before 429", integerOption(0, 100_000), 64)
        .option(
            "--cache-ram <MiB>",
            "host memory for KV caches saved from slots given to other prompts, restored for prompts sharing a prefix (llama-server's --cache-ram; 0 keeps none); default: the least of 8192, an eighth of the machine's memory and 64 of the target's full-context KV caches",
            integerOption(0, 1_048_576)
        )
        .option("--max-body-bytes <N>", "largest request body", integerOption(1024), 1024 * 1024)
        .option(
            "--max-prompt-bytes-per-token <N>",
            "refuse prompt text, before tokenizing it, beyond context size × N bytes (or × the vocabulary's longest token, if shorter)",
            integerOption(1, 1024),
            16
        )
        .option("--drain-timeout <SECONDS>", "on shutdown, abort generations still running after this long", integerOption(0), 30)
        .option(
            "--threads <N>",
            "CPU threads per model evaluation; raise it for large models (node-llama-cpp's own default, every core, slows a small model down on a busy machine)",
            integerOption(1, 256),
            1
        )
        .addOption(backendOption())
        .addOption(
            contextSizeOption(
                "context tokens per sequence (default: the model's training context, at most 4096); a prompt and max_tokens " +
                    "that do not fit together are refused (400 context_length_exceeded)"
            )
        );
}

/** What one structured-output request (response_format) may spend on its grammar (GrammarBudget). */
function addGrammarFlags(command: Command): Command {
    return command
        .option(
            "--grammar-timeout-ms <MS>",
            "converting a response_format schema and building its grammar (off the event loop) must end within this, or the request gets 400 grammar_too_complex",
            integerOption(1, 600_000),
            defaultGrammarBudget.timeoutMs
        )
        .option(
            "--grammar-compute-ms <MS>",
            "milliseconds of grammar masks (worker threads) one request may spend over its generation; past it the request ends with grammar_too_complex",
            integerOption(0, 86_400_000),
            defaultGrammarBudget.computeMs
        )
        .option(
            "--grammar-jobs <N>",
            "schema conversions and grammar builds running at once, abandoned ones included; others wait, and get 429 if none frees within --grammar-timeout-ms",
            integerOption(1, 1024),
            defaultGrammarBudget.maxJobs
        );
}

/** Who may call the server and what their requests may choose. */
function addAccessFlags(command: Command): Command {
    return command
        .option(
            "--model-name <NAME>",
            "model id clients send (default: the target GGUF's general.name; without one, the folder of a model.gguf, else the file name without .gguf)"
        )
        .option(
            "--api-key <KEY>",
            'require "Authorization: Bearer KEY" on every route but /health (repeatable; also $SPECGATE_API_KEY, comma-separated)',
            collect,
            []
        )
        .option(
            "--metrics-api-key <KEY>",
            "only this key reads /metrics (Prometheus' bearer token; no --api-key does), which then adds per-key series (also $SPECGATE_METRICS_API_KEY)"
        )
        .option(
            "--allowed-hosts <LIST>",
            "comma-separated Host header values answered (name or name:port; * = any); default on loopback: localhost, 127.0.0.1, [::1] with the port, elsewhere any"
        )
        .option("--cors-origin <ORIGIN>", "let browser pages from this origin call the API (repeatable; default: no CORS)", collect, [])
        .addOption(
            new Option(
                "--chat-template <auto|gguf|default>",
                "chat prompt format: the GGUF's own template when it has one (auto), always it (gguf), or the plain default"
            )
                .choices(["auto", "gguf", "default"])
                .default("auto")
        )
        .option(
            "--request-policies <LIST>",
            "policy kinds requests may name in speculative.policy (comma-separated, all or none; --policy is always allowed)",
            defaultRequestPolicies.join(",")
        )
        .option(
            "--request-drafters <LIST>",
            "drafter kinds requests may name in speculative.drafter (comma-separated, all or none; --drafter is always allowed)",
            defaultRequestDrafters.join(",")
        )
        .option(
            "--share-drafter-cache",
            "one suffix cache for every API key instead of one per key (a key's drafts then come from other keys' outputs)",
            false
        )
        .option(
            "--learn-from-requests",
            "calibrated requests update a correction memory kept per API key (otherwise their updates end with the request)",
            false
        )
        .option("--correction-memory <FILE>", "the correction memory calibrated requests start from (specgate calibrate / ocm writes one)")
        .addOption(gpuOption())
        .addOption(gpuLayersOption())
        .addOption(tokenSelectionOption());
}

/** Loads the models, serves until SIGINT/SIGTERM, then drains and unloads them. */
async function runServe(options: ServeCliOptions, hooks: ServeCommandHooks): Promise<void> {
    const startOptions = serveStartOptions(options);
    const loadOptions = serveLoadOptions(options);
    const {target, draft} = await openCliModels("specgate serve", options, loadOptions);
    let server: RunningServeServer;
    try {
        const correctionMemory =
            options.correctionMemory !== undefined
                ? await loadCorrectionMemory(options.correctionMemory, target.vocabularyIdentity())
                : undefined;
        server = await startServeServer({
            ...startOptions,
            target,
            draft,
            correctionMemory,
            chatTemplate: chooseChatTemplate(target, options.target, options.chatTemplate)
        });
    } catch (error) {
        await draft?.dispose();
        await target.dispose();
        throw error;
    }
    const stop = stopOnSignals(server, () => [draft, target], options.drainTimeout);
    await printBanner(server, options);
    hooks.onListening?.(server, stop);
    await new Promise<void>((resolve) => server.server.once("close", resolve));
    await stop();
}

/** Everything the server takes from the command line, checked before any model loads. */
function serveStartOptions(options: ServeCliOptions): Omit<ServeServerOptions, "target" | "draft"> {
    const policy = parsePolicySpec(options.policy);
    // --draft beside a drafter that does not use it is allowed here: requests may still ask for `model`.
    const drafter = resolveCliDrafter(options.drafter, options.draft, "--drafter", true);
    return {
        modelName: options.modelName ?? defaultModelName(options.target),
        modelFiles: {target: options.target, draft: options.draft},
        speculative: {
            ...(drafter != null ? {drafter} : {}),
            policy,
            gamma: options.gamma.gamma,
            ...(options.gamma.draftLength !== undefined ? {draftLength: options.gamma.draftLength, maxGamma: options.gamma.maxGamma} : {}),
            draftSampling: options.draftSampling,
            minConfidence: options.minConfidence,
            ...(options.tree !== undefined ? {tree: parseTreeShape(options.tree, "--tree")} : {})
        },
        samplerDefaults: samplingFromCli(options),
        host: options.host,
        port: options.port,
        maxConcurrency: options.maxConcurrency,
        maxQueue: options.maxQueue,
        ...(options.cacheRam !== undefined ? {promptCacheBytes: options.cacheRam * 1024 ** 2} : {}),
        maxBodyBytes: options.maxBodyBytes,
        maxPromptBytesPerToken: options.maxPromptBytesPerToken,
        processMetrics: true,
        apiKeys: apiKeysFrom(options.apiKey, process.env.SPECGATE_API_KEY),
        metricsApiKey: metricsApiKeyFrom(options.metricsApiKey, process.env.SPECGATE_METRICS_API_KEY),
        ...(options.allowedHosts !== undefined ? {allowedHosts: new HostAllowList(listOption(options.allowedHosts))} : {}),
        corsOrigins: options.corsOrigin.flatMap(listOption),
        requestPolicies: RequestPermissions.parsePolicies(options.requestPolicies),
        requestDrafters: RequestPermissions.parseDrafters(options.requestDrafters),
        shareDrafterCache: options.shareDrafterCache,
        learnFromRequests: options.learnFromRequests,
        grammarBudget: {timeoutMs: options.grammarTimeoutMs, computeMs: options.grammarComputeMs, maxJobs: options.grammarJobs}
    };
}

/** Up to this many batched generations, the KV cache is one buffer unless --no-kv-unified says otherwise. */
const unifiedUpTo = 4;

/**
 * The KV layout of the batched context: --kv-unified / --no-kv-unified, else unified up to 4
 * generations (steps of few sequences mix lengths often, and one buffer decodes them in one pass) and
 * separate above (where attention over every generation's cells costs more than the mixed lengths);
 * the measurements: BENCHMARKS.md, "specgate serve against llama-server".
 */
function unifiedKvCacheFor(options: ServeCliOptions): boolean {
    return options.kvUnified ?? options.maxConcurrency <= unifiedUpTo;
}

/** How both models load: batched over --max-concurrency sequences unless --batching off, on --gpu. */
function serveLoadOptions(options: ServeCliOptions): LoadModelBackendOptions {
    return {
        // Only tiny-model calls run inline: the event loop keeps serving other requests while a worker decodes.
        threads: options.threads,
        contextSize: options.contextSize,
        backend: options.backend,
        inlineBelowMilliseconds: 1,
        batchedSequences: options.batching === "on" ? options.maxConcurrency : 1,
        stepTokens: options.stepTokens,
        unifiedKvCache: unifiedKvCacheFor(options),
        treeBranches: treeBranches(options),
        gpu: options.gpu,
        gpuLayers: options.gpuLayers,
        deviceSelection: options.tokenSelection
    };
}

/**
 * Sequence ids each batched sequence takes for --tree: its width, or, when --draft is an EAGLE-3 head
 * (whose trees are a spine with leaf siblings), 1 + (width − 1) × depth.
 */
function treeBranches(options: ServeCliOptions): number | undefined {
    if (options.tree === undefined) return undefined;
    const shape = parseTreeShape(options.tree, "--tree");
    if (options.draft === undefined || !isEagle3Head(options.draft)) return shape.width;
    const branches = eagle3TreeBranches(shape);
    if (branches > maxEagle3TreeBranches)
        throw new InvalidInputError(
            `an EAGLE-3 head's tree takes 1 + (width − 1) × depth = ${branches} sequence ids, more than ${maxEagle3TreeBranches}`,
            "--tree"
        );
    return branches;
}

/** Whether the GGUF at `path` is an EAGLE-3 head (one that cannot be read is left to the load to report). */
function isEagle3Head(path: string): boolean {
    try {
        return readModelHeader(path).eagle3 !== undefined;
    } catch {
        return false;
    }
}

/** SIGINT/SIGTERM drain the server, close it and unload the models; the returned stop does the same once. */
function stopOnSignals(
    server: RunningServeServer,
    models: () => ReadonlyArray<ModelBackend | undefined>,
    drainTimeoutSeconds: number
): () => Promise<void> {
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
        stopping ??= (async () => {
            process.off("SIGINT", onSignal);
            process.off("SIGTERM", onSignal);
            try {
                await server.close(drainTimeoutSeconds * 1000);
            } finally {
                for (const model of models()) await model?.dispose();
            }
        })();
        return stopping;
    };
    const onSignal = (signal: NodeJS.Signals): void => {
        process.stderr.write(
            `specgate serve: ${signal}, draining ${server.serveApp.state.slots.running + server.serveApp.state.slots.waiting} requests\n`
        );
        void stop();
    };
    // serve drains instead of stopping within a second as other commands do (src/cli/interrupts.ts).
    handleSignalsItself();
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    return stop;
}

/** What the server runs with, on stderr: address, decode path, template, batching, what requests may choose, keys. */
async function printBanner(server: RunningServeServer, options: ServeCliOptions): Promise<void> {
    const state = server.serveApp.state;
    const target = state.target;
    const defaults = state.speculativeDefaults;
    const defaultPath: ResolvedDecodePath =
        defaults.drafter != null && options.gamma.gamma > 0
            ? {...defaults, mode: "speculative", drafter: defaults.drafter}
            : {mode: "target_only"};
    const write = (line: string): boolean => process.stderr.write(`specgate serve: ${line}\n`);
    write(
        `${state.modelName} on ${server.url}/v1 (${decodePathLabel(defaultPath)}, max concurrency ${options.maxConcurrency}, queue ${options.maxQueue}, ` +
            `fingerprint ${await state.fingerprints.for(defaultPath)})`
    );
    write(`chat template: ${state.chatTemplate.name}`);
    write(
        (target.batchedSequences ?? 1) > 1
            ? `continuous batching: up to ${target.batchedSequences} generations per llama_decode, ${options.stepTokens} tokens per step, ${unifiedKvCacheFor(options) ? "one unified KV buffer" : "one KV stream per generation"}`
            : options.batching === "on"
              ? `no batching on the ${target.backendKind ?? "this"} backend (native only): each generation decodes on its own context`
              : "batching off: each generation decodes on its own context"
    );
    write(
        `requests may choose policies ${[...state.permissions.policies].join(", ") || "(none)"} and drafters ${[...state.permissions.drafters].join(", ") || "(none)"}; ` +
            `drafter caches ${options.shareDrafterCache ? "shared by every API key" : "kept per API key"}; ` +
            `correction memory ${options.learnFromRequests ? "learns per API key" : "not changed by requests"}`
    );
    const keyCount = apiKeysFrom(options.apiKey, process.env.SPECGATE_API_KEY).length;
    write(keyCount === 0 ? "no API key required" : `API key required (${keyCount} accepted)`);
    write(
        `prompt cache: up to ${(state.promptCache.savedLimitBytes / 1024 ** 2).toFixed(1)} MiB of saved KV (--cache-ram); ` +
            (state.metrics.tenantSeries
                ? "/metrics read with the metrics key only, with per-key series"
                : "/metrics without per-key series")
    );
    if (keyCount === 0 && !isLoopbackAddress(options.host))
        write(`warning: listening on ${options.host} without --api-key; anyone who can reach the port can use it`);
}

function collect(value: string, previous: string[]): string[] {
    return [...previous, value];
}

function listOption(text: string): string[] {
    return text
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== "");
}

/** --api-key values and $SPECGATE_API_KEY's comma-separated keys, together. */
function apiKeysFrom(cliKeys: readonly string[], environment: string | undefined): string[] {
    return [...cliKeys, ...listOption(environment ?? "")];
}

/** --metrics-api-key, else $SPECGATE_METRICS_API_KEY (kept out of `ps`), else none. */
function metricsApiKeyFrom(cliKey: string | undefined, environment: string | undefined): string | undefined {
    return cliKey ?? (environment !== undefined && environment.trim() !== "" ? environment.trim() : undefined);
}

/**
 * The chat template to serve: the target GGUF's `tokenizer.chat_template` (with its BOS/EOS token
 * texts) when present and not overridden, else the documented default (undefined here).
 */
function chooseChatTemplate(target: ModelBackend, path: string, choice: ServeCliOptions["chatTemplate"]): ChatTemplate | undefined {
    if (choice === "default") return undefined;
    const metadata = GgufReader.readHeader(path).metadata;
    const source = metadata.get("tokenizer.chat_template")?.value;
    if (typeof source !== "string") {
        if (choice === "gguf") throw new InvalidInputError("the target GGUF has no tokenizer.chat_template", "--chat-template");
        return undefined;
    }
    const tokens = metadata.get("tokenizer.ggml.tokens")?.value;
    const tokenText = (id: number | undefined): string | undefined => {
        const items = typeof tokens === "object" && tokens != null && "items" in tokens ? tokens.items : undefined;
        const text = id == null ? undefined : items?.[id];
        return typeof text === "string" ? text : undefined;
    };
    return ggufChatTemplate(target, source, {bos: tokenText(target.bosToken), eos: tokenText(target.eosToken)});
}
