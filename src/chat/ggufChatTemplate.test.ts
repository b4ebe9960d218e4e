import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {defaultChatTemplate} from "./ChatTemplate.js";
import type {ChatMessageInput} from "./chatMessages.js";
import {ggufChatTemplate} from "./ggufChatTemplate.js";

// Qwen2.5's ChatML template, reduced to its message loop (the full one adds tool handling).
const chatMl =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
// Llama-2 style: BOS inside the template, and an exception for an unsupported role.
const llama2 =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}{{ raise_exception('no system turns') }}{% endif %}[INST] {{ message['content'] }} [/INST]{% endfor %}";

/** A backend that records what it was asked to tokenize with special tokens. */
function recordingBackend() {
    const backend = BigramBackend.random(1, 8) as BigramBackend & {tokenizeWithSpecialTokens(text: string): number[]; seen: string[]};
    backend.seen = [];
    backend.tokenizeWithSpecialTokens = (text: string) => {
        backend.seen.push(text);
        return backend.tokenize(text);
    };
    return backend;
}

describe("ggufChatTemplate", () => {
    it("renders ChatML with the generation prompt and tokenizes with special tokens", () => {
        const backend = recordingBackend();
        const template = ggufChatTemplate(backend, chatMl);
        const messages = [
            {role: "system" as const, content: "Be brief."},
            {
                role: "user" as const,
                content: [
                    {type: "text" as const, text: "Hi"},
                    {type: "text" as const, text: "!"}
                ]
            }
        ];
        // Text parts are joined with "\n", as llama.cpp and vLLM give them to a string-content template.
        expect(template.renderText(messages)).toBe(
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi\n!<|im_end|>\n<|im_start|>assistant\n"
        );
        template.render(messages);
        expect(backend.seen).toEqual([template.renderText(messages)]);
        expect(template.name).toBe("gguf");
    });

    it("passes bos_token and turns a template's raise_exception into a 400-style input error", () => {
        const template = ggufChatTemplate(recordingBackend(), llama2, {bos: "<s>", eos: "</s>"});
        // The model adds BOS, so the BOS text the template writes is cut and the engine puts the token back (as llama.cpp does).
        expect(template.renderText([{role: "user", content: "Hi"}])).toBe("[INST] Hi [/INST]");
        expect(() => template.render([{role: "system", content: "x"}])).toThrow(InvalidInputError);
        expect(() => template.render([{role: "system", content: "x"}])).toThrow(/messages: the model's chat template rejected/);
    });

    it("refuses a template that does not parse, or a backend without special-token tokenization", () => {
        expect(() => ggufChatTemplate(recordingBackend(), "{% for x in %}")).toThrow(
            /tokenizer\.chat_template: the GGUF chat template does not parse/
        );
        expect(() => ggufChatTemplate(BigramBackend.random(1, 8), chatMl)).toThrow(/cannot tokenize special tokens/);
    });

    // A template that writes tool calls with their arguments as given, and the tools' names.
    const toolTemplate =
        "{% if tools %}{% for tool in tools %}[{{ tool.function.name }}:{{ tool.function.description }}:{{ tool.function.parameters | tojson }}]{% endfor %}{% endif %}" +
        "{% for message in messages %}{{ message.role }}({{ message.content }}{% if message.tool_call_id %}#{{ message.tool_call_id }}{% endif %})" +
        "{% if message.tool_calls %}{% for call in message.tool_calls %}<{{ call.id }} {{ call.function.name }} {% if call.function.arguments is string %}S{{ call.function.arguments }}" +
        "{% else %}O{{ call.function.arguments | tojson }}{% endif %}>{% endfor %}{% endif %}{% endfor %}";
    const toolMessages: ChatMessageInput[] = [
        {role: "user", content: "hi"},
        {
            role: "assistant",
            content: null,
            tool_calls: [{id: "c1", type: "function", function: {name: "f", arguments: '{"a":[1,2.5,"東"]}'}}]
        },
        {role: "tool", tool_call_id: "c1", content: "ok"}
    ];

    it("passes tools, tool calls (arguments as objects for a template that reads them) and tool results as llama.cpp does", () => {
        const template = ggufChatTemplate(recordingBackend(), toolTemplate);
        expect(template.objectArguments).toBe(true);
        expect(template.renderText(toolMessages, [{type: "function", function: {name: "f"}}])).toBe(
            '[f::{}]user(hi)assistant()<c1 f O{"a": [1, 2.5, "東"]}>tool(ok#c1)'
        );
        expect(() =>
            template.renderText([
                toolMessages[0],
                {role: "assistant", content: "", tool_calls: [{id: "c", type: "function", function: {name: "f", arguments: "{oops"}}]}
            ])
        ).toThrow(/messages\[1\]\.tool_calls\[0\]\.function\.arguments: is not JSON/);
    });

    it("keeps arguments as JSON text for a template that never reads an object argument's fields", () => {
        const template = ggufChatTemplate(recordingBackend(), toolTemplate.replace("O{{ call.function.arguments | tojson }}", "O"));
        expect(template.objectArguments).toBe(false);
        expect(template.renderText(toolMessages)).toBe('user(hi)assistant()<c1 f S{"a":[1,2.5,"東"]}>tool(ok#c1)');
    });

    it("the plain chat format refuses tools, tool calls and tool results with a 400-style error naming where", () => {
        const template = defaultChatTemplate(BigramBackend.random(1, 8));
        expect(() => template.render([toolMessages[0]], [{type: "function", function: {name: "f"}}])).toThrow(
            /^tools: the plain chat format .* cannot render tools/
        );
        expect(() => template.render(toolMessages)).toThrow(/^messages\[1\]: the plain chat format .* cannot render tool calls/);
        expect(() => template.render([toolMessages[0], toolMessages[2]])).toThrow(/^messages\[1\]: .* cannot render tool results/);
        expect(template.render([toolMessages[0]], [])).toEqual(BigramBackend.random(1, 8).tokenize("User: hi\nAssistant:"));
    });
});
