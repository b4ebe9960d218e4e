import {type Drafter, type DrafterSession, type DraftOutcome, type DraftRequest, type DrafterStart} from "./Drafter.js";

/**
 * Drafters consulted in order; the first non-empty proposal is the step's proposal and the rest are
 * not asked. Putting the free drafters first (`ngram+model`) means a step pays for the draft model
 * only when lookup finds nothing, so the chain costs no more than its model member on any step and
 * nothing extra on a step the n-gram covers. (Taking the longer of all proposals would run the
 * draft model on every step, erasing the saving that makes lookup worth chaining.)
 * Every member observes every outcome, so a model member keeps its cache in step with the output.
 */
export class ChainDrafter implements Drafter {
    public readonly label: string;
    public readonly members: readonly string[];
    /** The smallest member vocabulary: every member must be able to read every emitted id. */
    public readonly vocabularySize?: number;

    public constructor(private readonly drafters: readonly Drafter[]) {
        this.label = drafters.map((drafter) => drafter.label).join("+");
        this.members = drafters.flatMap((drafter) => drafter.members);
        const sizes = drafters.flatMap((drafter) => drafter.vocabularySize ?? []);
        if (sizes.length > 0) this.vocabularySize = Math.min(...sizes);
    }

    public async start(context: DrafterStart): Promise<DrafterSession> {
        const sessions: DrafterSession[] = [];
        try {
            for (const drafter of this.drafters) sessions.push(await drafter.start(context));
        } catch (error) {
            for (const session of sessions) await session.dispose();
            throw error;
        }
        return {
            supportsArgmax: sessions.every((session) => session.supportsArgmax),
            // Lookup members (no vocabulary of their own) propose without probabilities, verified as q = δ.
            drawsOnDevice: sessions.every(
                (session, index) => session.drawsOnDevice === true || this.drafters[index]!.vocabularySize === undefined
            ),
            async propose(request: DraftRequest) {
                const consulted: string[] = [];
                for (const session of sessions) {
                    const proposal = await session.propose(request);
                    consulted.push(...proposal.consulted);
                    if (proposal.tokens.length > 0) return {...proposal, consulted};
                }
                return {tokens: [], source: consulted[consulted.length - 1], consulted};
            },
            observe(outcome: DraftOutcome) {
                for (const session of sessions) session.observe(outcome);
            },
            finish(output: readonly number[]) {
                for (const session of sessions) session.finish(output);
            },
            async dispose() {
                for (const session of sessions) await session.dispose();
            }
        };
    }
}
