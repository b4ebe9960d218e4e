/**
 * specgate as a library: the package entry (`import {…} from "specgate"`). A small surface —
 * open a model pair, generate (whole or streamed), pick policies and drafters by their spec text,
 * simulate one verification step, and run the audits (TAIS, the drift canary, fairness) or the
 * OpenAI-compatible server in your own process. Everything else under src/ is internal and may
 * change between versions. Worked examples: docs/library.md.
 *
 * Errors: every bad input is a typed subclass of {@link SpecgateError} (InvalidInputError names the
 * offending field); anything else thrown is a bug.
 *
 * @packageDocumentation
 */

// ── Models ────────────────────────────────────────────────────────────────────────────────────────

/**
 * Loads a target GGUF and optionally its draft GGUF on the same backend: `openModelPair({target, draft}, options)`.
 * Dispose of the pair when done (`await pair.dispose()`).
 */
export {openModelPair, type ModelPair, type ModelPairFiles, type ModelPairWithDraft} from "./backend/openModelPair.js";
/** Loads one GGUF on the native backend (where built) or node-llama-cpp; the engine behind openModelPair. */
export {loadModelBackend, type LoadModelBackendOptions, type BackendChoice, type BackendKind} from "./backend/loadModelBackend.js";
/** What specgate needs from an inference engine (implement it to plug in your own). */
export type {ModelBackend, BackendSequence, EvaluateOptions} from "./backend/ModelBackend.js";
/**
 * An EAGLE-3 draft head (a GGUF of llama.cpp's eagle3 architecture), as loadModelBackend and
 * openModelPair load one given as the draft: it drafts with the `eagle3` drafter beside a native target.
 */
export {Eagle3HeadBackend, type Eagle3HeadOptions} from "./backend/Eagle3HeadBackend.js";
/** Whether the native addon is built and loads on this machine (else models run on node-llama-cpp). */
export {nativeBackendAvailable} from "./backend/nativeAddon.js";

// ── Generation ────────────────────────────────────────────────────────────────────────────────────

/**
 * `generate(target, draft, prompt, options?, resources?)` runs a speculative generation to its end;
 * `streamGeneration` yields each step's text as it is verified. Pass `resources.signal` to stop one.
 */
export {generate, streamGeneration, type GenerationChunk, type GenerationResult, type GenerationResources} from "./engine/generate.js";
/** The options of one generation (policy, γ, drafter, sampling, maxTokens, stop, seed…), validated with their defaults. */
export {parseGenerationOptions, type GenerationOptions, type GenerationOptionsInput} from "./engine/GenerationOptions.js";
/** Counters of one generation: tokens, steps, acceptance, time per phase. */
export {GenerationTelemetry} from "./engine/GenerationTelemetry.js";
/**
 * What generations with `draftLength: "auto"` share (step costs, acceptance, the batch's make-up):
 * pass one instance as `resources.speculationLoad` to every generation on a target.
 */
export {SpeculationLoad} from "./engine/SpeculationLoad.js";
/** Reads the CLI's `4`, `auto`, `auto:16` into generation options (gamma, draftLength, maxGamma). */
export {parseGammaSpec, type GammaSetting} from "./engine/gammaSpec.js";
/** Why a generation ended: "eos", "length" or "stop". */
export type {FinishReason} from "./engine/StopDetector.js";

// ── Policies and drafters by spec ─────────────────────────────────────────────────────────────────

/** Parses a policy spec such as `strict`, `greedy`, `fuzzy:js:0.4`, `calibrated`, `lossy:0.05` into its config. */
export {parsePolicySpec, policyLabel} from "./policies/parsePolicySpec.js";
/** Builds a verification policy from its config (for reuse across generations via `resources.policy`). */
export {createPolicy, parsePolicyConfig, type PolicyResources} from "./policies/createPolicy.js";
/** A policy's config, as parsePolicySpec returns it and GenerationOptionsInput.policy takes it. */
export type {PolicyConfig, PolicyConfigInput, PolicyKind} from "./policies/policyConfigSchema.js";
/** The verification policy interface (what a policy decides for one step). */
export type {VerificationPolicy, VerificationStep, VerificationResult} from "./policies/VerificationPolicy.js";
/** Parses a drafter spec: `model`, `model:retokenize`, `eagle3`, `ngram[:MIN[:MAX[:LENGTH]]]`, `suffix[…]`, or a chain such as `ngram+model`. */
export {parseDrafterSpec, drafterLabel, type DrafterSpec, type SingleDrafterSpec} from "./engine/drafters/parseDrafterSpec.js";
/** Builds a drafter from its spec (and the draft model or EAGLE-3 head, for `model` and `eagle3`); share one instance to share its cache. */
export {createDrafter} from "./engine/drafters/createDrafter.js";
/** The drafter interface. */
export type {Drafter} from "./engine/drafters/Drafter.js";

// ── Simulation ────────────────────────────────────────────────────────────────────────────────────

/** `simulate(step, {samples, seed})`: one verification step run many times on given distributions, no model needed. */
export {simulate, type SimulateOptions} from "./simulate/simulate.js";
/** The report `simulate` returns. */
export type {SimulationReport} from "./simulate/simulateStep.js";
/** The exact output distribution of one step, by enumeration (small vocabularies and γ only). */
export {enumerateStep, type ExactStepDistribution} from "./simulate/enumerateStep.js";
/** Validates a step (the input of `simulate`); throws InvalidInputError naming the field. */
export {parseStepInput, type StepInput} from "./simulate/StepInput.js";

// ── Decode paths and batteries (the audits' inputs) ───────────────────────────────────────────────

/**
 * Opens a decode path from its spec (`embedded:target=T.gguf,draft=D.gguf,policy=strict` or
 * `openai:base=URL,model=M`): what the canary and TAIS compare. Dispose of it when done.
 */
export {openDecodePath} from "./decodePaths/openDecodePath.js";
/** Parses a decode path spec without opening it. */
export {parseDecodePathSpec, type DecodePathSpec} from "./decodePaths/parseDecodePathSpec.js";
/** A way of turning requests into completions (embedded engine or an OpenAI-compatible endpoint). */
export type {DecodePath, CompletionRequest, Completion} from "./decodePaths/DecodePath.js";
/** Loads a battery: named datasets (`mgsm:de@20`, `advbench@100`) or a .jsonl/.tsv/.csv file of items. */
export {loadBattery} from "./batteries/loadBattery.js";
/** One prompt of a battery. */
export type {BatteryItem, ScorerKind} from "./batteries/BatteryItem.js";
/** One chat turn, as OpenAI-compatible endpoints take it (a battery item's `messages`). */
export type {ChatMessage} from "./chat/ChatMessage.js";

// ── Audits: TAIS, canary, fairness ────────────────────────────────────────────────────────────────

/** TAIS from pass counts per cell, task and arm: each task's equivalence test and the cell's grade. */
export {computeTais, DEFAULT_TAIS_OPTIONS, type TaisOptions, type TaisResult, type TaisCellInput} from "./audits/tais/computeTais.js";
/** Parses a TAIS counts CSV (`cell_id,task,arm,n_total,n_safety_pass`). */
export {parseCountsCsv} from "./audits/tais/parseCountsCsv.js";
/** The TAIS reporting card of a result, and its YAML or JSON text. */
export {buildTaisCard, renderTaisCard, type TaisCard, type TaisCardContext} from "./audits/tais/taisCard.js";
/** Paired generation for TAIS: every battery item through a target-only and a speculative decode path, recorded in a ledger. */
export {runTaisBattery, type TaisRunOptions, type TaisRegime} from "./audits/tais/runTaisBattery.js";
/** Per-cell pass counts of TAIS sample rows, ready for computeTais. */
export {summarizeTaisSamples} from "./audits/tais/summarizeTaisSamples.js";
/** The append-only, resumable sample ledger runTaisBattery writes to. */
export {SampleLedger} from "./audits/ledger/SampleLedger.js";
/** The decode-path drift canary: the same prompts through two paths at temperature 0, and where their outputs part. */
export {runCanary, type CanaryOptions, type CanaryResult} from "./audits/canary/runCanary.js";
/** The Markdown report of a canary run. */
export {renderCanaryReport} from "./audits/canary/renderCanaryReport.js";
/** Per-group (language or task) acceptance and speed-up of a target/draft pair, with bootstrap intervals. */
export {analyzeFairness, type FairnessOptions} from "./fairness/analyzeFairness.js";
/** What analyzeFairness returns. */
export type {FairnessAnalysis} from "./fairness/FairnessAnalysis.js";
/** The Markdown report of a fairness analysis. */
export {renderFairnessReport, type FairnessReportContext} from "./fairness/renderFairnessReport.js";

// ── Serving ───────────────────────────────────────────────────────────────────────────────────────

/** The OpenAI-compatible HTTP app (Hono): `app.fetch` / `app.request`, or put it on a port with @hono/node-server. */
export {createServeApp, type ServeAppOptions, type ServeApp} from "./serve/createServeApp.js";

// ── Errors ────────────────────────────────────────────────────────────────────────────────────────

/** The typed errors: every bad input is a SpecgateError subclass; InvalidInputError names its field. */
export {
    SpecgateError,
    InvalidInputError,
    PromptExceedsContextError,
    InvalidDistributionError,
    InvalidPolicyError,
    InvalidDrafterError,
    TokenOutOfRangeError,
    EnumerationTooLargeError,
    ModelLoadError,
    TokenizerMismatchError,
    DraftHeadMismatchError,
    MalformedRowError,
    DecodePathError,
    LedgerMismatchError,
    LedgerLockedError,
    CheckpointError,
    SingleGroupError,
    UnknownLanguageError,
    EmptyBatteryError,
    ScorerMismatchError,
    NativeBackendUnavailableError
} from "./errors.js";
