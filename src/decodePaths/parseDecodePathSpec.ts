import {type GpuChoice, parseGpuChoice} from "../backend/gpuChoice.js";
import {type BackendChoice, parseBackendChoice} from "../backend/loadModelBackend.js";
import {InvalidInputError} from "../errors.js";
import type {PolicyConfigInput} from "../policies/policyConfigSchema.js";

export interface EmbeddedPathSpec {
    readonly kind: "embedded";
    readonly name: string;
    readonly target: string;
    readonly draft?: string;
    /** Drafter spec (`ngram`, `suffix`, `ngram+model`, …); default `model` with a draft, else none. */
    readonly drafter?: string;
    readonly policy: PolicyConfigInput;
    readonly gamma: number;
    readonly threads: number;
    /** Engine for the models; default: auto (native where built). */
    readonly backend?: BackendChoice;
    /** Native backend: auto, vulkan, cuda or off (see NativeBackendOptions.gpu); default: SPECGATE_GPU, else auto. */
    readonly gpu?: GpuChoice;
    /** Native backend on a GPU: layers offloaded; default all. */
    readonly gpuLayers?: number;
    /** Context tokens per sequence (`context=N`); default: the model's training context, at most 4096. */
    readonly contextSize?: number;
    readonly topK?: number;
    readonly topP?: number;
    readonly minP?: number;
    readonly draftSampling?: "sample" | "greedy";
}

export interface OpenAiPathSpec {
    readonly kind: "openai";
    readonly name: string;
    readonly baseUrl: string;
    readonly model: string;
    readonly apiKeyEnv?: string;
    readonly endpoint: "auto" | "chat" | "completions";
    readonly extraBody: Readonly<Record<string, unknown>>;
    readonly concurrency: number;
    readonly maxRetries: number;
    readonly timeoutMs: number;
}

export type DecodePathSpec = EmbeddedPathSpec | OpenAiPathSpec;

/**
 * Parses a decode path spec `KIND:key=value,key=value,…` (a `\,` is a literal comma in a value):
 *
 *   embedded:target=T.gguf[,draft=D.gguf][,drafter=SPEC][,policy=strict][,policy.PARAM=V…][,gamma=4][,threads=1][,backend=auto]
 *            [,gpu=auto|vulkan|cuda|off][,gpu-layers=N][,context=N][,top-k=K][,top-p=P][,min-p=M][,draft-sampling=sample|greedy][,name=N]
 *     Without a draft or a drafter the path is target-only; `drafter` is a --drafter spec, e.g.
 *     `drafter=ngram:2:5` or `drafter=ngram+model` (with a draft). `policy.PARAM` sets a policy parameter by its
 *     config name, e.g. `policy=fuzzy,policy.threshold=0.5,policy.divergence=js`.
 *   openai:base=URL,model=M[,key-env=VAR][,endpoint=auto|chat|completions][,body.FIELD=JSON…]
 *          [,concurrency=4][,retries=4][,timeout-ms=120000][,name=N]
 *     `key-env` names the environment variable holding the API key; `body.FIELD` adds a field to
 *     every request body, its value read as JSON when it parses (true, 5, "x", {…}) and as a string
 *     otherwise.
 * Unknown keys are errors, so a typo cannot silently change what is compared.
 */
export function parseDecodePathSpec(spec: string): DecodePathSpec {
    const colon = spec.indexOf(":");
    const kind = colon < 0 ? spec : spec.slice(0, colon);
    const pairs = parsePairs(colon < 0 ? "" : spec.slice(colon + 1), spec);
    const take = (key: string): string | undefined => {
        const value = pairs.get(key);
        pairs.delete(key);
        return value;
    };
    const integer = (key: string, fallback: number, minimum: number): number => {
        const text = take(key);
        if (text === undefined) return fallback;
        if (!/^\d+$/.test(text) || Number(text) < minimum)
            throw new InvalidInputError(`must be an integer ≥ ${minimum}, got "${text}"`, `${spec}: ${key}`);
        return Number(text);
    };
    const decimal = (key: string): number | undefined => {
        const text = take(key);
        if (text === undefined) return undefined;
        if (!Number.isFinite(Number(text)) || text.trim() === "")
            throw new InvalidInputError(`must be a number, got "${text}"`, `${spec}: ${key}`);
        return Number(text);
    };
    const required = (key: string): string => {
        const value = take(key);
        if (value === undefined || value === "") throw new InvalidInputError(`needs ${key}=…`, spec);
        return value;
    };
    let result: DecodePathSpec;
    if (kind === "embedded") {
        const target = required("target");
        const draft = take("draft");
        const drafter = take("drafter");
        const policy: Record<string, unknown> = {kind: take("policy") ?? "strict"};
        for (const key of [...pairs.keys()].filter((name) => name.startsWith("policy."))) policy[key.slice(7)] = scalar(take(key)!);
        const backendValue = take("backend");
        const backend = backendValue === undefined ? undefined : parseBackendChoice(backendValue, `${spec}: backend`);
        const gpuValue = take("gpu");
        const gpu = gpuValue === undefined ? undefined : parseGpuChoice(gpuValue, `${spec}: gpu`);
        const gpuLayers = pairs.has("gpu-layers") ? integer("gpu-layers", 0, 0) : undefined;
        const contextSize = pairs.has("context") ? integer("context", 0, 8) : undefined;
        const draftSampling = take("draft-sampling");
        if (draftSampling !== undefined && draftSampling !== "sample" && draftSampling !== "greedy")
            throw new InvalidInputError(`must be sample or greedy, got "${draftSampling}"`, `${spec}: draft-sampling`);
        result = {
            kind,
            name: take("name") ?? spec,
            target,
            ...(draft !== undefined ? {draft} : {}),
            ...(drafter !== undefined ? {drafter} : {}),
            policy: policy as PolicyConfigInput,
            gamma: integer("gamma", draft === undefined && drafter === undefined ? 0 : 4, 0),
            threads: integer("threads", 1, 1),
            ...(backend !== undefined ? {backend} : {}),
            ...(gpu !== undefined ? {gpu} : {}),
            ...(gpuLayers !== undefined ? {gpuLayers} : {}),
            ...(contextSize !== undefined ? {contextSize} : {}),
            topK: integer("top-k", 0, 0),
            topP: decimal("top-p"),
            minP: decimal("min-p"),
            ...(draftSampling !== undefined ? {draftSampling} : {})
        };
    } else if (kind === "openai") {
        const baseUrl = required("base");
        const model = required("model");
        const apiKeyEnv = take("key-env");
        const endpoint = take("endpoint") ?? "auto";
        if (endpoint !== "auto" && endpoint !== "chat" && endpoint !== "completions")
            throw new InvalidInputError(`must be auto, chat or completions, got "${endpoint}"`, `${spec}: endpoint`);
        const extraBody: Record<string, unknown> = {};
        for (const key of [...pairs.keys()].filter((name) => name.startsWith("body."))) extraBody[key.slice(5)] = jsonOrString(take(key)!);
        result = {
            kind,
            name: take("name") ?? spec,
            baseUrl,
            model,
            ...(apiKeyEnv !== undefined ? {apiKeyEnv} : {}),
            endpoint,
            extraBody,
            concurrency: integer("concurrency", 4, 1),
            maxRetries: integer("retries", 4, 0),
            timeoutMs: integer("timeout-ms", 120_000, 1)
        };
    } else {
        throw new InvalidInputError(`unknown decode path kind "${kind}"; expected embedded:… or openai:…`, "path");
    }
    if (pairs.size > 0) throw new InvalidInputError(`unknown key${pairs.size > 1 ? "s" : ""} ${[...pairs.keys()].join(", ")}`, spec);
    return result;
}

function parsePairs(text: string, spec: string): Map<string, string> {
    const pairs = new Map<string, string>();
    const parts = text === "" ? [] : text.split(/(?<!\\),/).map((part) => part.replace(/\\,/g, ","));
    for (const part of parts) {
        const equals = part.indexOf("=");
        if (equals <= 0) throw new InvalidInputError(`expected key=value, got "${part}"`, spec);
        const key = part.slice(0, equals).trim();
        if (pairs.has(key)) throw new InvalidInputError(`key ${key} is given twice`, spec);
        pairs.set(key, part.slice(equals + 1).trim());
    }
    return pairs;
}

function scalar(text: string): unknown {
    if (text === "true" || text === "false") return text === "true";
    return text.trim() !== "" && Number.isFinite(Number(text)) ? Number(text) : text;
}

function jsonOrString(text: string): unknown {
    try {
        return JSON.parse(text);
    } catch {
        return text;
    }
}
