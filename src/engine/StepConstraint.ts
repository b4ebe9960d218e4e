import type {TokenConstraint} from "../backend/TokenConstraint.js";
import {ConstraintViolationError} from "../errors.js";
import type {DraftProposal} from "./drafters/Drafter.js";
import type {GenerationTelemetry} from "./GenerationTelemetry.js";

/** What one step's target evaluation gave: argmax ids (fast path) or raw rows and sampler rows. */
export interface TargetRows {
    readonly argmax: number[] | undefined;
    readonly logits: Float64Array[];
    readonly probabilities?: Float64Array[];
}

/**
 * A chain step under a constraint (a grammar): drafts are cut where it forbids them, target rows are
 * masked by it, and it is advanced past every emitted token. Its grammar work runs off the event
 * loop (the constraint's worker) and is timed as telemetry's grammar time.
 */
export class StepConstraint {
    public constructor(
        private readonly constraint: TokenConstraint,
        private readonly telemetry: GenerationTelemetry,
        private readonly settings: {
            /** Temperature 0: a row whose argmax the grammar allows is left whole. */
            readonly greedy: boolean;
            /** The end-of-generation token, which ends the output instead of advancing the grammar (absent: ignoreEos). */
            readonly endToken: number | undefined;
        }
    ) {}

    /**
     * A draft is cut at its first token the constraint forbids. A lossless policy given the draft's
     * rows keeps that token: the masked target row gives it probability 0, so verification rejects it
     * for certain and draws from the residual, which is speculative sampling as proven (the draft
     * length depends only on tokens already drafted). Otherwise the token is dropped, so no policy
     * can accept it.
     */
    public async cutDraft(proposal: DraftProposal, lossless: boolean): Promise<DraftProposal> {
        return this.timed(async () => {
            // Checked off the event loop and undone: no copy of the grammar per step.
            const allowed = await this.constraint.acceptTokens(proposal.tokens, {restore: true});
            if (allowed === proposal.tokens.length) return proposal;
            const keep = allowed + (lossless && proposal.probs !== undefined ? 1 : 0);
            return {
                ...proposal,
                tokens: proposal.tokens.slice(0, keep),
                probs: proposal.probs?.slice(0, keep),
                logits: proposal.logits?.slice(0, keep)
            };
        });
    }

    /**
     * Each target row is masked by the constraint's state after the tokens before it (emitted ones,
     * then the draft's), and its sampler row recomputed from the masked row. A row after a forbidden
     * draft token (kept for a lossless policy, which rejects it for certain) is left as it is: it is
     * never reached. Masking a row costs one grammar check per vocabulary entry (llama.cpp's), so at
     * T = 0 a row whose argmax the grammar allows is left whole. The whole step's grammar work is one
     * call, which leaves the constraint's state as it was.
     */
    public async maskRows(evaluation: TargetRows, draftTokens: readonly number[]): Promise<TargetRows> {
        return this.timed(async () => {
            this.telemetry.grammarMasks += await this.constraint.maskRows(evaluation.logits, draftTokens, {greedy: this.settings.greedy});
            return {argmax: undefined, logits: evaluation.logits, probabilities: undefined};
        });
    }

    /** The constraint, past the tokens a step emitted (an end-of-generation token ends the output instead). */
    public async advance(emitted: readonly number[]): Promise<void> {
        await this.timed(async () => {
            const endToken = this.settings.endToken;
            const end = endToken === undefined ? -1 : emitted.indexOf(endToken);
            const tokens = end < 0 ? emitted : emitted.slice(0, end);
            const accepted = await this.constraint.acceptTokens(tokens);
            if (accepted < tokens.length)
                throw new ConstraintViolationError(`token ${tokens[accepted]} is not allowed by the grammar here`);
        });
    }

    private async timed<T>(work: () => Promise<T>): Promise<T> {
        const start = performance.now();
        try {
            return await work();
        } finally {
            this.telemetry.time.grammar += performance.now() - start;
        }
    }
}
