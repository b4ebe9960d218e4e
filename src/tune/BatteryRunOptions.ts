import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import type {DrafterSpec} from "../engine/drafters/parseDrafterSpec.js";

/** What a sweep and a calibration both run: a target and a draft over a scored battery, at these settings. */
export interface BatteryRunOptions {
    readonly target: ModelBackend;
    readonly draft: ModelBackend;
    /** What drafts in the speculative configurations (default `model`); draft-only (and the sweep's oracle) always use the draft model. */
    readonly drafter?: DrafterSpec;
    /** How chat items become prompts: the target GGUF's template, as serve renders chat; absent: the plain text format. */
    readonly chatTemplate?: ChatTemplate;
    readonly items: readonly BatteryItem[];
    readonly gammas: readonly number[];
    readonly sampling: SamplingOptions;
    /** How the draft model proposes in the speculative configurations (default "sample"). */
    readonly draftSampling?: "sample" | "greedy";
    readonly maxTokens: number;
    readonly stop?: readonly string[];
    /** Seeds the runs (item i uses seed + i in every configuration); a calibration also salts its split with it. */
    readonly seed: number;
    /** Where a `calibrated` policy's relative memory path resolves from. */
    readonly baseDirectory?: string;
    readonly signal?: AbortSignal;
    /** One line per finished configuration (for a progress display). */
    readonly onProgress?: (line: string) => void;
}
