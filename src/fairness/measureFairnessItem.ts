import {createHash} from "node:crypto";
import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {renderMessagesAsText} from "../chat/renderMessagesAsText.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {generate} from "../engine/generate.js";
import type {GenerationTelemetry} from "../engine/GenerationTelemetry.js";
import {withBos} from "../backend/addsBos.js";
import {contextRefusal, fitsContext} from "../engine/fitsContext.js";
import type {FairnessItemRecord} from "./FairnessItemRecord.js";
import {teacherForcedSums} from "./teacherForcedSums.js";

export interface ItemMeasurementOptions {
    readonly gamma: number;
    readonly maxTokens: number;
    /** Stop strings of both runs (a serving stack's `stop`): the target's output ends where the task's answer does. */
    readonly stop?: readonly string[];
    readonly sampling: SamplingOptions;
    readonly seed: number;
    readonly distributionTemperature: number;
}

export interface ItemMeasurement {
    readonly record: FairnessItemRecord;
    readonly baseline: GenerationTelemetry;
    readonly speculative: GenerationTelemetry;
}

/**
 * One item: a target-only run and a strict speculative run of the same prompt and seed (the
 * speed-up pair), then both models teacher-forced on the item's reference — or, without one, on the
 * target's own output, which is a sample of the task as the target serves it. A prompt that does
 * not fit the context with maxTokens generated tokens (fitsContext) is a PromptExceedsContextError:
 * analyzeFairness skips those items before measuring; nothing is cut.
 */
export async function measureFairnessItem(
    target: ModelBackend,
    draft: ModelBackend,
    item: BatteryItem,
    group: string,
    options: ItemMeasurementOptions
): Promise<ItemMeasurement> {
    const contextSize = Math.min(target.contextSize, draft.contextSize);
    const promptTokens = fairnessPromptTokens(target, item);
    // Teacher forcing reads BOS first whenever the model has one, even where generation adds none.
    const bos = target.bosToken == null || promptTokens[0] === target.bosToken ? [] : [target.bosToken];
    const promptLength = bos.length + promptTokens.length;
    if (!fitsContext(promptLength, options.maxTokens, contextSize))
        throw contextRefusal(promptLength, options.maxTokens, contextSize, item.id);
    const text = item.prompt ?? renderMessagesAsText(item.messages ?? []);
    const generation = {
        policy: {kind: "strict" as const},
        sampling: options.sampling,
        maxTokens: options.maxTokens,
        stop: options.stop ?? [],
        seed: options.seed
    };
    const baseline = await generate(target, undefined, promptTokens, {...generation, gamma: 0, addBos: false});
    const speculative = await generate(target, draft, promptTokens, {...generation, gamma: options.gamma, addBos: false});

    const isReference = item.reference !== undefined && item.reference !== "";
    const continuation = isReference ? target.tokenize(referenceText(text, item.reference!)).slice(0, options.maxTokens) : baseline.tokens;
    const divergences = await teacherForcedSums(target, draft, {
        context: [...bos, ...promptTokens],
        continuation,
        isReference,
        temperature: options.distributionTemperature,
        gamma: options.gamma
    });

    const decodeMilliseconds = (telemetry: GenerationTelemetry) => telemetry.time.total - telemetry.time.prompt;
    return {
        record: {
            id: item.id,
            group,
            continuation: isReference ? "reference" : "target-output",
            divergences,
            run: {
                baselineTokens: baseline.telemetry.emittedTokens,
                baselineMilliseconds: decodeMilliseconds(baseline.telemetry),
                speculativeTokens: speculative.telemetry.emittedTokens,
                speculativeMilliseconds: decodeMilliseconds(speculative.telemetry),
                drafts: speculative.telemetry.drafts,
                draftTokens: speculative.telemetry.draftTokens,
                acceptedTokens: speculative.telemetry.acceptedTokens,
                identical:
                    baseline.tokens.length === speculative.tokens.length &&
                    baseline.tokens.every((token, index) => token === speculative.tokens[index]),
                baselineDigest: createHash("sha256")
                    .update(Buffer.from(Int32Array.from(baseline.tokens).buffer))
                    .digest("hex")
            }
        },
        baseline: baseline.telemetry,
        speculative: speculative.telemetry
    };
}

/** An item's prompt as both runs decode it: its text (or plain-text conversation) tokenized, BOS first where the target adds one. */
function fairnessPromptTokens(target: ModelBackend, item: BatteryItem): number[] {
    return withBos(target, target.tokenize(item.prompt ?? renderMessagesAsText(item.messages ?? [])));
}

/** The tokens an item's prompt takes in the context, as measureFairnessItem checks it against fitsContext. */
export function fairnessPromptLength(target: ModelBackend, item: BatteryItem): number {
    const tokens = fairnessPromptTokens(target, item);
    return tokens.length + (target.bosToken != null && tokens[0] !== target.bosToken ? 1 : 0);
}

/** The reference as it would follow the prompt: separated by one space unless either side brings whitespace. */
export function referenceText(prompt: string, reference: string): string {
    return /\s$/.test(prompt) || /^\s/.test(reference) ? reference : ` ${reference}`;
}
