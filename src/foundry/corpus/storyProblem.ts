import type {Random} from "../../random/Random.js";
import type {CorpusProblem} from "./CorpusProblem.js";
import {integerBetween} from "./integerBetween.js";
import {knowledgeTable, withArticle} from "./knowledgeTable.js";
import {pickOne} from "./pickOne.js";

const people: readonly {name: string; pronoun: string}[] = [
    {name: "Tom", pronoun: "He"},
    {name: "Anna", pronoun: "She"},
    {name: "Sam", pronoun: "He"},
    {name: "Lily", pronoun: "She"},
    {name: "Ben", pronoun: "He"},
    {name: "Emma", pronoun: "She"}
];
const moods = ["happy", "surprised", "curious", "calm", "excited"];
const days = ["Monday", "Tuesday", "Saturday", "Sunday"];

/**
 * Free text: a two-entity description that states knowledge-table facts, or a four-sentence story.
 * The prompt is the first sentence, the answer the rest, so the test split also measures how well a
 * model continues plain prose. English only.
 */
export function storyProblem(random: Random): CorpusProblem {
    const entry = pickOne(random, knowledgeTable);
    let sentences: string[];
    if (integerBetween(random, 0, 1) === 0) {
        const other = pickOne(
            random,
            knowledgeTable.filter((candidate) => candidate.name !== entry.name)
        );
        const article = withArticle(entry.name);
        sentences = [
            `${capitalize(article)} is ${withArticle(entry.kind)}.`,
            `It is ${entry.color} and you find it in the ${entry.place}.`,
            `${capitalize(withArticle(other.name))} is ${withArticle(other.kind)} too, but it is ${other.color}.`
        ];
        if (other.kind !== entry.kind)
            sentences[2] = `${capitalize(withArticle(other.name))} is not ${withArticle(entry.kind)}; it is ${withArticle(other.kind)}.`;
    } else {
        const person = pickOne(random, people);
        sentences = [
            `On ${pickOne(random, days)}, ${person.name} went to the ${entry.place}.`,
            `${person.pronoun} saw ${withArticle(entry.name)} there.`,
            `The ${entry.name} was ${entry.color}.`,
            `${person.name} felt ${pickOne(random, moods)} and went home.`
        ];
    }
    const [first, ...rest] = sentences;
    const answer = ` ${rest.join(" ")}`;
    return {key: sentences.join(" "), renderings: {en: {prompt: first, answer, reference: answer.trim()}}};
}

function capitalize(text: string): string {
    return text.charAt(0).toUpperCase() + text.slice(1);
}
