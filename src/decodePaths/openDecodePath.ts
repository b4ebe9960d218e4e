import type {DecodePath} from "./DecodePath.js";
import {EmbeddedDecodePath} from "./EmbeddedDecodePath.js";
import {OpenAiDecodePath} from "./OpenAiDecodePath.js";
import {type DecodePathSpec, parseDecodePathSpec} from "./parseDecodePathSpec.js";

/** Opens the decode path a spec (text or parsed) names; embedded paths load their GGUF files here. */
export async function openDecodePath(spec: string | DecodePathSpec): Promise<DecodePath> {
    const parsed = typeof spec === "string" ? parseDecodePathSpec(spec) : spec;
    if (parsed.kind === "openai") {
        return new OpenAiDecodePath(parsed.name, {
            baseUrl: parsed.baseUrl,
            model: parsed.model,
            apiKeyEnv: parsed.apiKeyEnv,
            endpoint: parsed.endpoint,
            extraBody: parsed.extraBody,
            concurrency: parsed.concurrency,
            maxRetries: parsed.maxRetries,
            timeoutMs: parsed.timeoutMs
        });
    }
    return EmbeddedDecodePath.open(
        parsed.name,
        {target: parsed.target, draft: parsed.draft},
        {
            policy: parsed.policy,
            gamma: parsed.gamma,
            topK: parsed.topK,
            topP: parsed.topP,
            minP: parsed.minP,
            draftSampling: parsed.draftSampling,
            ...(parsed.drafter !== undefined ? {drafter: parsed.drafter} : {})
        },
        parsed.threads,
        parsed.backend,
        {gpu: parsed.gpu, gpuLayers: parsed.gpuLayers, contextSize: parsed.contextSize}
    );
}
