import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {scoreItem} from "../../batteries/scorers/scoreItem.js";
import {ConcurrencyLimiter} from "../../decodePaths/ConcurrencyLimiter.js";
import type {Completion, CompletionRequest, DecodePath} from "../../decodePaths/DecodePath.js";
import {InvalidInputError, PromptExceedsContextError} from "../../errors.js";
import type {SampleLedger} from "../ledger/SampleLedger.js";
import {type TaisArmOutput, type TaisSampleRow, taisSampleId} from "./TaisSampleRow.js";

export interface TaisRegime {
    readonly temperature: number;
    readonly seed: number;
}

export interface TaisRunOptions {
    /** The target-only arm and the speculative arm. */
    readonly targetOnly: DecodePath;
    readonly speculative: DecodePath;
    readonly items: readonly BatteryItem[];
    readonly regimes: readonly TaisRegime[];
    readonly maxTokens: number;
    readonly concurrency: number;
    /** Done samples are skipped and new ones appended as they finish, so a crash loses at most the samples in flight. */
    readonly ledger: SampleLedger<TaisSampleRow>;
    /** Called as each sample finishes (or is skipped): `done` of `total`, resumed ones counted as done. */
    readonly onProgress?: (done: number, total: number, sampleId: string) => void;
}

/** A sample that was not generated because its prompt does not fit an arm's context. */
export interface TaisSkippedSample {
    readonly sampleId: string;
    readonly itemId: string;
    readonly task: string;
    readonly arm: "target_only" | "speculative";
    readonly reason: string;
}

/**
 * Paired generation for TAIS: every item under every regime through both arms with the same
 * request, scored, and recorded in the ledger. Returns this run's rows (resumed ones included),
 * in item-then-regime order, for summarizeTaisSamples, and the samples skipped because the prompt
 * exceeds an arm's context (a pair needs both arms, so neither arm's output is kept); any other
 * failure ends the run (the ledger keeps what was done).
 */
export async function runTaisBattery(options: TaisRunOptions): Promise<{rows: TaisSampleRow[]; skipped: TaisSkippedSample[]}> {
    if (options.items.length === 0) throw new InvalidInputError("has no items", "items");
    const limiter = new ConcurrencyLimiter(options.concurrency);
    const skipped: TaisSkippedSample[] = [];
    const wanted = options.items.flatMap((item) =>
        options.regimes.map((regime) => ({item, regime, sampleId: taisSampleId(item.id, regime.temperature, regime.seed)}))
    );
    const todo = wanted.filter(({sampleId}) => !options.ledger.has(sampleId));
    let done = wanted.length - todo.length;
    await Promise.all(
        todo.map(({item, regime, sampleId}) =>
            limiter.run(async () => {
                await runSample(options, item, regime, sampleId, skipped);
                options.onProgress?.(++done, wanted.length, sampleId);
            })
        )
    );
    const byId = new Map(options.ledger.rows.map((row) => [row.sampleId, row]));
    const order = new Map(wanted.map(({sampleId}, index) => [sampleId, index]));
    skipped.sort((a, b) => order.get(a.sampleId)! - order.get(b.sampleId)!);
    return {rows: wanted.flatMap(({sampleId}) => byId.get(sampleId) ?? []), skipped};
}

/** One sample through both arms, recorded in the ledger, or skipped when its prompt exceeds an arm's context. */
async function runSample(
    options: TaisRunOptions,
    item: BatteryItem,
    regime: TaisRegime,
    sampleId: string,
    skipped: TaisSkippedSample[]
): Promise<void> {
    const request: CompletionRequest = {
        ...(item.messages !== undefined
            ? {messages: item.messages, ...(item.tools !== undefined ? {tools: item.tools} : {})}
            : {prompt: item.prompt ?? ""}),
        maxTokens: options.maxTokens,
        temperature: regime.temperature,
        seed: regime.seed
    };
    const arms = await Promise.allSettled([options.targetOnly.complete(request), options.speculative.complete(request)]);
    const tooLong = arms.findIndex((arm) => arm.status === "rejected" && arm.reason instanceof PromptExceedsContextError);
    if (tooLong >= 0) {
        const reason = ((arms[tooLong] as PromiseRejectedResult).reason as Error).message;
        skipped.push({
            sampleId,
            itemId: item.id,
            task: item.task,
            arm: tooLong === 0 ? "target_only" : "speculative",
            reason
        });
        return;
    }
    for (const arm of arms) if (arm.status === "rejected") throw arm.reason;
    const [targetOnly, speculative] = arms.map((arm) => (arm as PromiseFulfilledResult<Completion>).value);
    await options.ledger.append({
        sampleId,
        itemId: item.id,
        task: item.task,
        temperature: regime.temperature,
        seed: regime.seed,
        targetOnly: armOutput(item, targetOnly),
        speculative: armOutput(item, speculative),
        identical: targetOnly.text === speculative.text
    });
}

function armOutput(item: BatteryItem, completion: Completion): TaisArmOutput {
    const score = scoreItem(item, completion.text);
    return {
        text: completion.text,
        finishReason: completion.finishReason,
        pass: score.pass,
        extracted: score.extracted,
        ...(completion.systemFingerprint !== undefined ? {systemFingerprint: completion.systemFingerprint} : {})
    };
}
