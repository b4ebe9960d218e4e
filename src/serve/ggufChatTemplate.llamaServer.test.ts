import {type ChildProcess, spawn} from "node:child_process";
import {existsSync} from "node:fs";
import {mkdtemp, rm} from "node:fs/promises";
import {createServer} from "node:net";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {GgufReader} from "../gguf/GgufReader.js";
import {hfBpeVocabulary} from "../gguf/hfBpeVocabulary.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {multilingualCorpus} from "../gguf/testing/multilingualCorpus.js";
import {readFamilyTokenizerFiles, type TokenizerFamily, tokenizerFamilies} from "../gguf/tokenizerFamilies.js";
import type {ChatMessageInput} from "./chatCompletionRequestSchema.js";
import {ggufChatTemplate} from "./ggufChatTemplate.js";

/**
 * Template parity with llama.cpp's own template engine: for each family fixture, the prompt specgate
 * renders from the GGUF's chat template equals what llama-server's /apply-template renders for the
 * same GGUF, for 60 conversations (with and without a system turn, one to four user turns with the
 * assistant's replies between, multilingual text). llama-server is built by `npm run build:baselines`;
 * without it these tests are skipped.
 */
const llamaServer = join(import.meta.dirname, "../../native/build/baselines/bin/llama-server");
const conversations = 60;

function conversation(index: number, texts: readonly string[]): ChatMessageInput[] {
    const messages: ChatMessageInput[] = [];
    let next = index * 7;
    const text = () => texts[next++ % texts.length].trim() || "hello";
    if (index % 2 === 0) messages.push({role: "system", content: text()} as ChatMessageInput);
    const turns = 1 + (index % 4);
    for (let turn = 0; turn < turns; turn++) {
        messages.push({role: "user", content: text()} as ChatMessageInput);
        if (turn < turns - 1) messages.push({role: "assistant", content: text()} as ChatMessageInput);
    }
    return messages;
}

async function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const server = createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
            const address = server.address();
            server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
        });
    });
}

async function waitForHealth(base: string, process: ChildProcess): Promise<void> {
    for (let attempt = 0; attempt < 300; attempt++) {
        if (process.exitCode !== null) throw new Error(`llama-server exited with ${process.exitCode}`);
        try {
            if ((await fetch(`${base}/health`)).ok) return;
        } catch {
            // not listening yet
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("llama-server did not become healthy in 30 s");
}

describe.skipIf(!existsSync(llamaServer)).each(["qwen3", "llama3"] as TokenizerFamily[])("%s chat template against llama-server's /apply-template", (family) => {
    let directory: string;
    let model: ModelBackend;
    let server: ChildProcess;
    let base: string;
    let source: string;

    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), `specgate-template-${family}-`));
        const vocabulary = hfBpeVocabulary(await readFamilyTokenizerFiles(family), tokenizerFamilies[family].options);
        const {draftPath} = await writeRandomLlamaPair({
            directory, seed: 1, vocabulary,
            target: {embeddingLength: 16, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 32},
            draft: {embeddingLength: 8, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 16}
        });
        source = GgufReader.readHeader(draftPath).metadata.get("tokenizer.chat_template")!.value as string;
        model = await loadModelBackend(draftPath, {threads: 1, contextSize: 256});
        const port = await freePort();
        base = `http://127.0.0.1:${port}`;
        server = spawn(llamaServer, ["-m", draftPath, "--host", "127.0.0.1", "--port", String(port), "-c", "256", "-t", "1", "--jinja"], {stdio: "ignore"});
        await waitForHealth(base, server);
    }, 120_000);
    afterAll(async () => {
        server?.kill();
        await model?.dispose();
        await rm(directory, {recursive: true, force: true});
    });

    it(`renders ${conversations} conversations exactly as llama.cpp does`, async () => {
        // As serve builds it: BOS and EOS texts for templates that write {{ bos_token }} (llama3).
        const tokens = model.vocabularyDescription!().tokens;
        const template = ggufChatTemplate(model, source, {bos: tokens[model.bosToken!], eos: tokens[model.eosToken!]});
        const texts = multilingualCorpus(400, 23);
        const mismatches: string[] = [];
        for (let index = 0; index < conversations; index++) {
            const messages = conversation(index, texts);
            const response = await fetch(`${base}/apply-template`, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify({messages})});
            expect(response.status).toBe(200);
            const {prompt} = await response.json() as {prompt: string};
            if (template.renderText(messages) !== prompt) mismatches.push(JSON.stringify({messages, ours: template.renderText(messages), llamaCpp: prompt}));
        }
        expect(mismatches).toEqual([]);
    }, 120_000);
});
