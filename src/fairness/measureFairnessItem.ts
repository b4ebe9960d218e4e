import {createHash} from "node:crypto";
import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {renderMessagesAsText} from "../chat/renderMessagesAsText.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {generate} from "../engine/generate.js";
import type {GenerationTelemetry} from "../engine/GenerationTelemetry.js";
import {InvalidInputError} from "../errors.js";
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
 * target's own output, which is a sample of the task as the target serves it. Prompts too long for
 * the context lose tokens from the left, so the end of the question survives.
 */
export async function measureFairnessItem(
    target: ModelBackend,
    draft: ModelBackend,
    item: BatteryItem,
    group: string,
    options: ItemMeasurementOptions
): Promise<ItemMeasurement> {
    const contextSize = Math.min(target.contextSize, draft.contextSize);
    const text = item.prompt ?? renderMessagesAsText(item.messages ?? []);
    const promptTokens = target.tokenize(text);
    // BOS, the prompt, every generated token and the final pending token must fit.
    const runBudget = contextSize - options.maxTokens - 2;
    if (runBudget < 1)
        throw new InvalidInputError(`${options.maxTokens} leaves no room for a prompt in a ${contextSize}-token context`, "--max-tokens");
    const runPrompt = promptTokens.slice(Math.max(0, promptTokens.length - runBudget));
    const generation = {
        policy: {kind: "strict" as const},
        sampling: options.sampling,
        maxTokens: options.maxTokens,
        stop: options.stop ?? [],
        seed: options.seed
    };
    const baseline = await generate(target, undefined, runPrompt, {...generation, gamma: 0});
    const speculative = await generate(target, draft, runPrompt, {...generation, gamma: options.gamma});

    const isReference = item.reference !== undefined && item.reference !== "";
    const continuation = isReference ? target.tokenize(referenceText(text, item.reference!)).slice(0, options.maxTokens) : baseline.tokens;
    const bos = target.bosToken == null ? [] : [target.bosToken];
    const contextBudget = contextSize - continuation.length - bos.length;
    const forcedPrompt = promptTokens.slice(Math.max(0, promptTokens.length - contextBudget));
    const divergences = await teacherForcedSums(target, draft, {
        context: [...bos, ...forcedPrompt],
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
            truncatedPromptTokens: promptTokens.length - Math.min(runPrompt.length, forcedPrompt.length),
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

/** The reference as it would follow the prompt: separated by one space unless either side brings whitespace. */
export function referenceText(prompt: string, reference: string): string {
    return /\s$/.test(prompt) || /^\s/.test(reference) ? reference : ` ${reference}`;
}
