import type {ModelBackend} from "../backend/ModelBackend.js";
import {DrafterPool} from "../engine/drafters/DrafterPool.js";
import {CorrectionMemory} from "../policies/CorrectionMemory.js";

/** The partition of a server without API keys: everyone who can reach it is one tenant. */
export const serverTenant = "server";

export interface TenantResourceOptions {
    /** One drafter pool for every tenant (`--share-drafter-cache`): learned drafter state crosses API keys. */
    readonly shareDrafterCache?: boolean;
    /**
     * Calibrated requests update a correction memory kept per tenant (`--learn-from-requests`).
     * Otherwise each request starts from `baseMemory` and its online updates end with it.
     */
    readonly learnFromRequests?: boolean;
    /** Where every tenant's correction memory starts (default: empty). */
    readonly baseMemory?: CorrectionMemory;
}

/**
 * State that learns from what a server generates, kept per tenant (API key): the drafter pool (a
 * suffix cache holds earlier outputs) and the calibrated policy's correction memory. One tenant's
 * traffic then neither shows in another's replies (text, accepted-token counts, timing) nor changes
 * what another gets. Tenants are the server's API keys, so their number is bounded by the operator.
 */
export class TenantResources {
    private readonly pools = new Map<string, DrafterPool>();
    private readonly memories = new Map<string, CorrectionMemory>();
    private readonly baseMemory: CorrectionMemory;

    public constructor(
        private readonly draft: ModelBackend | undefined,
        vocabularySize: number,
        vocabularyIdentity: string,
        private readonly options: TenantResourceOptions = {}
    ) {
        this.baseMemory = options.baseMemory ?? new CorrectionMemory(vocabularySize, vocabularyIdentity);
    }

    public get learnsFromRequests(): boolean {
        return this.options.learnFromRequests === true;
    }

    public get sharesDrafterCache(): boolean {
        return this.options.shareDrafterCache === true;
    }

    /** The drafters a tenant's requests use. */
    public drafters(tenant: string): DrafterPool {
        const key = this.sharesDrafterCache ? "" : tenant;
        let pool = this.pools.get(key);
        if (pool === undefined) {
            pool = new DrafterPool(this.draft);
            this.pools.set(key, pool);
        }
        return pool;
    }

    /**
     * The correction memory one calibrated request reads and updates: the tenant's own (learning on),
     * or a copy of the base memory that lives as long as the request (learning off).
     */
    public correctionMemory(tenant: string): CorrectionMemory {
        if (!this.learnsFromRequests) return this.baseMemory.clone();
        let memory = this.memories.get(tenant);
        if (memory === undefined) {
            memory = this.baseMemory.clone();
            this.memories.set(tenant, memory);
        }
        return memory;
    }

    /** The version a tenant's next calibrated request starts from (0 for the base memory while learning is off). */
    public correctionMemoryVersion(tenant: string): number {
        return this.learnsFromRequests ? (this.memories.get(tenant)?.version ?? this.baseMemory.version) : this.baseMemory.version;
    }

    /** Trie nodes held by every tenant's suffix caches. */
    public get suffixCacheNodes(): number {
        let nodes = 0;
        for (const pool of this.pools.values()) nodes += pool.suffixCacheNodes;
        return nodes;
    }
}
