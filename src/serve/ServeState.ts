import type {GrammarBudget} from "../constraints/GrammarBudget.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import type {GenerationSlots} from "./GenerationSlots.js";
import type {PromptCache} from "./PromptCache.js";
import type {RequestPermissions} from "./RequestPermissions.js";
import type {DraftPairing, SpeculativeDefaults} from "./resolveDecodePath.js";
import type {SamplerDefaults, SystemFingerprints} from "./systemFingerprint.js";
import type {ServeMetrics} from "./ServeMetrics.js";
import type {TenantResources} from "./TenantResources.js";
import type {SpeculationLoad} from "../engine/SpeculationLoad.js";

/** Hono's per-request variables: who sent the request (the API key's tenant) and the id its reply carries. */
export interface ServeEnv {
    Variables: {
        tenant: string;
        requestId: string;
    };
}

/** What every request handler of one server shares. */
export interface ServeState {
    readonly modelName: string;
    readonly target: ModelBackend;
    readonly draft: ModelBackend | undefined;
    /** How the draft pairs with the target: which drafters requests may name with it. */
    readonly draftPairing: DraftPairing;
    readonly speculativeDefaults: SpeculativeDefaults;
    /** What a request's `speculative` field may choose (--request-policies, --request-drafters). */
    readonly permissions: RequestPermissions;
    /** Drafter pools and correction memories, per tenant (API key) unless the operator shares them. */
    readonly tenants: TenantResources;
    /**
     * Step costs, acceptance and the batch's composition, shared by every generation on the target:
     * what `--gamma auto` chooses each step's draft length from.
     */
    readonly speculationLoad: SpeculationLoad;
    readonly samplerDefaults: SamplerDefaults;
    readonly chatTemplate: ChatTemplate;
    readonly slots: GenerationSlots;
    /** Sequences kept between requests with their KV (one per slot), per tenant. */
    readonly promptCache: PromptCache;
    readonly metrics: ServeMetrics;
    readonly fingerprints: SystemFingerprints;
    /** Prompt text beyond this many UTF-8 bytes is refused before tokenizing (see promptByteLimit). */
    readonly promptByteLimit: {readonly bytes: number; readonly bytesPerToken: number; readonly capped: boolean};
    /** Aborted when a graceful shutdown runs out of time: every generation still running stops. */
    readonly shutdownSignal: AbortSignal;
    readonly created: number;
    /** What one structured-output request may spend on its grammar. */
    readonly grammarBudget: GrammarBudget;
    /** Where unexpected errors are reported (reportError). */
    readonly logError: (message: string) => void;
}
