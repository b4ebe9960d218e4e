import {Template} from "@huggingface/jinja";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {InvalidInputError} from "../errors.js";
import {type ChatTemplate, messageText} from "./ChatTemplate.js";
import type {ChatMessageInput} from "./chatCompletionRequestSchema.js";

export interface GgufChatTemplate extends ChatTemplate {
    /** The prompt text the template renders (before tokenization), for tests and debugging. */
    renderText(messages: readonly ChatMessageInput[]): string;
}

/**
 * The model's own chat template (GGUF `tokenizer.chat_template`, a Jinja template as in Hugging
 * Face tokenizers), rendered with @huggingface/jinja — the renderer node-llama-cpp itself uses — with
 * `add_generation_prompt: true`, and tokenized with special-token parsing ON so its control tokens
 * become the model's special ids. User text inside the messages is part of the rendered string, as in
 * every template-based server (vLLM, llama-server). A template that does not parse is an error at
 * start-up, not at the first request.
 */
export function ggufChatTemplate(
    target: ModelBackend,
    source: string,
    specialTokens: {bos?: string; eos?: string} = {}
): GgufChatTemplate {
    const tokenize = target.tokenizeWithSpecialTokens?.bind(target);
    if (tokenize == null)
        throw new InvalidInputError("this backend cannot tokenize special tokens, which a GGUF chat template needs", "chatTemplate");
    let template: Template;
    try {
        template = new Template(source);
    } catch (error) {
        throw new InvalidInputError(`the GGUF chat template does not parse: ${(error as Error).message}`, "tokenizer.chat_template");
    }
    const renderText = (messages: readonly ChatMessageInput[]): string => {
        try {
            return template.render({
                messages: messages.map((message) => ({role: message.role === "developer" ? "system" : message.role, content: messageText(message)})),
                add_generation_prompt: true,
                bos_token: specialTokens.bos ?? "",
                eos_token: specialTokens.eos ?? ""
            });
        } catch (error) {
            // Templates raise for conversations they do not support (e.g. a system turn), a client error.
            throw new InvalidInputError(`the model's chat template rejected these messages: ${(error as Error).message}`, "messages");
        }
    };
    return {
        name: "gguf",
        renderText,
        render: (messages) => tokenize(renderText(messages))
    };
}
