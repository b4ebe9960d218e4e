import type {BatteryItem} from "../../batteries/BatteryItem.js";
import type {Completion, CompletionRequest, DecodePath, LogitGap} from "../../decodePaths/DecodePath.js";
import {ConcurrencyLimiter} from "../../decodePaths/ConcurrencyLimiter.js";
import {InvalidInputError, PromptExceedsContextError} from "../../errors.js";
import {mostSkipped} from "../../engine/fitsContext.js";
import {decodePathFingerprint, type DecodePathFingerprint} from "../../fingerprint/decodePathFingerprint.js";
import {type ProportionInterval, wilsonInterval} from "../../statistics/wilsonInterval.js";
import {compoundingRisk} from "./compoundingRisk.js";
import {promptsNeeded} from "./promptsNeeded.js";
import {diffJsonFields, type FieldDifference} from "./diffJsonFields.js";
import {extractToolCalls} from "./extractToolCalls.js";
import {firstDivergence} from "./firstDivergence.js";

export interface CanaryOptions {
    /** The reference path (e.g. target-only) and the path under test (e.g. the production endpoint). */
    readonly a: DecodePath;
    readonly b: DecodePath;
    readonly items: readonly BatteryItem[];
    /** Alert above this mismatch rate (drift article used 1.5%). */
    readonly maxMismatch: number;
    readonly maxTokens: number;
    readonly seed: number;
    /** Prompts compared at once (each path still applies its own limit). */
    readonly concurrency: number;
    /** Expected fingerprint of path B: its decodePathFingerprint or, for HTTP paths, the server's system_fingerprint. */
    readonly expectFingerprint?: string;
    /** Expected fingerprint of path A, checked the same way. */
    readonly expectFingerprintA?: string;
    /** Called as each prompt finishes on both paths: `done` of `total`. */
    readonly onProgress?: (done: number, total: number, id: string) => void;
}

export interface CanaryMismatch {
    readonly id: string;
    readonly task: string;
    readonly firstDivergentCharIndex: number;
    /** Null unless both paths report tokens. */
    readonly firstDivergentTokenIndex: number | null;
    /** The target's top-2 logits where the token streams part (paths holding the target only). */
    readonly logitGap: (LogitGap & {readonly tokenA: number | null; readonly tokenB: number | null}) | null;
    readonly excerptA: string;
    readonly excerptB: string;
    /** Field-level differences of the tool-call arguments found in the two outputs. */
    readonly toolCallDifferences: readonly {
        readonly call: number;
        readonly name: string | null;
        readonly differences: readonly FieldDifference[];
    }[];
}

export interface CanaryPathReport {
    readonly name: string;
    readonly fingerprint: string;
    readonly fingerprintInputs: DecodePathFingerprint["inputs"];
    readonly fileNames: DecodePathFingerprint["fileNames"];
    /** Distinct server-reported system_fingerprint values (HTTP paths). */
    readonly systemFingerprints: readonly string[];
    readonly expectedFingerprint: string | null;
    readonly fingerprintMatches: boolean | null;
}

export interface CanaryResult {
    readonly prompts: number;
    readonly compared: number;
    readonly exactMatches: number;
    readonly exactMatchRate: number;
    readonly mismatchRate: number;
    readonly mismatchRate95: ProportionInterval;
    readonly maxMismatch: number;
    /** Prompts needed for the upper bound to fall below maxMismatch at the mismatch rate seen; null when none would (or nothing was compared). */
    readonly promptsNeeded: number | null;
    /** Chance that a k-call session diverges at least once, from the mismatch rate's 95% upper bound (1 when nothing was compared). */
    readonly compoundingRisk: readonly {readonly calls: number; readonly risk: number}[];
    /** Outputs containing tool calls, and how many of those differ in some argument. */
    readonly toolCallOutputs: number;
    readonly toolCallArgumentMismatches: number;
    readonly mismatches: readonly CanaryMismatch[];
    readonly errors: readonly {readonly id: string; readonly path: "a" | "b"; readonly message: string}[];
    /** Prompts not compared because they exceed a path's context (reported, not counted as failures). */
    readonly skipped: readonly {readonly id: string; readonly path: "a" | "b"; readonly message: string}[];
    readonly paths: {readonly a: CanaryPathReport; readonly b: CanaryPathReport};
    /**
     * "pass": the mismatch rate's 95% Wilson upper bound lies below the bound (and fingerprints match);
     * "drift": the outputs compared differ beyond the bound, or a fingerprint differs;
     * "could-not-compare": no drift was seen, but requests failed, so the canary cannot say the paths
     * agree; "insufficient-data": no drift was seen, but more than half the prompts were skipped
     * (too long for a path's context), or too few were compared to rule out a rate at the bound
     * (promptsNeeded says how many would).
     */
    readonly verdict: "pass" | "drift" | "could-not-compare" | "insufficient-data";
    readonly passed: boolean;
    /** Why the verdict is not "pass": the drift found, then what kept prompts from being compared. */
    readonly failures: readonly string[];
}

const EXCERPT = 40;

/**
 * The decode-path drift canary of the drift article: replays prompts through two paths at temperature 0 and
 * reports exact-match rate, where and why outputs part, tool-call argument drift, the compounding
 * risk over multi-call sessions, and whether each path still has the fingerprint it should.
 */
export async function runCanary(options: CanaryOptions): Promise<CanaryResult> {
    if (options.items.length === 0) throw new InvalidInputError("has no prompts", "items");
    if (!(options.maxMismatch >= 0 && options.maxMismatch <= 1))
        throw new InvalidInputError(`must lie in [0, 1], got ${options.maxMismatch}`, "maxMismatch");
    const limiter = new ConcurrencyLimiter(options.concurrency);
    const errors: {id: string; path: "a" | "b"; message: string}[] = [];
    const skipped: {id: string; path: "a" | "b"; message: string}[] = [];
    const observed = {a: new Set<string>(), b: new Set<string>()};
    let done = 0;
    const outcomes = await Promise.all(
        options.items.map((item) =>
            limiter.run(async () => {
                const request: CompletionRequest = {
                    ...(item.messages !== undefined
                        ? {messages: item.messages, ...(item.tools !== undefined ? {tools: item.tools} : {})}
                        : {prompt: item.prompt ?? ""}),
                    maxTokens: options.maxTokens,
                    temperature: 0,
                    seed: options.seed
                };
                const [a, b] = await Promise.all([
                    attempt(options.a, request, item, "a", errors, skipped),
                    attempt(options.b, request, item, "b", errors, skipped)
                ]);
                if (a?.systemFingerprint !== undefined) observed.a.add(a.systemFingerprint);
                if (b?.systemFingerprint !== undefined) observed.b.add(b.systemFingerprint);
                options.onProgress?.(++done, options.items.length, item.id);
                if (a === null || b === null) return null;
                return {item, request, a, b};
            })
        )
    );
    const compared = outcomes.filter((outcome) => outcome !== null);
    const mismatches: CanaryMismatch[] = [];
    let toolCallOutputs = 0;
    let toolCallArgumentMismatches = 0;
    for (const {item, request, a, b} of compared) {
        const callsA = extractToolCalls(a.text);
        const callsB = extractToolCalls(b.text);
        if (callsA.length > 0 || callsB.length > 0) toolCallOutputs++;
        const toolCallDifferences = Array.from({length: Math.max(callsA.length, callsB.length)}, (_value, call) => ({
            call,
            name: callsA[call]?.name ?? callsB[call]?.name ?? null,
            differences: diffJsonFields(callsA[call]?.arguments, callsB[call]?.arguments)
        })).filter((entry) => entry.differences.length > 0);
        if (toolCallDifferences.length > 0) toolCallArgumentMismatches++;
        const charIndex = firstDivergence(a.text, b.text);
        if (charIndex === null) continue;
        const tokenIndex = a.tokens !== undefined && b.tokens !== undefined ? firstDivergence(a.tokens, b.tokens) : null;
        mismatches.push({
            id: item.id,
            task: item.task,
            firstDivergentCharIndex: charIndex,
            firstDivergentTokenIndex: tokenIndex,
            logitGap: tokenIndex === null ? null : await logitGapAt(options, request, a, b, tokenIndex),
            excerptA: excerpt(a.text, charIndex),
            excerptB: excerpt(b.text, charIndex),
            toolCallDifferences
        });
    }
    const exactMatches = compared.length - mismatches.length;
    const mismatchRate = compared.length === 0 ? 1 : mismatches.length / compared.length;
    const paths = {
        a: await pathReport(options.a, observed.a, options.expectFingerprintA),
        b: await pathReport(options.b, observed.b, options.expectFingerprint)
    };
    const mismatchRate95 = wilsonInterval(mismatches.length, Math.max(compared.length, 1));
    const drift: string[] = [];
    if (compared.length > 0 && mismatchRate > options.maxMismatch)
        drift.push(`mismatch rate ${percent(mismatchRate)} exceeds the bound ${percent(options.maxMismatch)}`);
    for (const [label, report] of [
        ["A", paths.a],
        ["B", paths.b]
    ] as const) {
        if (report.fingerprintMatches === false)
            drift.push(
                `path ${label} fingerprint differs: expected ${report.expectedFingerprint}, got ${[report.fingerprint, ...report.systemFingerprints].join(" / ")}`
            );
    }
    // A pass needs the data to rule out a rate at the threshold: the 95% upper bound must lie below it.
    const needed = compared.length === 0 ? null : promptsNeeded(mismatchRate, options.maxMismatch);
    const tooFew: string[] = [];
    if (compared.length > 0 && drift.length === 0 && mismatchRate95.upper >= options.maxMismatch)
        tooFew.push(
            `${compared.length} prompt(s) compared are too few: ${mismatches.length} mismatch(es), and the mismatch rate's 95% upper bound ` +
                `(Wilson) is ${percent(mismatchRate95.upper)}, not below the bound ${percent(options.maxMismatch)}; ` +
                (needed === null
                    ? "no number of prompts would pass at the rate seen"
                    : `about ${needed} prompts would be needed at the rate seen${mismatches.length === 0 ? " (no mismatch)" : ""}`)
        );
    // The context rule: prompts that do not fit a path's context with maxTokens are skipped; more than
    // half skipped leaves too little of the battery for a verdict.
    const skippedPrompts = new Set(skipped.map((entry) => entry.id)).size;
    if (drift.length === 0 && errors.length === 0 && mostSkipped(skippedPrompts, options.items.length))
        tooFew.unshift(
            `${skippedPrompts} of ${options.items.length} prompt(s) were skipped (more than half), their prompt too long for a path's context ` +
                `with --max-tokens ${options.maxTokens}; raise the context (context=N in an embedded path) or lower --max-tokens`
        );
    const notCompared: string[] = [];
    if (errors.length > 0)
        notCompared.push(
            `${errors.length} request(s) failed, so ${options.items.length - compared.length} of ${options.items.length} prompt(s) were not compared (first: ${errors[0].message})`
        );
    const failures = [...drift, ...notCompared, ...tooFew];
    errors.sort((x, y) => x.id.localeCompare(y.id) || x.path.localeCompare(y.path));
    return {
        prompts: options.items.length,
        compared: compared.length,
        exactMatches,
        exactMatchRate: compared.length === 0 ? 0 : exactMatches / compared.length,
        mismatchRate,
        mismatchRate95,
        maxMismatch: options.maxMismatch,
        promptsNeeded: needed,
        // From the upper bound: what the data cannot rule out, not the point estimate (0 for a clean run).
        compoundingRisk: compoundingRisk(compared.length === 0 ? 1 : mismatchRate95.upper),
        toolCallOutputs,
        toolCallArgumentMismatches,
        mismatches,
        errors,
        skipped: skipped.sort((x, y) => x.id.localeCompare(y.id) || x.path.localeCompare(y.path)),
        paths,
        verdict:
            drift.length > 0 ? "drift" : notCompared.length > 0 ? "could-not-compare" : tooFew.length > 0 ? "insufficient-data" : "pass",
        passed: failures.length === 0,
        failures
    };
}

async function attempt(
    path: DecodePath,
    request: CompletionRequest,
    item: BatteryItem,
    label: "a" | "b",
    errors: {id: string; path: "a" | "b"; message: string}[],
    skipped: {id: string; path: "a" | "b"; message: string}[]
): Promise<Completion | null> {
    try {
        return await path.complete(request);
    } catch (error) {
        (error instanceof PromptExceedsContextError ? skipped : errors).push({id: item.id, path: label, message: (error as Error).message});
        return null;
    }
}

/** The gap on the target of whichever path holds one, after the tokens both paths agree on. */
async function logitGapAt(
    options: CanaryOptions,
    request: CompletionRequest,
    a: Completion,
    b: Completion,
    tokenIndex: number
): Promise<CanaryMismatch["logitGap"]> {
    const holder = options.a.targetLogitGap !== undefined ? options.a : options.b.targetLogitGap !== undefined ? options.b : null;
    if (holder === null) return null;
    const gap = await holder.targetLogitGap!(request, a.tokens!.slice(0, tokenIndex));
    return {...gap, tokenA: a.tokens![tokenIndex] ?? null, tokenB: b.tokens![tokenIndex] ?? null};
}

async function pathReport(path: DecodePath, observed: Set<string>, expected: string | undefined): Promise<CanaryPathReport> {
    const fingerprint = await decodePathFingerprint(path.describe());
    const systemFingerprints = [...observed].sort();
    // An HTTP path passes when every reply carried the expected system_fingerprint (drift article's assertion).
    const matches =
        expected === undefined
            ? null
            : fingerprint.fingerprint === expected ||
              (systemFingerprints.length > 0 && systemFingerprints.every((value) => value === expected));
    return {
        name: path.name,
        fingerprint: fingerprint.fingerprint,
        fingerprintInputs: fingerprint.inputs,
        fileNames: fingerprint.fileNames,
        systemFingerprints,
        expectedFingerprint: expected ?? null,
        fingerprintMatches: matches
    };
}

function excerpt(text: string, index: number): string {
    return text.slice(Math.max(0, index - EXCERPT), index + EXCERPT);
}

function percent(value: number): string {
    return `${(100 * value).toFixed(2)}%`;
}
