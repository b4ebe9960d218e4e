import type {Random} from "../../random/Random.js";
import type {CorpusProblem} from "./CorpusProblem.js";
import {integerBetween} from "./integerBetween.js";
import {pickOne} from "./pickOne.js";

/**
 * Words the other tasks copy from their prompts (cities, currency codes, search terms, names) and a
 * few non-ASCII ones, so the drill exercises the same byte sequences the tasks need.
 */
const words = [
    "Paris",
    "Tokyo",
    "Berlin",
    "Madrid",
    "Lima",
    "Oslo",
    "Cairo",
    "Toronto",
    "USD",
    "EUR",
    "JPY",
    "GBP",
    "red",
    "shoes",
    "cheap",
    "flights",
    "pasta",
    "train",
    "bikes",
    "garden",
    "tools",
    "hotel",
    "rooms",
    "guitar",
    "Tom",
    "Ben",
    "Anna",
    "Lena",
    "Diego",
    "Sofía",
    "Jonas",
    "apples",
    "candies",
    "Müller",
    "東京",
    "りんご"
];

/**
 * A copy drill: "Repeat: 417 Paris 8\nEcho:" → " 417 Paris 8". The content is random (1–4 items,
 * numbers of 1–3 digits or words), so no amount of memorising predicts the echo: only attending back
 * to the prompt does. Small models trained on the task corpus alone learnt every format but never
 * copied a number from the prompt; on dense drills a 0.27M model does learn to echo, though in the
 * runs so far that did not carry over to tool calls (docs/history.md, "The copy curriculum"). An
 * experiment input: the shipped mixtures give it weight 0. Language-neutral, rendered in English.
 */
export function copyProblem(random: Random): CorpusProblem {
    const items = Array.from({length: integerBetween(random, 1, 4)}, () =>
        random.nextDouble() < 0.6 ? String(integerBetween(random, 0, 10 ** integerBetween(random, 1, 3) - 1)) : pickOne(random, words)
    );
    const content = items.join(" ");
    return {key: content, renderings: {en: {prompt: `Repeat: ${content}\nEcho:`, answer: ` ${content}`, reference: content}}};
}
