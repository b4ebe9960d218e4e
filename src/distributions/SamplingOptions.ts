import {z} from "zod";

/** Temperatures below this sample greedily (as temperature 0). */
export const minimumTemperature = 1e-6;

/**
 * Sampler settings applied to raw logits to get the distribution a token is drawn from.
 * Order (vLLM / Hugging Face): temperature, then top-k, then top-p, then min-p, each on the
 * distribution left by the previous step. llama.cpp's default chain applies temperature last;
 * the difference only matters when top-p or min-p is combined with temperature ≠ 1.
 * temperature 0 means greedy: a one-hot row on the argmax (lowest id wins ties), and so does any
 * temperature below minimumTemperature: dividing logits by it would leave only the argmax with
 * weight anyway, and below ~1e-16 the division overflows (llama.cpp samples greedily at T ≤ 0).
 */
export const samplingOptionsSchema = z.strictObject({
    temperature: z
        .number()
        .min(0)
        .max(100)
        .default(1)
        .transform((temperature) => (temperature < minimumTemperature ? 0 : temperature)),
    topK: z.int().min(0).default(0).describe("0 disables; ties at the k-th value are kept, as in vLLM"),
    topP: z.number().gt(0).max(1).default(1),
    minP: z.number().min(0).max(1).default(0)
});

export type SamplingOptions = z.infer<typeof samplingOptionsSchema>;
export type SamplingOptionsInput = z.input<typeof samplingOptionsSchema>;

export const defaultSamplingOptions: SamplingOptions = Object.freeze({temperature: 1, topK: 0, topP: 1, minP: 0});
