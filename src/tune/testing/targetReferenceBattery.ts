import type {ModelBackend} from "../../backend/ModelBackend.js";
import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {generate} from "../../engine/generate.js";

/** Prompts for skewedBigramPair: "well" ones stay on the side the draft copies exactly, "poor" ones on the noisy side. */
export const skewedPrompts: ReadonlyArray<{id: string; task: string; prompt: string}> = [
    ...["fig", "hij", "gh", "ji", "jhf", "igh"].map((prompt, index) => ({id: `well-${index + 1}`, task: "well", prompt})),
    ...["abc", "cab", "dea", "bed", "ace", "eab", "dab", "bad", "cad", "dec"].map((prompt, index) => ({
        id: `poor-${index + 1}`,
        task: "poor",
        prompt
    }))
];

/**
 * A battery whose references are the target's own greedy outputs, so target-only and strict SD
 * score 100% at temperature 0 by construction and every loss is the draft's doing.
 */
export async function targetReferenceBattery(target: ModelBackend, prompts = skewedPrompts, maxTokens = 4): Promise<BatteryItem[]> {
    const items: BatteryItem[] = [];
    for (const {id, task, prompt} of prompts) {
        const result = await generate(target, undefined, prompt, {gamma: 0, sampling: {temperature: 0}, maxTokens});
        items.push({id, task, prompt, reference: result.text, scorer: "exact-match"});
    }
    return items;
}
