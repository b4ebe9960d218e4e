import type {ModelBackend} from "../backend/ModelBackend.js";
import type {DrafterPool} from "../engine/drafters/DrafterPool.js";
import type {CorrectionMemory} from "../policies/CorrectionMemory.js";
import type {ChatTemplate} from "./ChatTemplate.js";
import type {GenerationSlots} from "./GenerationSlots.js";
import type {DraftPairing, SpeculativeDefaults} from "./resolveDecodePath.js";
import type {SamplerDefaults, SystemFingerprints} from "./systemFingerprint.js";
import type {ServeMetrics} from "./ServeMetrics.js";

/** What every request handler of one server shares. */
export interface ServeState {
    readonly modelName: string;
    readonly target: ModelBackend;
    readonly draft: ModelBackend | undefined;
    /** How the draft pairs with the target: which drafters requests may name with it. */
    readonly draftPairing: DraftPairing;
    readonly speculativeDefaults: SpeculativeDefaults;
    /** One drafter per spec for the server's lifetime: requests naming the same suffix drafter share its cache. */
    readonly drafters: DrafterPool;
    readonly samplerDefaults: SamplerDefaults;
    readonly chatTemplate: ChatTemplate;
    readonly slots: GenerationSlots;
    readonly metrics: ServeMetrics;
    readonly fingerprints: SystemFingerprints;
    /** Shared by every request that uses the calibrated policy (online updates, seed 004). */
    readonly correctionMemory: CorrectionMemory;
    /** Prompt text beyond this many UTF-8 bytes is refused before tokenizing (see promptByteLimit). */
    readonly promptByteLimit: {readonly bytes: number; readonly bytesPerToken: number; readonly capped: boolean};
    /** Aborted when a graceful shutdown runs out of time: every generation still running stops. */
    readonly shutdownSignal: AbortSignal;
    readonly created: number;
}
