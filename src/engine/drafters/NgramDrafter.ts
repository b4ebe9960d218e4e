import {type Drafter, type DrafterSession, type DraftRequest} from "./Drafter.js";
import {ngramLookup} from "./ngramLookup.js";
import {drafterLabel, type NgramDrafterSpec} from "./parseDrafterSpec.js";

/**
 * Prompt lookup over the generation's own prompt and output (no model, no rows: its proposals are
 * verified as q = δ_x). Stateless between steps: the history is the state.
 */
export class NgramDrafter implements Drafter {
    public readonly label: string;
    public readonly members: readonly string[];

    public constructor(public readonly spec: NgramDrafterSpec) {
        this.label = drafterLabel(spec);
        this.members = [this.label];
    }

    public async start(): Promise<DrafterSession> {
        const {minN, maxN, length} = this.spec;
        const source = this.label;
        return {
            supportsArgmax: true,
            async propose(request: DraftRequest) {
                const tokens = ngramLookup(request.history, minN, maxN, Math.min(request.maxTokens, length ?? request.maxTokens));
                return {tokens, source, consulted: [source]};
            },
            observe() {},
            finish() {},
            async dispose() {}
        };
    }
}
