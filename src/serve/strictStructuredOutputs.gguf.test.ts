import OpenAI from "openai";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type RunningServeServer, startServeServer} from "./startServeServer.js";

vi.setConfig(modelTestTimeouts);

/**
 * Strict structured outputs fit their budget: the family target sampling at T = 1 under a strict
 * json_schema whose compact form is at most 49 bytes (one token each) always finishes its JSON
 * within 60 tokens, with no whitespace between tokens but at most one space after a ':' or ','.
 */
const files = {target: new URL("../../models/target/model.gguf", import.meta.url).pathname};
const schema = {
    type: "object",
    properties: {name: {type: "string", maxLength: 8}, age: {type: "integer", minimum: 0, maximum: 120}, kind: {enum: ["aunt", "uncle"]}},
    required: ["name", "age", "kind"],
    additionalProperties: false
};
let target: ModelBackend;
let server: RunningServeServer;
let client: OpenAI;

beforeAll(async () => {
    target = await loadModelBackend(files.target, {threads: 1});
    server = await startServeServer({target, modelName: "family", modelFiles: files, port: 0});
    client = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0});
});

afterAll(async () => {
    await server?.close();
    await target?.dispose();
});

/** The whitespace outside JSON strings that is not a single space after ':' or ',' (empty: compact). */
function looseWhitespace(text: string): string[] {
    const found: string[] = [];
    let inString = false;
    for (let index = 0; index < text.length; index++) {
        const character = text[index]!;
        if (inString) {
            if (character === "\\") index++;
            else if (character === '"') inString = false;
        } else if (character === '"') {
            inString = true;
        } else if (/\s/.test(character)) {
            const separated =
                character === " " && (text[index - 1] === ":" || text[index - 1] === ",") && !/\s/.test(text[index + 1] ?? "");
            if (!separated) found.push(JSON.stringify(text.slice(Math.max(0, index - 3), index + 3)));
        }
    }
    return found;
}

describe("strict json_schema at T = 1", () => {
    it("is compact JSON that finishes within max_tokens, for 20 seeds", async () => {
        const replies = await Promise.all(
            Array.from(
                {length: 20},
                (_unused, seed) =>
                    client.completions.create({
                        model: "family",
                        prompt: "A record of the family:",
                        max_tokens: 60,
                        temperature: 1,
                        top_p: 1,
                        seed,
                        response_format: {type: "json_schema", json_schema: {name: "record", schema, strict: true}}
                    } as never) as unknown as Promise<OpenAI.Completion>
            )
        );
        for (const reply of replies) {
            const {text, finish_reason: finish} = reply.choices[0]!;
            expect(finish, text).toBe("stop");
            expect(Object.keys(JSON.parse(text) as object)).toEqual(["name", "age", "kind"]);
            expect(looseWhitespace(text), text).toEqual([]);
        }
        // The check itself: spaces inside strings and after separators pass; a newline and its indentation do not.
        expect(looseWhitespace('{"a": 1, "b": " x, "}')).toEqual([]);
        expect(looseWhitespace('{"a": 1,\n "b": 2}')).toHaveLength(2);
    });
});
