import {Template} from "@huggingface/jinja";
import {addsBos} from "../backend/addsBos.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {GgufReader} from "../gguf/GgufReader.js";
import {InvalidInputError} from "../errors.js";
import {type ChatTemplate, messageText} from "./ChatTemplate.js";
import type {ChatMessageInput, ChatToolInput} from "./chatMessages.js";
import {toolCallSyntaxOf} from "./toolCalls.js";

export interface GgufChatTemplate extends ChatTemplate {
    /** The prompt text the template renders (before tokenization), for tests and debugging. */
    renderText(messages: readonly ChatMessageInput[], tools?: readonly ChatToolInput[] | null): string;
    /**
     * Whether tool-call arguments reach the template as objects (parsed from the JSON text) rather
     * than as the JSON text itself: true when the template reads a field of an object argument.
     */
    readonly objectArguments: boolean;
    /**
     * How message content reaches the template, by llama.cpp's content probes: "string" (text parts
     * joined with "\n"), "typed" (every content a list of {type: "text", text} parts) or "both"
     * (as the client sent it).
     */
    readonly contentForm: ContentForm;
}

export type ContentForm = "string" | "typed" | "both";

/** The variables a template renders with, for messages and tools in the template's own shape. */
type TemplateContext = (messages: readonly Record<string, unknown>[], tools: readonly Record<string, unknown>[]) => Record<string, unknown>;

/**
 * The model's own chat template (GGUF `tokenizer.chat_template`, a Jinja template as in Hugging
 * Face tokenizers), rendered with @huggingface/jinja — the renderer node-llama-cpp itself uses — with
 * `add_generation_prompt: true`, and tokenized with special-token parsing ON so its control tokens
 * become the model's special ids. User text inside the messages is part of the rendered string, as in
 * every template-based server (vLLM, llama-server). A template that does not parse is an error at
 * start-up, not at the first request.
 *
 * The template sees what llama.cpp's common/chat.cpp gives it, so the prompt equals llama-server's:
 * messages as `{role, content, name?, tool_call_id?, tool_calls?}` (`developer` becomes `system`,
 * a missing content is ""), each tool call as `{type: "function", function: {name, arguments}, id?}`,
 * `tools` (only when non-empty) as `{type: "function", function: {name, description, parameters}}`
 * (description "" and parameters {} when absent), and `date_string` / `datetime`. Arguments are
 * parsed from their JSON text into an object when the template reads an object argument's fields
 * (llama.cpp's `supports_object_arguments` probe; Qwen's `tool_call.arguments | tojson`), and stay
 * text otherwise. As llama.cpp does, a leading BOS text is cut from the rendering when the model adds
 * BOS itself (the engine puts the BOS token back), and a trailing EOS text when it adds EOS.
 */
export function ggufChatTemplate(target: ModelBackend, source: string, specialTokens: {bos?: string; eos?: string} = {}): GgufChatTemplate {
    const tokenize = target.tokenizeWithSpecialTokens?.bind(target);
    if (tokenize == null)
        throw new InvalidInputError("this backend cannot tokenize special tokens, which a GGUF chat template needs", "chatTemplate");
    let template: Template;
    try {
        template = new Template(source);
    } catch (error) {
        throw new InvalidInputError(`the GGUF chat template does not parse: ${(error as Error).message}`, "tokenizer.chat_template");
    }
    const context: TemplateContext = (messages, tools) => {
        const now = new Date();
        return {
            messages,
            bos_token: specialTokens.bos ?? "",
            eos_token: specialTokens.eos ?? "",
            ...(tools.length > 0 ? {tools} : {}),
            datetime: formatDate(now, false),
            date_string: formatDate(now, true),
            add_generation_prompt: true
        };
    };
    const objectArguments = readsObjectArguments(template, context);
    const contentForm = contentFormOf(template, context);
    const cutBos = addsBos(target) && (specialTokens.bos ?? "") !== "" ? specialTokens.bos! : undefined;
    const cutEos = target.vocabularyDescription?.().addEos === true && (specialTokens.eos ?? "") !== "" ? specialTokens.eos! : undefined;
    const cutSpecials = (text: string): string => {
        let result = text;
        if (cutBos !== undefined && result.startsWith(cutBos)) result = result.slice(cutBos.length);
        if (cutEos !== undefined && result.endsWith(cutEos)) result = result.slice(0, -cutEos.length);
        return result;
    };
    const renderText = (messages: readonly ChatMessageInput[], tools?: readonly ChatToolInput[] | null): string => {
        const templateMessages = messages.map((message, index) => templateMessage(message, index, objectArguments, contentForm));
        const templateTools = (tools ?? []).map((tool) => ({
            type: "function",
            function: {name: tool.function.name, description: tool.function.description ?? "", parameters: tool.function.parameters ?? {}}
        }));
        try {
            return cutSpecials(template.render(context(templateMessages, templateTools)));
        } catch (error) {
            // Templates raise for conversations they do not support (e.g. a system turn), a client error.
            throw new InvalidInputError(`the model's chat template rejected these messages: ${(error as Error).message}`, "messages");
        }
    };
    const toolCalls = toolCallSyntaxOf(source);
    return {
        name: "gguf",
        objectArguments,
        contentForm,
        renderText,
        render: (messages, tools) => tokenize(renderText(messages, tools)),
        ...(toolCalls !== undefined ? {toolCalls} : {})
    };
}

/**
 * The chat template of a GGUF file (`tokenizer.chat_template`, with its BOS/EOS token texts) for a
 * backend loaded from it, or undefined when the file has none.
 */
export function ggufFileChatTemplate(target: ModelBackend, path: string): GgufChatTemplate | undefined {
    const metadata = GgufReader.readHeader(path).metadata;
    const source = metadata.get("tokenizer.chat_template")?.value;
    if (typeof source !== "string") return undefined;
    const tokens = metadata.get("tokenizer.ggml.tokens")?.value;
    const items = typeof tokens === "object" && tokens != null && "items" in tokens ? tokens.items : undefined;
    const tokenText = (id: number | undefined): string | undefined => {
        const text = id == null ? undefined : items?.[id];
        return typeof text === "string" ? text : undefined;
    };
    return ggufChatTemplate(target, source, {bos: tokenText(target.bosToken), eos: tokenText(target.eosToken)});
}

/** One message as llama.cpp's `common_chat_msg::to_json_oaicompat` hands it to a template (same keys, same order). */
function templateMessage(
    message: ChatMessageInput,
    index: number,
    objectArguments: boolean,
    contentForm: ContentForm
): Record<string, unknown> {
    // llama.cpp's messages_inp_normalizer: text parts joined with "\n" for a string-only template, a
    // string wrapped as one text part for a typed-only one, content as sent when the template takes both.
    const parts = Array.isArray(message.content) ? message.content.map((part) => ({type: "text", text: part.text})) : undefined;
    const text = parts === undefined ? messageText(message) : parts.map((part) => part.text).join("\n");
    const content = contentForm === "string" ? text : contentForm === "typed" ? (parts ?? [{type: "text", text}]) : (parts ?? text);
    const result: Record<string, unknown> = {role: message.role === "developer" ? "system" : message.role, content};
    if (message.role !== "tool" && message.name != null && message.name !== "") result.name = message.name;
    if (message.role === "tool" && message.tool_call_id !== "") result.tool_call_id = message.tool_call_id;
    if (message.role === "assistant" && (message.tool_calls?.length ?? 0) > 0) {
        result.tool_calls = message.tool_calls!.map((call, callIndex) => {
            let args: unknown = call.function.arguments;
            if (objectArguments) {
                try {
                    args = JSON.parse(call.function.arguments);
                } catch (error) {
                    throw new InvalidInputError(
                        `is not JSON: ${(error as Error).message}`,
                        `messages[${index}].tool_calls[${callIndex}].function.arguments`
                    );
                }
            }
            return {type: "function", function: {name: call.function.name, arguments: args}, ...(call.id !== "" ? {id: call.id} : {})};
        });
    }
    return result;
}

/**
 * llama.cpp's object-arguments probe (common/jinja/caps.cpp): a user turn, an assistant turn calling
 * `tool1` with the object `{"arg": …}`, its result, a reply and a user turn; the template takes
 * object arguments when it uses the argument's value. llama.cpp tracks which values the template
 * reads; here the value is a marker that only appears in the output if it was used.
 */
function readsObjectArguments(template: Template, context: TemplateContext): boolean {
    const marker = "specgate-object-argument-probe-7f3a";
    const messages = [
        {role: "user", content: "User message"},
        {
            role: "assistant",
            content: "",
            tool_calls: [{id: "call00001", type: "function", function: {name: "tool1", arguments: {arg: marker}}}]
        },
        {role: "tool", content: "Tool response", tool_call_id: "call00001"},
        {role: "assistant", content: "The tool response was 'tool response'"},
        {role: "user", content: "User message"}
    ];
    const tools = [
        {
            name: "tool",
            type: "function",
            function: {
                name: "tool1",
                description: "Tool description",
                parameters: {type: "object", properties: {arg: {type: "string", description: "Arg description"}}, required: ["arg"]}
            }
        }
    ];
    try {
        return template.render(context(messages, tools)).includes(marker);
    } catch {
        return false;
    }
}

/**
 * llama.cpp's content probes (common/jinja/caps.cpp) on a single user turn: the template takes typed
 * content when a list of text parts renders and its text shows up (llama.cpp watches for the list
 * being indexed or iterated; here the part's marker must appear and no part key, which a template
 * that only stringifies the list would print), and string content when a plain string renders and
 * shows up. A template that takes neither form cleanly is treated as string-only, llama.cpp's default.
 */
function contentFormOf(template: Template, context: TemplateContext): ContentForm {
    const marker = "specgate-content-probe-5e1b";
    const rendered = (content: unknown): string | null => {
        try {
            return template.render(context([{role: "user", content}], []));
        } catch {
            return null;
        }
    };
    const asString = rendered(marker);
    const asParts = rendered([{type: "text", text: marker}]);
    const typed = asParts !== null && asParts.includes(marker) && !/["']?type["']?\s*[:=]/.test(asParts);
    const string = asString !== null && asString.includes(marker);
    return typed ? (string ? "both" : "typed") : "string";
}

const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** llama.cpp's `date_string` ("%d %b %Y", e.g. "05 Mar 2026") or `datetime` ("%b %d %Y"), in local time. */
function formatDate(date: Date, dayFirst: boolean): string {
    const day = String(date.getDate()).padStart(2, "0");
    const month = months[date.getMonth()];
    return dayFirst ? `${day} ${month} ${date.getFullYear()}` : `${month} ${day} ${date.getFullYear()}`;
}
