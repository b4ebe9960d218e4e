import {describe, expect, it} from "vitest";
import {hermesToolCalls, openAiToolCalls, ToolCallStream, toolCallSyntaxOf} from "./toolCalls.js";

const call = (name: string, args: unknown) => `<tool_call>\n${JSON.stringify({name, arguments: args})}\n</tool_call>`;

describe("hermesToolCalls", () => {
    it("reads each <tool_call> block into a name and JSON arguments, and keeps the rest as content", () => {
        expect(hermesToolCalls.parse(call("get_weather", {city: "東京", days: 2}))).toEqual({
            content: null,
            calls: [{name: "get_weather", arguments: '{"city":"東京","days":2}'}]
        });
        expect(hermesToolCalls.parse(`Let me look both up.\n${call("a", {})}\n${call("b", {x: [1, null]})}`)).toEqual({
            content: "Let me look both up.",
            calls: [
                {name: "a", arguments: "{}"},
                {name: "b", arguments: '{"x":[1,null]}'}
            ]
        });
        // Arguments given as JSON text stay that text; missing ones are {}.
        expect(hermesToolCalls.parse('<tool_call>{"name": "f", "arguments": "{\\"q\\": 1}"}</tool_call>').calls).toEqual([
            {name: "f", arguments: '{"q": 1}'}
        ]);
        expect(hermesToolCalls.parse('<tool_call>{"name": "f"}</tool_call>').calls).toEqual([{name: "f", arguments: "{}"}]);
    });

    it("leaves a block it cannot read in the content: not JSON, no name, not an object, or not closed", () => {
        for (const text of [
            '<tool_call>{"name": "f", </tool_call>',
            '<tool_call>{"arguments": {}}</tool_call>',
            "<tool_call>[1]</tool_call>",
            `x <tool_call>${JSON.stringify({name: "f", arguments: {}})}`
        ])
            expect(hermesToolCalls.parse(text)).toEqual({content: text.trim(), calls: []});
        expect(hermesToolCalls.parse(`<tool_call>nope</tool_call>${call("g", {})}`)).toEqual({
            content: "<tool_call>nope</tool_call>",
            calls: [{name: "g", arguments: "{}"}]
        });
    });

    it("is the syntax of templates that write <tool_call>, as llama.cpp detects Hermes 2 Pro's", () => {
        expect(
            toolCallSyntaxOf("{%- for tool_call in message.tool_calls %}<tool_call>\n{{ tool_call | tojson }}\n</tool_call>{% endfor %}")
        ).toBe(hermesToolCalls);
        expect(toolCallSyntaxOf("{{ bos_token }}{% for message in messages %}{{ message.content }}{% endfor %}")).toBeUndefined();
    });
});

describe("ToolCallStream", () => {
    const withCalls = `Checking.\n\n${call("get_weather", {city: "Zürich"})}`;
    const withoutCalls = "a <tool or <tool_cal> is not a call \n <tool_call";

    /** Every way of cutting `text` into pieces of `size` characters. */
    const pieces = (text: string, size: number) =>
        Array.from({length: Math.ceil(text.length / size)}, (_value, index) => text.slice(index * size, (index + 1) * size));

    it("sends the text before a call as it comes, holds the call back, and gives it whole at the end, however the text is cut", () => {
        for (let size = 1; size <= withCalls.length; size++) {
            const stream = new ToolCallStream(hermesToolCalls);
            const sent = pieces(withCalls, size)
                .map((piece) => stream.push(piece))
                .join("");
            expect(sent).toBe("Checking.");
            expect(stream.finish()).toEqual({text: "", calls: [{name: "get_weather", arguments: '{"city":"Zürich"}'}]});
        }
    });

    it("gives back every character of a reply without calls, in order, however the text is cut", () => {
        for (let size = 1; size <= withoutCalls.length; size++) {
            const stream = new ToolCallStream(hermesToolCalls);
            const sent = pieces(withoutCalls, size)
                .map((piece) => stream.push(piece))
                .join("");
            const {text, calls} = stream.finish();
            expect(calls).toEqual([]);
            expect(sent + text).toBe(withoutCalls);
        }
    });
});

describe("openAiToolCalls", () => {
    it("gives each call OpenAI's shape and an id of its own", () => {
        const calls = openAiToolCalls([
            {name: "a", arguments: "{}"},
            {name: "a", arguments: "{}"}
        ]);
        expect(calls).toEqual([
            {id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: "function", function: {name: "a", arguments: "{}"}},
            {id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: "function", function: {name: "a", arguments: "{}"}}
        ]);
        expect(calls[0]!.id).not.toBe(calls[1]!.id);
    });
});
