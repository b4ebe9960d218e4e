import {randomBytes} from "node:crypto";

/** A call the model wrote: the function's name and its arguments as JSON text (OpenAI's `function.arguments`). */
export interface ParsedToolCall {
    readonly name: string;
    readonly arguments: string;
}

/** A reply split into what the model said and the calls it made. */
export interface ParsedReply {
    /** The text outside the calls, trimmed; null when there is none (OpenAI's `content: null`). */
    readonly content: string | null;
    readonly calls: readonly ParsedToolCall[];
}

/** How a chat template's model writes tool calls in its output. */
export interface ToolCallSyntax {
    readonly name: string;
    /** The text that opens a call: streamed text from it on is held back until the reply is parsed. */
    readonly opening: string;
    parse(text: string): ParsedReply;
}

/**
 * Hermes 2 Pro's syntax, which Qwen 2.5 and Qwen 3 templates teach their models: each call is
 * `<tool_call>{"name": …, "arguments": {…}}</tool_call>`. A block whose body is not such an object is
 * left in the content, as llama.cpp's parser leaves text it cannot read.
 */
export const hermesToolCalls: ToolCallSyntax = {
    name: "hermes",
    opening: "<tool_call>",
    parse(text) {
        const calls: ParsedToolCall[] = [];
        const content = text
            .replace(/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g, (block, body: string) => {
                const call = readCall(body);
                if (call === undefined) return block;
                calls.push(call);
                return "";
            })
            .trim();
        return {content: content === "" ? null : content, calls};
    }
};

function readCall(body: string): ParsedToolCall | undefined {
    let value: unknown;
    try {
        value = JSON.parse(body);
    } catch {
        return undefined;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
    const {name, arguments: args} = value as {name?: unknown; arguments?: unknown};
    if (typeof name !== "string") return undefined;
    if (typeof args === "string") return {name, arguments: args};
    return {name, arguments: JSON.stringify(args ?? {})};
}

/**
 * The syntax a GGUF chat template teaches, found as llama.cpp finds it (common/chat.cpp: a template
 * that mentions `<tool_call>` is Hermes 2 Pro's); undefined for templates without a known syntax,
 * whose replies stay text.
 */
export function toolCallSyntaxOf(templateSource: string): ToolCallSyntax | undefined {
    return templateSource.includes("<tool_call>") ? hermesToolCalls : undefined;
}

/** The finish reason of a reply found to hold calls: "tool_calls", unless it ran out of tokens. */
export function finishWithToolCalls<Reason extends string>(reason: Reason): Reason | "tool_calls" {
    return reason === "length" ? reason : "tool_calls";
}

/** OpenAI's `tool_calls` entries, each with a fresh id. */
export function openAiToolCalls(calls: readonly ParsedToolCall[]): Array<{id: string; type: "function"; function: ParsedToolCall}> {
    return calls.map((call) => ({
        id: `call_${randomBytes(12).toString("hex")}`,
        type: "function",
        function: {name: call.name, arguments: call.arguments}
    }));
}

/**
 * Streamed text of a reply that may contain calls: text is passed on until a call may be starting
 * (the opening, or an end of the text that could begin it, or trailing white space that would
 * precede it), then held back; `finish` parses what was held.
 */
export class ToolCallStream {
    private held = "";
    private inCall = false;

    public constructor(private readonly syntax: ToolCallSyntax) {}

    /** The part of `text` (after what was held) that can be sent now. */
    public push(text: string): string {
        this.held += text;
        if (this.inCall) return "";
        const opening = this.held.indexOf(this.syntax.opening);
        this.inCall = opening >= 0;
        let keep = this.inCall ? opening : this.held.length;
        if (!this.inCall)
            for (let length = Math.min(this.syntax.opening.length - 1, this.held.length); length > 0; length--) {
                if (this.syntax.opening.startsWith(this.held.slice(-length))) {
                    keep = this.held.length - length;
                    break;
                }
            }
        while (keep > 0 && /\s/.test(this.held[keep - 1]!)) keep--;
        return this.release(keep);
    }

    /**
     * What was held: as text when it holds no call; else the calls and the text around them (white
     * space next to a call dropped; text before the first one was sent already).
     */
    public finish(): {text: string; calls: readonly ParsedToolCall[]} {
        const held = this.held;
        this.held = "";
        const reply = this.syntax.parse(held);
        return reply.calls.length === 0 ? {text: held, calls: []} : {text: reply.content ?? "", calls: reply.calls};
    }

    private release(end: number): string {
        const out = this.held.slice(0, end);
        this.held = this.held.slice(end);
        return out;
    }
}

/**
 * The one text form in which audits compare a reply, whichever path produced it (an embedded engine
 * parsing its own output, or a server returning structured `tool_calls`): the content, then the calls
 * as an OpenAI `tool_calls` JSON array without their ids, which are random per response.
 */
export function replyText(content: string | null, calls: readonly ParsedToolCall[]): string {
    if (calls.length === 0) return content ?? "";
    const array = JSON.stringify(calls.map((call) => ({type: "function", function: {name: call.name, arguments: call.arguments}})));
    return content === null || content === "" ? array : `${content}\n${array}`;
}

/** A server's `tool_calls` entry as a call, when it has a function name and arguments (text, or an object written as JSON). */
export function toolCallOfReply(entry: unknown): ParsedToolCall | undefined {
    const holder = (entry as {function?: {name?: unknown; arguments?: unknown}} | null)?.function;
    if (typeof holder?.name !== "string") return undefined;
    return {name: holder.name, arguments: typeof holder.arguments === "string" ? holder.arguments : JSON.stringify(holder.arguments ?? {})};
}
