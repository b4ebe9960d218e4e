import {existsSync} from "node:fs";
import {dirname, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NodeLlamaCppBackend} from "../backend/NodeLlamaCppBackend.js";
import {createDrafter} from "./drafters/createDrafter.js";
import {generate} from "./generate.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const models = resolve(dirname(fileURLToPath(import.meta.url)), "../../models");
const targetPath = resolve(models, "target/model.gguf");
const draftPath = resolve(models, "draft/model.gguf");

/** Family test prompts: a copy drill (the prompt recurs in the answer), a tool call, arithmetic. */
const prompts = [
    "Repeat: 417 Paris 8 blue 23 river\nEcho:",
    'Petición: Busca "used bikes" y muestra 5 resultados.\nLlamada:',
    'Request: Search for "used bikes" and show 5 results.\nCall:',
    "Question: Sam has 7 balls. He buys 8 more and gives away 13. How many balls does Sam have now?\nAnswer:"
];

describe.runIf(existsSync(targetPath) && existsSync(draftPath))("drafters on the shipped family (models/)", () => {
    let target: NodeLlamaCppBackend;
    let draft: NodeLlamaCppBackend;
    const baselines: number[][] = [];
    beforeAll(async () => {
        target = await NodeLlamaCppBackend.load(targetPath, {threads: 1});
        draft = await NodeLlamaCppBackend.load(draftPath, {threads: 1});
        for (const prompt of prompts)
            baselines.push((await generate(target, undefined, prompt, {sampling: {temperature: 0}, maxTokens: 48})).tokens);
    });
    afterAll(async () => {
        await draft?.dispose();
        await target?.dispose();
    });

    it.each(["ngram", "ngram:1:3", "suffix:1", "ngram+model", "ngram+suffix:1+model"])(
        "%s at temperature 0 emits exactly the target-only tokens (strict, both logit paths)",
        async (spec) => {
            let accepted = 0;
            for (const argmaxFastPath of [true, false]) {
                // One instance across the prompts, twice over: the suffix cache has earlier outputs to draft from.
                const drafter = createDrafter(spec, draft);
                for (const _round of [0, 1])
                    for (const [index, prompt] of prompts.entries()) {
                        const result = await generate(
                            target,
                            undefined,
                            prompt,
                            {policy: {kind: "strict"}, gamma: 4, sampling: {temperature: 0}, maxTokens: 48, argmaxFastPath},
                            {drafter}
                        );
                        expect(result.tokens, `${spec} ${prompt}`).toEqual(baselines[index]);
                        accepted += result.telemetry.acceptedTokens;
                    }
            }
            expect(accepted).toBeGreaterThan(0);
        }
    );
});
