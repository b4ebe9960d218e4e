import type {Random} from "../../random/Random.js";
import type {CorpusProblem} from "./CorpusProblem.js";
import {integerBetween} from "./integerBetween.js";
import {knowledgeColors, knowledgeKinds, knowledgePlaces, knowledgeTable, withArticle} from "./knowledgeTable.js";
import {pickOne} from "./pickOne.js";

const letters = ["A", "B", "C", "D"];

/**
 * A four-option question about the knowledge table (CSQA-like), answered with the letter alone:
 * "Question: What color is a frog?\nA) red\nB) green\nC) white\nD) brown\nAnswer:" → " B".
 * The correct option's position is uniform, so always answering one letter scores 25%. English only.
 */
export function multipleChoiceProblem(random: Random): CorpusProblem {
    const entry = pickOne(random, knowledgeTable);
    let question: string;
    let correct: string;
    let pool: readonly string[];
    switch (integerBetween(random, 0, 3)) {
        case 0:
            question = `What color is ${withArticle(entry.name)}?`;
            correct = entry.color;
            pool = knowledgeColors;
            break;
        case 1:
            question = `What kind of thing is ${withArticle(entry.name)}?`;
            correct = entry.kind;
            pool = knowledgeKinds;
            break;
        case 2:
            question = `Where would you usually find ${withArticle(entry.name)}?`;
            correct = entry.place;
            pool = knowledgePlaces;
            break;
        default:
            question = `Which of these is ${withArticle(entry.kind)}?`;
            correct = entry.name;
            pool = knowledgeTable.filter((other) => other.kind !== entry.kind).map((other) => other.name);
    }
    const choices = drawDistractors(
        random,
        pool.filter((option) => option !== correct),
        3
    );
    const position = integerBetween(random, 0, 3);
    choices.splice(position, 0, correct);
    const listing = choices.map((choice, index) => `${letters[index]}) ${choice}`).join("\n");
    const prompt = `Question: ${question}\n${listing}\nAnswer:`;
    return {key: prompt, renderings: {en: {prompt, answer: ` ${letters[position]}`, reference: letters[position]}}};
}

/** `count` distinct options in random order (a partial Fisher–Yates shuffle). */
function drawDistractors(random: Random, options: readonly string[], count: number): string[] {
    const pool = [...options];
    for (let index = 0; index < count; index++) {
        const chosen = integerBetween(random, index, pool.length - 1);
        [pool[index], pool[chosen]] = [pool[chosen], pool[index]];
    }
    return pool.slice(0, count);
}
