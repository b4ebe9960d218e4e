import type {Random} from "../../random/Random.js";
import type {CorpusProblem, ProblemRendering} from "./CorpusProblem.js";
import type {CorpusLanguage} from "./CorpusSample.js";
import {integerBetween} from "./integerBetween.js";
import {pickOne} from "./pickOne.js";

/** Language-neutral argument values, so every rendering of a problem expects the very same JSON line. */
const queries = [
    "red shoes",
    "cheap flights",
    "pasta recipes",
    "train times",
    "used bikes",
    "guitar lessons",
    "hotel rooms",
    "garden tools"
];
/** Includes 50 next to 5 and 500: the "limit": 50 → 500 flip of the drift article is one digit apart. */
const limits = [5, 10, 20, 25, 50, 100, 500];
const cities = ["Paris", "Tokyo", "Berlin", "Madrid", "Lima", "Oslo", "Cairo", "Toronto"];
const currencies = ["USD", "EUR", "JPY", "GBP"];

type ToolCall =
    | {name: "search"; arguments: {query: string; limit: number}}
    | {name: "get_weather"; arguments: {city: string; days: number}}
    | {name: "set_timer"; arguments: {minutes: number}}
    | {name: "convert_currency"; arguments: {amount: number; from: string; to: string}};

const labels: Record<CorpusLanguage, {request: string; call: string}> = {
    en: {request: "Request", call: "Call"},
    es: {request: "Petición", call: "Llamada"},
    de: {request: "Anfrage", call: "Aufruf"},
    ja: {request: "依頼", call: "呼び出し"}
};

const requests: Record<CorpusLanguage, (call: ToolCall) => string> = {
    en: (call) => {
        switch (call.name) {
            case "search":
                return `Search for "${call.arguments.query}" and show ${call.arguments.limit} results.`;
            case "get_weather":
                return `What is the weather in ${call.arguments.city} for the next ${call.arguments.days} days?`;
            case "set_timer":
                return `Set a timer for ${call.arguments.minutes} minutes.`;
            case "convert_currency":
                return `Convert ${call.arguments.amount} ${call.arguments.from} to ${call.arguments.to}.`;
        }
    },
    es: (call) => {
        switch (call.name) {
            case "search":
                return `Busca "${call.arguments.query}" y muestra ${call.arguments.limit} resultados.`;
            case "get_weather":
                return `¿Qué tiempo hará en ${call.arguments.city} los próximos ${call.arguments.days} días?`;
            case "set_timer":
                return `Pon un temporizador de ${call.arguments.minutes} minutos.`;
            case "convert_currency":
                return `Convierte ${call.arguments.amount} ${call.arguments.from} a ${call.arguments.to}.`;
        }
    },
    de: (call) => {
        switch (call.name) {
            case "search":
                return `Suche nach "${call.arguments.query}" und zeige ${call.arguments.limit} Ergebnisse.`;
            case "get_weather":
                return `Wie wird das Wetter in ${call.arguments.city} in den nächsten ${call.arguments.days} Tagen?`;
            case "set_timer":
                return `Stelle einen Timer auf ${call.arguments.minutes} Minuten.`;
            case "convert_currency":
                return `Rechne ${call.arguments.amount} ${call.arguments.from} in ${call.arguments.to} um.`;
        }
    },
    ja: (call) => {
        switch (call.name) {
            case "search":
                return `「${call.arguments.query}」を検索して、結果を${call.arguments.limit}件表示してください。`;
            case "get_weather":
                return `${call.arguments.city}の今後${call.arguments.days}日間の天気を教えてください。`;
            case "set_timer":
                return `${call.arguments.minutes}分のタイマーをセットしてください。`;
            case "convert_currency":
                return `${call.arguments.amount} ${call.arguments.from}を${call.arguments.to}に換算してください。`;
        }
    }
};

/**
 * A natural-language request and the one-line JSON tool call that serves it, e.g.
 * `{"name":"search","arguments":{"query":"red shoes","limit":50}}`. Argument values are the same
 * in every language (quoted search terms, city names and currency codes in Latin script), so the
 * four renderings are parallel and expect an identical call: a wrong digit is a wrong answer.
 */
export function toolCallProblem(random: Random): CorpusProblem {
    const call = drawCall(random);
    const json = JSON.stringify(call);
    const renderings: Partial<Record<CorpusLanguage, ProblemRendering>> = {};
    for (const language of Object.keys(labels) as CorpusLanguage[]) {
        const label = labels[language];
        renderings[language] = {
            prompt: `${label.request}: ${requests[language](call)}\n${label.call}:`,
            answer: ` ${json}`,
            reference: json
        };
    }
    return {key: json, renderings};
}

function drawCall(random: Random): ToolCall {
    switch (integerBetween(random, 0, 3)) {
        case 0:
            return {name: "search", arguments: {query: pickOne(random, queries), limit: pickOne(random, limits)}};
        case 1:
            return {name: "get_weather", arguments: {city: pickOne(random, cities), days: integerBetween(random, 2, 7)}};
        case 2:
            return {name: "set_timer", arguments: {minutes: integerBetween(random, 2, 60)}};
        default: {
            const from = pickOne(random, currencies);
            const to = pickOne(
                random,
                currencies.filter((currency) => currency !== from)
            );
            return {name: "convert_currency", arguments: {amount: 5 * integerBetween(random, 1, 40), from, to}};
        }
    }
}
