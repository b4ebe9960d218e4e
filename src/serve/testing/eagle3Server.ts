import {Eagle3HeadBackend, type Eagle3HeadOptions} from "../../backend/Eagle3HeadBackend.js";
import {type LoadModelBackendOptions, loadModelBackend} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {eagle3TreeBranches} from "../../engine/drafters/Eagle3TreeSession.js";
import {generate} from "../../engine/generate.js";
import type {ServeAppOptions} from "../createServeApp.js";
import {type RunningServeServer, startServeServer} from "../startServeServer.js";

/** Prompts of several kinds (a tool call, arithmetic, German, an echo), whose drafts the heads accept differently. */
export const eagle3ServePrompts = [
    "Request: Set a timer for 56 minutes.\nCall:",
    "Question: Tom has 12 candies. He gives 7 to a friend. How many candies does Tom have left?\nAnswer:",
    "Anfrage: Stelle einen Timer auf 56 Minuten.\nAufruf:",
    "Repeat: 417 Paris 8 blue 23 river\nEcho:"
];

/** A server named "family" whose draft is an EAGLE-3 head: strict verification, γ = 4, both models native on one thread. */
export interface Eagle3Server {
    readonly target: ModelBackend;
    readonly head: Eagle3HeadBackend;
    readonly server: RunningServeServer;
    /** Closes the server, then disposes of the head and the target. */
    close(): Promise<void>;
}

/**
 * Loads the target (with `target`'s options besides) and the head, and serves them; `tree` drafts
 * token trees of that shape (the target's sequences then get the branches it takes), `serve` adds
 * server options, `head` the head's (batchedHeads).
 */
export async function startEagle3Server(setup: {
    readonly targetPath: string;
    readonly headPath: string;
    readonly target: LoadModelBackendOptions;
    readonly tree?: {readonly width: number; readonly depth: number};
    readonly serve?: Pick<ServeAppOptions, "maxConcurrency">;
    readonly head?: Pick<Eagle3HeadOptions, "batchedHeads">;
}): Promise<Eagle3Server> {
    const branches = setup.tree === undefined ? {} : {treeBranches: eagle3TreeBranches(setup.tree)};
    const target = await loadModelBackend(setup.targetPath, {backend: "native", threads: 1, ...branches, ...setup.target});
    const head = await Eagle3HeadBackend.load(setup.headPath, {threads: 1, ...setup.head});
    const tree = setup.tree === undefined ? {} : {tree: setup.tree};
    const server = await startServeServer({
        target,
        draft: head,
        modelName: "family",
        modelFiles: {target: setup.targetPath, draft: setup.headPath},
        speculative: {policy: {kind: "strict"}, gamma: 4, drafter: {kind: "eagle3"}, ...tree},
        ...setup.serve,
        port: 0
    });
    const close = async () => {
        await server.close();
        await head.dispose();
        await target.dispose();
    };
    return {target, head, server, close};
}

/** POSTs a /v1/completions request to the "family" model at temperature 0; `body` adds fields or overrides. */
export function postCompletion(server: RunningServeServer, body: object): Promise<Response> {
    return fetch(`${server.url}/v1/completions`, {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify({model: "family", temperature: 0, ...body})
    });
}

/** The text target-only decoding at temperature 0 gives `prompt` in `maxTokens` tokens: what a reply at T = 0 must equal. */
export async function targetOnlyText(target: ModelBackend, prompt: string, maxTokens: number): Promise<string> {
    return (await generate(target, undefined, prompt, {sampling: {temperature: 0}, maxTokens})).text;
}
