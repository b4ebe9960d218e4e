import {existsSync} from "node:fs";
import {dirname, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NodeLlamaCppBackend} from "../../backend/NodeLlamaCppBackend.js";
import {generate} from "../../engine/generate.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const models = resolve(dirname(fileURLToPath(import.meta.url)), "../../../models");
const targetPath = resolve(models, "target/model.gguf");
const draftPath = resolve(models, "draft/model.gguf");

/** Test prompts of the family's corpus (English and Japanese arithmetic, a Spanish tool call). */
const prompts = [
    "Question: Sam has 7 balls. He buys 8 more and gives away 13. How many balls does Sam have now?\nAnswer:",
    'Petición: Busca "used bikes" y muestra 5 resultados.\nLlamada:',
    "問題: けんはボールを7個持っています。8個買って、13個あげました。ボールは今何個ありますか？\n答え:"
];

describe.runIf(existsSync(targetPath) && existsSync(draftPath))("the shipped family (models/)", () => {
    let target: NodeLlamaCppBackend;
    let draft: NodeLlamaCppBackend;
    beforeAll(async () => {
        target = await NodeLlamaCppBackend.load(targetPath, {threads: 1});
        draft = await NodeLlamaCppBackend.load(draftPath, {threads: 1});
    });
    afterAll(async () => {
        await draft?.dispose();
        await target?.dispose();
    });

    it("target and draft share one vocabulary", () => {
        expect(draft.vocabularyIdentity()).toBe(target.vocabularyIdentity());
        expect(draft.vocabularySize).toBe(target.vocabularySize);
    });

    it("greedy strict speculative decoding reproduces target-only output, with drafts accepted", async () => {
        let accepted = 0;
        for (const prompt of prompts) {
            // No stop string: with one, the engine's speculative result lists a token past the stop that the text leaves out.
            const options = {sampling: {temperature: 0}, maxTokens: 48};
            const baseline = await generate(target, undefined, prompt, options);
            const speculative = await generate(target, draft, prompt, {...options, policy: {kind: "strict"}, gamma: 4});
            expect(speculative.tokens, prompt).toEqual(baseline.tokens);
            expect(speculative.text).toBe(baseline.text);
            accepted += speculative.telemetry.acceptedTokens;
        }
        expect(accepted).toBeGreaterThan(0);
    });
});
