import {z} from "zod";
import {processLogits} from "../distributions/processLogits.js";
import {type SamplingOptions, samplingOptionsSchema} from "../distributions/SamplingOptions.js";
import {validateLogitRow, validateProbabilityRow} from "../distributions/validateDistribution.js";
import {InvalidInputError, TokenOutOfRangeError} from "../errors.js";
import {parsePolicyConfig} from "../policies/createPolicy.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";

/**
 * STEP.json, the input of `specgate simulate`: one speculative step's distributions and a policy.
 *   policy        {"kind": "...", ...parameters}
 *   targetProbs   γ+1 probability rows        | targetLogits  γ+1 raw logit rows
 *   draftProbs    γ rows (optional)           | draftLogits   γ raw rows (optional)
 *   draftTokens   γ ids, or "sample": every sample draws fresh drafts, each from its own draft row
 *   sampling      {temperature, topK, topP, minP}, applied to logit rows only
 * When probabilities are given, the raw logits policies may need are their logarithms (the same
 * distribution, so "raw" and "processed" coincide).
 */
// Row entries are checked by validateProbabilityRow / validateLogitRow, which name the exact entry;
// in logit rows the string "-Infinity" stands for a mask, which JSON cannot write as a number.
const row = z.array(z.unknown()).transform((values) => values.map((value) => (value === "-Infinity" ? -Infinity : value)) as number[]);
const stepFileSchema = z.strictObject({
    policy: z.unknown(),
    targetProbs: z.array(row).min(1).optional(),
    targetLogits: z.array(row).min(1).optional(),
    draftProbs: z.array(row).optional(),
    draftLogits: z.array(row).optional(),
    draftTokens: z.union([z.array(z.number()), z.literal("sample")]),
    sampling: samplingOptionsSchema.optional(),
    description: z.string().optional()
});

/** A validated step, ready for simulation: processed rows, raw logits, and how drafts are chosen. */
export interface StepInput {
    readonly policy: PolicyConfig;
    readonly vocabularySize: number;
    readonly gamma: number;
    readonly targetProbs: Float64Array[];
    readonly targetLogits: Float64Array[];
    readonly draftProbs?: Float64Array[];
    readonly draftLogits?: Float64Array[];
    /** Fixed draft ids, or "sample" to draw them from the draft rows for every sample. */
    readonly draftTokens: Int32Array | "sample";
    readonly sampling?: SamplingOptions;
}

export function parseStepInput(value: unknown): StepInput {
    const parsed = stepFileSchema.safeParse(value);
    if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const path = issue.path.map(String).join(".") || "(root)";
        const message =
            issue.code === "unrecognized_keys" ? `unknown field ${issue.keys.map((key) => `"${key}"`).join(", ")}` : issue.message;
        throw new InvalidInputError(message, path);
    }
    const file = parsed.data;
    const policy = parsePolicyConfig(file.policy);

    const target = pickRows("target", file.targetProbs, file.targetLogits, file.sampling)!;
    const gamma = target.rows.length - 1;
    const vocabularySize = target.rows[0].length;
    const draft = pickRows("draft", file.draftProbs, file.draftLogits, file.sampling);
    if (draft != null && draft.rows.length !== gamma)
        throw new InvalidInputError(
            `has ${draft.rows.length} rows; γ = ${gamma} draft rows are needed for ${gamma + 1} target rows`,
            draft.field
        );
    const targetRows = buildRows(target, vocabularySize, file.sampling);
    const draftRows = draft == null ? undefined : buildRows(draft, vocabularySize, file.sampling);

    let draftTokens: Int32Array | "sample";
    if (file.draftTokens === "sample") {
        if (draft == null)
            throw new InvalidInputError('"sample" needs draftProbs or draftLogits to draw the draft tokens from', "draftTokens");
        draftTokens = "sample";
    } else {
        if (file.draftTokens.length !== gamma)
            throw new InvalidInputError(
                `has ${file.draftTokens.length} ids, but ${gamma + 1} target rows mean γ = ${gamma}`,
                "draftTokens"
            );
        file.draftTokens.forEach((token, index) => {
            if (!Number.isInteger(token) || token < 0 || token >= vocabularySize)
                throw new TokenOutOfRangeError(`${token} is not a token id in [0, ${vocabularySize})`, `draftTokens[${index}]`);
        });
        draftTokens = Int32Array.from(file.draftTokens);
    }

    return {
        policy,
        vocabularySize,
        gamma,
        targetProbs: targetRows.probabilities,
        targetLogits: targetRows.logits,
        draftProbs: draftRows?.probabilities,
        draftLogits: draftRows?.logits,
        draftTokens,
        sampling: file.sampling
    };
}

interface SourceRows {
    field: string;
    rows: number[][];
    areLogits: boolean;
}

function pickRows(
    side: "target" | "draft",
    probabilityRows: number[][] | undefined,
    logitRows: number[][] | undefined,
    sampling: SamplingOptions | undefined
): SourceRows | undefined {
    const probabilityField = `${side}Probs`;
    const logitField = `${side}Logits`;
    if (probabilityRows != null && logitRows != null)
        throw new InvalidInputError(`give either ${probabilityField} or ${logitField}, not both`, probabilityField);
    if (probabilityRows != null && sampling != null)
        throw new InvalidInputError('sampling settings apply to logits; give targetLogits/draftLogits or drop "sampling"', "sampling");
    if (probabilityRows != null) return {field: probabilityField, rows: probabilityRows, areLogits: false};
    if (logitRows != null) return {field: logitField, rows: logitRows, areLogits: true};
    if (side === "target") throw new InvalidInputError(`${probabilityField} or ${logitField} is required`, probabilityField);
    return undefined;
}

/** Validate every source row (errors name the row the user wrote), then derive processed rows and logits. */
function buildRows(source: SourceRows, vocabularySize: number, sampling: SamplingOptions | undefined) {
    source.rows.forEach((values, index) => {
        const field = `${source.field}[${index}]`;
        if (source.areLogits) validateLogitRow(values, vocabularySize, field);
        else validateProbabilityRow(values, vocabularySize, field);
    });
    if (source.areLogits)
        return {
            probabilities: source.rows.map((values) => processLogits(values, sampling)),
            logits: source.rows.map((values) => Float64Array.from(values))
        };
    return {
        probabilities: source.rows.map((values) => Float64Array.from(values)),
        logits: source.rows.map((values) => Float64Array.from(values, Math.log))
    };
}
