import type {Random} from "../../random/Random.js";
import type {CorpusProblem, ProblemRendering} from "./CorpusProblem.js";
import type {CorpusLanguage} from "./CorpusSample.js";
import {integerBetween} from "./integerBetween.js";

type Template = "add" | "subtract" | "multiply" | "twoStep";
const templates: readonly Template[] = ["add", "subtract", "multiply", "twoStep"];

/** Parallel name lists: index i is the same person in every language; even indices are male. */
const names: Record<CorpusLanguage, readonly string[]> = {
    en: ["Tom", "Anna", "Sam", "Lily", "Ben", "Emma"],
    es: ["Pablo", "Lucía", "Diego", "Sofía", "Mateo", "Carmen"],
    de: ["Lukas", "Lena", "Jonas", "Mia", "Felix", "Hanna"],
    ja: ["たろう", "はな", "けん", "ゆき", "そうた", "さくら"]
};

/** Parallel item lists; Spanish needs the grammatical gender for "cuántos/cuántas". Japanese items all count with 個. */
const items: Record<CorpusLanguage, readonly string[]> = {
    en: ["apples", "cookies", "marbles", "candies", "balls", "eggs"],
    es: ["manzanas", "galletas", "canicas", "caramelos", "pelotas", "huevos"],
    de: ["Äpfel", "Kekse", "Murmeln", "Bonbons", "Bälle", "Eier"],
    ja: ["りんご", "クッキー", "ビー玉", "あめ", "ボール", "たまご"]
};
const spanishFeminine: readonly boolean[] = [true, true, true, false, true, false];

const labels: Record<CorpusLanguage, {question: string; answer: string}> = {
    en: {question: "Question", answer: "Answer"},
    es: {question: "Pregunta", answer: "Respuesta"},
    de: {question: "Frage", answer: "Antwort"},
    ja: {question: "問題", answer: "答え"}
};

interface Numbers {
    readonly a: number;
    readonly b: number;
    readonly c: number;
}

/**
 * A one- or two-step word problem with small numbers (every count ≥ 2, so no language needs a
 * singular form; results 1..40), rendered in English, Spanish, German and Japanese with the same
 * names, items and numbers. The answer is the working and a GSM8K-style final line, identical in
 * every language: " 3 + 4 = 7\n#### 7".
 */
export function arithmeticProblem(random: Random): CorpusProblem {
    const template = templates[integerBetween(random, 0, templates.length - 1)];
    const person = integerBetween(random, 0, names.en.length - 1);
    const item = integerBetween(random, 0, items.en.length - 1);
    const numbers = drawNumbers(template, random);
    const {working, result} = solve(template, numbers);
    const answer = ` ${working}\n#### ${result}`;
    const renderings: Partial<Record<CorpusLanguage, ProblemRendering>> = {};
    for (const language of Object.keys(names) as CorpusLanguage[]) {
        const question = questionText(language, template, person, item, numbers);
        const label = labels[language];
        renderings[language] = {prompt: `${label.question}: ${question}\n${label.answer}:`, answer, reference: String(result)};
    }
    return {key: `${template}:${person}:${item}:${numbers.a}:${numbers.b}:${numbers.c}`, renderings};
}

function drawNumbers(template: Template, random: Random): Numbers {
    switch (template) {
        case "add":
            return {a: integerBetween(random, 2, 20), b: integerBetween(random, 2, 20), c: 0};
        case "subtract": {
            const a = integerBetween(random, 3, 20);
            return {a, b: integerBetween(random, 2, a - 1), c: 0};
        }
        case "multiply":
            return {a: integerBetween(random, 2, 6), b: integerBetween(random, 2, 6), c: 0};
        case "twoStep": {
            const a = integerBetween(random, 2, 12);
            const b = integerBetween(random, 2, 12);
            return {a, b, c: integerBetween(random, 2, a + b - 1)};
        }
    }
}

function solve(template: Template, {a, b, c}: Numbers): {working: string; result: number} {
    switch (template) {
        case "add":
            return {working: `${a} + ${b} = ${a + b}`, result: a + b};
        case "subtract":
            return {working: `${a} - ${b} = ${a - b}`, result: a - b};
        case "multiply":
            return {working: `${a} * ${b} = ${a * b}`, result: a * b};
        case "twoStep":
            return {working: `${a} + ${b} = ${a + b}, ${a + b} - ${c} = ${a + b - c}`, result: a + b - c};
    }
}

interface QuestionParts extends Numbers {
    readonly name: string;
    readonly thing: string;
    readonly male: boolean;
    readonly feminineItem: boolean;
}

/** Per language, the four templates' question text. */
const questions: Record<CorpusLanguage, (parts: QuestionParts) => Record<Template, string>> = {
    en: ({name, thing, male, a, b, c}) => {
        const pronoun = male ? "He" : "She";
        return {
            add: `${name} has ${a} ${thing}. ${pronoun} buys ${b} more. How many ${thing} does ${name} have now?`,
            subtract: `${name} has ${a} ${thing}. ${pronoun} gives ${b} to a friend. How many ${thing} does ${name} have left?`,
            multiply: `${name} buys ${a} bags with ${b} ${thing} in each bag. How many ${thing} does ${name} buy?`,
            twoStep: `${name} has ${a} ${thing}. ${pronoun} buys ${b} more and gives away ${c}. How many ${thing} does ${name} have now?`
        };
    },
    es: ({name, thing, feminineItem, a, b, c}) => {
        const howMany = feminineItem ? "Cuántas" : "Cuántos";
        return {
            add: `${name} tiene ${a} ${thing}. Compra ${b} más. ¿${howMany} ${thing} tiene ${name} ahora?`,
            subtract: `${name} tiene ${a} ${thing}. Le da ${b} a un amigo. ¿${howMany} ${thing} le quedan a ${name}?`,
            multiply: `${name} compra ${a} bolsas con ${b} ${thing} en cada bolsa. ¿${howMany} ${thing} compra ${name}?`,
            twoStep: `${name} tiene ${a} ${thing}. Compra ${b} más y regala ${c}. ¿${howMany} ${thing} tiene ${name} ahora?`
        };
    },
    de: ({name, thing, male, a, b, c}) => {
        const pronoun = male ? "Er" : "Sie";
        return {
            add: `${name} hat ${a} ${thing}. ${pronoun} kauft ${b} dazu. Wie viele ${thing} hat ${name} jetzt?`,
            subtract: `${name} hat ${a} ${thing}. ${pronoun} gibt einem Freund ${b} davon. Wie viele ${thing} hat ${name} noch?`,
            multiply: `${name} kauft ${a} Tüten mit je ${b} ${thing}. Wie viele ${thing} kauft ${name}?`,
            twoStep: `${name} hat ${a} ${thing}. ${pronoun} kauft ${b} dazu und verschenkt ${c}. Wie viele ${thing} hat ${name} jetzt?`
        };
    },
    ja: ({name, thing, a, b, c}) => ({
        add: `${name}は${thing}を${a}個持っています。${b}個買いました。${thing}は全部で何個ですか？`,
        subtract: `${name}は${thing}を${a}個持っています。友だちに${b}個あげました。${thing}は何個残っていますか？`,
        multiply: `${name}は${thing}が${b}個ずつ入った袋を${a}袋買いました。${thing}は全部で何個ですか？`,
        twoStep: `${name}は${thing}を${a}個持っています。${b}個買って、${c}個あげました。${thing}は今何個ありますか？`
    })
};

function questionText(language: CorpusLanguage, template: Template, person: number, item: number, numbers: Numbers): string {
    return questions[language]({
        ...numbers,
        name: names[language][person],
        thing: items[language][item],
        male: person % 2 === 0,
        feminineItem: spanishFeminine[item]
    })[template];
}
