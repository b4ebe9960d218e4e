import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {MalformedRowError} from "../errors.js";
import {loadJsonlBattery, parseJsonlBattery} from "./loadJsonlBattery.js";
import {scoreItem} from "./scorers/scoreItem.js";

function errorOf(action: () => unknown): MalformedRowError {
    try {
        action();
    } catch (error) {
        if (error instanceof MalformedRowError) return error;
        throw error;
    }
    throw new Error("expected a MalformedRowError");
}

describe("generic JSONL battery", () => {
    let directory: string;
    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), "specgate-battery-"));
    });
    afterAll(async () => {
        await rm(directory, {recursive: true, force: true});
    });

    it("reads prompt and messages items and picks a default scorer", async () => {
        const path = join(directory, "battery.jsonl");
        await writeFile(
            path,
            [
                JSON.stringify({id: "a", task: "tool", prompt: "Call the weather tool.", reference: '{"city":"Paris"}'}),
                "",
                JSON.stringify({
                    id: "b",
                    task: "chat",
                    messages: [
                        {role: "system", content: "Be brief."},
                        {role: "user", content: "Hi"}
                    ]
                }),
                JSON.stringify({id: "c", task: "math", prompt: "2+2?", reference: "4", scorer: "numeric", language: "en"})
            ].join("\n")
        );
        const items = await loadJsonlBattery(path);
        expect(items.map((item) => item.scorer)).toEqual(["exact-match", "none", "numeric"]);
        expect(items[1].messages).toHaveLength(2);
    });

    it("infers a scorer from the reference when the item names none, and a numeric reference is its number", () => {
        const rows = [
            {id: "gsm", task: "qa", prompt: "3+2?", reference: "3 + 2 = 5\n#### 5"},
            {id: "plain", task: "qa", prompt: "3+2?", reference: "1,205"},
            {id: "copy", task: "copy", prompt: "Repeat: 755 13\nEcho:", reference: "755 13"},
            {
                id: "mc",
                task: "qa",
                prompt: "Pick",
                reference: "B",
                choices: [
                    {label: "A", text: "cat"},
                    {label: "B", text: "dog"}
                ]
            },
            {id: "text", task: "qa", prompt: "Capital of France?", reference: "Paris"},
            {id: "explicit", task: "qa", prompt: "3+2?", reference: "The answer is 5.", scorer: "numeric"}
        ];
        const items = parseJsonlBattery(rows.map((row) => JSON.stringify(row)).join("\n"), "x.jsonl");
        expect(items.map((item) => [item.scorer, item.reference])).toEqual([
            ["numeric", "5"],
            ["exact-match", "1,205"],
            ["exact-match", "755 13"],
            ["multiple-choice", "B"],
            ["exact-match", "Paris"],
            ["numeric", "5"]
        ]);
        // The case that used to fail silently: a right answer against a "#### 5" reference.
        expect(scoreItem(items[0], "3 + 2 = 5").pass).toBe(true);
        expect(scoreItem(items[3], "B. dog").pass).toBe(true);
        expect(
            errorOf(() => parseJsonlBattery(`{"id":"a","task":"t","prompt":"p","reference":"five","scorer":"numeric"}`, "x.jsonl")).message
        ).toMatch(/^x\.jsonl:1: scorer "numeric" needs a number in "reference", got "five"/);
    });

    it("names the file and line of a malformed row", () => {
        const good = JSON.stringify({id: "a", task: "t", prompt: "p"});
        const notJson = errorOf(() => parseJsonlBattery(`${good}\n{"id": "b",\n`, "x.jsonl"));
        expect(notJson).toMatchObject({file: "x.jsonl", line: 2});
        expect(notJson.message).toMatch(/^x\.jsonl:2: not valid JSON/);
        expect(errorOf(() => parseJsonlBattery(`${good}\n\n{"id":"b","task":"t"}`, "x.jsonl"))).toMatchObject({line: 3});
        expect(
            errorOf(() => parseJsonlBattery(`{"id":"b","task":"t","prompt":"p","messages":[{"role":"user","content":"c"}]}`, "x.jsonl"))
                .message
        ).toMatch(/exactly one of "prompt" and "messages"/);
        expect(errorOf(() => parseJsonlBattery(`${good}\n${good}`, "x.jsonl")).message).toMatch(
            /line 2: duplicate id "a" \(first on line 1\)|duplicate id "a"/
        );
        expect(errorOf(() => parseJsonlBattery(`{"id":"a","task":"t","prompt":"p","promt":"q"}`, "x.jsonl")).message).toMatch(
            /^x\.jsonl:1: promt: unknown field \(an item has id, task, /
        );
        expect(errorOf(() => parseJsonlBattery(`{"id":"a","task":"t","prompt":"p","scorer":"numeric"}`, "x.jsonl")).message).toMatch(
            /needs a "reference"/
        );
        expect(
            errorOf(() => parseJsonlBattery(`{"id":"a","task":"t","messages":[{"role":"robot","content":"c"}]}`, "x.jsonl")).message
        ).toMatch(/messages\.0\.role/);
    });

    it("reads chat items with tools, tool calls and tool results, and names what is wrong in them", () => {
        const messages = [
            {role: "user", content: "Weather in 東京?"},
            {
                role: "assistant",
                content: "",
                tool_calls: [{id: "c1", type: "function", function: {name: "get_weather", arguments: '{"city":"東京"}'}}]
            },
            {role: "tool", tool_call_id: "c1", content: "晴れ"}
        ];
        const tools = [{type: "function", function: {name: "get_weather", parameters: {type: "object"}}}];
        const [item] = parseJsonlBattery(JSON.stringify({id: "a", task: "tool", messages, tools}), "x.jsonl");
        expect(item.messages).toEqual(messages);
        expect(item.tools).toEqual(tools);
        const row = (fields: object) => JSON.stringify({id: "a", task: "t", ...fields});
        expect(errorOf(() => parseJsonlBattery(row({prompt: "p", tools}), "x.jsonl")).message).toMatch(
            /^x\.jsonl:1: "tools" needs "messages"/
        );
        const badArguments = [
            messages[0],
            {...messages[1], tool_calls: [{id: "c", type: "function", function: {name: "f", arguments: "{city"}}]}
        ];
        expect(errorOf(() => parseJsonlBattery(row({messages: badArguments}), "x.jsonl")).message).toMatch(
            /messages\.1\.tool_calls\.0\.function\.arguments: is not JSON/
        );
        expect(errorOf(() => parseJsonlBattery(row({messages: [{role: "tool", content: "r"}]}), "x.jsonl")).message).toMatch(
            /messages\.0\.tool_call_id/
        );
        expect(
            errorOf(() => parseJsonlBattery(row({messages: [{role: "user", content: "r", tool_call_id: "c"}]}), "x.jsonl")).message
        ).toMatch(/x\.jsonl:1: messages\.0\.tool_call_id: unknown field$/);
    });
});
