import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {ggufChatTemplate} from "./ggufChatTemplate.js";

// Qwen2.5's ChatML template, reduced to its message loop (the full one adds tool handling).
const chatMl = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
// Llama-2 style: BOS inside the template, and an exception for an unsupported role.
const llama2 = "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}{{ raise_exception('no system turns') }}{% endif %}[INST] {{ message['content'] }} [/INST]{% endfor %}";

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
        const messages = [{role: "system" as const, content: "Be brief."}, {role: "user" as const, content: [{type: "text" as const, text: "Hi"}, {type: "text" as const, text: "!"}]}];
        expect(template.renderText(messages)).toBe("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
        template.render(messages);
        expect(backend.seen).toEqual([template.renderText(messages)]);
        expect(template.name).toBe("gguf");
    });

    it("passes bos_token and turns a template's raise_exception into a 400-style input error", () => {
        const template = ggufChatTemplate(recordingBackend(), llama2, {bos: "<s>", eos: "</s>"});
        expect(template.renderText([{role: "user", content: "Hi"}])).toBe("<s>[INST] Hi [/INST]");
        expect(() => template.render([{role: "system", content: "x"}])).toThrow(InvalidInputError);
        expect(() => template.render([{role: "system", content: "x"}])).toThrow(/messages: the model's chat template rejected/);
    });

    it("refuses a template that does not parse, or a backend without special-token tokenization", () => {
        expect(() => ggufChatTemplate(recordingBackend(), "{% for x in %}")).toThrow(/tokenizer\.chat_template: the GGUF chat template does not parse/);
        expect(() => ggufChatTemplate(BigramBackend.random(1, 8), chatMl)).toThrow(/cannot tokenize special tokens/);
    });
});
