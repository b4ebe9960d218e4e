import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {scoreItem} from "../../batteries/scorers/scoreItem.js";
import {ConcurrencyLimiter} from "../../decodePaths/ConcurrencyLimiter.js";
import type {Completion, CompletionRequest, DecodePath} from "../../decodePaths/DecodePath.js";
import {InvalidInputError} from "../../errors.js";
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
}

/**
 * Paired generation for TAIS: every item under every regime through both arms with the same
 * request, scored, and recorded in the ledger. Returns this run's rows (resumed ones included),
 * in item-then-regime order, for summarizeTaisSamples.
 */
export async function runTaisBattery(options: TaisRunOptions): Promise<TaisSampleRow[]> {
    if (options.items.length === 0) throw new InvalidInputError("has no items", "--battery");
    const limiter = new ConcurrencyLimiter(options.concurrency);
    const wanted = options.items.flatMap((item) => options.regimes.map((regime) => ({item, regime, sampleId: taisSampleId(item.id, regime.temperature, regime.seed)})));
    await Promise.all(wanted.filter(({sampleId}) => !options.ledger.has(sampleId)).map(({item, regime, sampleId}) => limiter.run(async () => {
        const request: CompletionRequest = {
            ...(item.messages !== undefined ? {messages: item.messages} : {prompt: item.prompt ?? ""}),
            maxTokens: options.maxTokens, temperature: regime.temperature, seed: regime.seed
        };
        const [targetOnly, speculative] = await Promise.all([options.targetOnly.complete(request), options.speculative.complete(request)]);
        await options.ledger.append({
            sampleId, itemId: item.id, task: item.task, temperature: regime.temperature, seed: regime.seed,
            targetOnly: armOutput(item, targetOnly), speculative: armOutput(item, speculative),
            identical: targetOnly.text === speculative.text
        });
    })));
    const byId = new Map(options.ledger.rows.map((row) => [row.sampleId, row]));
    return wanted.map(({sampleId}) => byId.get(sampleId)!);
}

function armOutput(item: BatteryItem, completion: Completion): TaisArmOutput {
    const score = scoreItem(item, completion.text);
    return {
        text: completion.text, finishReason: completion.finishReason, pass: score.pass, extracted: score.extracted,
        ...(completion.systemFingerprint !== undefined ? {systemFingerprint: completion.systemFingerprint} : {})
    };
}
