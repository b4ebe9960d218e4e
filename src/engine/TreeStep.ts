import {Eagle3HeadBackend} from "../backend/Eagle3HeadBackend.js";
import type {ArgmaxCapableSequence, ModelBackend, TreeCapableSequence, TreeEvaluation} from "../backend/ModelBackend.js";
import {supportsTrees} from "../backend/sequenceCapabilities.js";
import {timedEvaluation} from "../backend/timedEvaluation.js";
import {argmax} from "../distributions/argmax.js";
import {processLogits} from "../distributions/processLogits.js";
import {InvalidInputError} from "../errors.js";
import {type DraftTree, type TreeVerification, verifyTreeGreedy, verifyTreeSampling} from "../policies/treeVerification.js";
import type {VerificationResult} from "../policies/VerificationPolicy.js";
import {ChainStep} from "./ChainStep.js";
import type {DraftLengthController} from "./DraftLengthController.js";
import {Eagle3TreeSession} from "./drafters/Eagle3TreeSession.js";
import {type TreeDrafting, type TreeShape, TreeDraftSession} from "./drafters/TreeDraftSession.js";
import type {StepState} from "./StepState.js";
import type {StepInput, StepOutcome, StepSetup, StepStrategy} from "./StepStrategy.js";

/**
 * Token-tree drafting: the draft model (TreeDraftSession) or EAGLE-3 head (Eagle3TreeSession) proposes
 * a tree up to the step's depth; the target decodes the pending token and every node in one call (each
 * node attending to its ancestors only); the tree is verified (the longest argmax path at T = 0, recursive rejection sampling at T > 0); both sequences
 * keep the accepted path and drop the other branches' cells. A step of depth 0 (the prompt step, or
 * draftLength auto's choice) is a target-only chain step.
 */
export class TreeStep implements StepStrategy {
    private session: TreeDrafting | undefined;
    /** The target sequence, where it decodes trees (start refuses it otherwise). */
    private readonly sequence: TreeCapableSequence | undefined;
    private readonly targetOnly: ChainStep;

    public constructor(
        private readonly setup: StepSetup,
        private readonly state: StepState,
        controller: DraftLengthController,
        private readonly tree: {readonly shape: TreeShape; readonly draft: ModelBackend},
        /** The target sequence where the argmax fast path applies: the tree's rows are then argmax ids. */
        private readonly fastPath: ArgmaxCapableSequence | undefined
    ) {
        this.sequence = supportsTrees(setup.sequence) ? setup.sequence : undefined;
        this.targetOnly = new ChainStep(setup, state, controller, undefined, fastPath);
    }

    public get started(): boolean {
        return this.session !== undefined;
    }

    public async start(): Promise<void> {
        const {promptTokens, options, telemetry, draftSequence, target, sequence} = this.setup;
        const {draft, shape} = this.tree;
        const chance = this.state.chance;
        this.session =
            draft instanceof Eagle3HeadBackend
                ? Eagle3TreeSession.start(draft, shape, {target, targetSequence: sequence, options, chance, telemetry})
                : await TreeDraftSession.start(draft, promptTokens, shape, {options, chance, telemetry, sequence: draftSequence});
        if (this.sequence === undefined)
            throw new InvalidInputError("token trees need the native backend (its sequences decode trees)", "target");
    }

    public async step(input: StepInput): Promise<StepOutcome> {
        const {session, sequence} = this;
        if (session === undefined || sequence === undefined || input.wanted === 0) return this.targetOnly.step(input);
        return this.treeStep(session, sequence, input.wanted);
    }

    public finish(): void {
        // A tree session learns nothing from the output.
    }

    public async dispose(): Promise<void> {
        await this.session?.dispose();
    }

    private async treeStep(session: TreeDrafting, sequence: TreeCapableSequence, depth: number): Promise<StepOutcome> {
        const telemetry = this.setup.telemetry;
        const argmaxOnly = this.fastPath !== undefined;
        let start = performance.now();
        const tree = await session.propose(this.state.history, depth, argmaxOnly);
        telemetry.time.draft += performance.now() - start;
        const rows = await this.evaluate(sequence, tree, argmaxOnly);
        start = performance.now();
        const verdict = this.verify(tree, rows);
        telemetry.time.policy += performance.now() - start;
        start = performance.now();
        await sequence.keepTreePath([0, ...verdict.path.map((node) => node + 1)]);
        await session.observe(verdict.path);
        const accepted = verdict.path.length;
        telemetry.drafters.record([session.label], session.label, tree.tokens.length, accepted, depth);
        const verification: VerificationResult = {
            acceptedCount: accepted,
            emitted: verdict.emitted,
            finalTokenSource: tree.rows === undefined ? "target-argmax" : "residual",
            positions: []
        };
        return {chunk: this.state.emit(verification, tree.tokens.length, start), drafted: depth, accepted};
    }

    /** The target decodes the pending token and every node of `tree` in one call: argmax ids, logit rows (T = 0) or sampler rows. */
    private async evaluate(sequence: TreeCapableSequence, tree: DraftTree, argmaxOnly: boolean): Promise<TreeEvaluation> {
        const {telemetry, options, adaptive} = this.setup;
        const start = performance.now();
        const greedy = tree.rows === undefined;
        adaptive?.beforeTarget();
        const evaluation = await timedEvaluation(sequence, () =>
            sequence.evaluateTree(
                [this.state.pending, ...tree.tokens],
                [-1, ...tree.parents.map((parent) => parent + 1)],
                argmaxOnly ? {kind: "argmax"} : greedy ? {kind: "logits"} : {kind: "distributions", sampling: options.sampling}
            )
        );
        telemetry.time.verify += performance.now() - start;
        telemetry.recordTargetEvaluation(tree.tokens.length + 1, evaluation.milliseconds, evaluation.native);
        adaptive?.afterTarget(tree.tokens.length + 1, evaluation.milliseconds, evaluation.native);
        return evaluation.result;
    }

    /** The longest path of argmax matches (a tree without rows), else recursive rejection sampling. */
    private verify(tree: DraftTree, rows: TreeEvaluation): TreeVerification {
        const sampling = this.setup.options.sampling;
        return tree.rows === undefined
            ? verifyTreeGreedy(tree, rows.argmax ?? rows.logits.map((row) => argmax(row)))
            : verifyTreeSampling(tree, rows.probabilities ?? rows.logits.map((row) => processLogits(row, sampling)), this.state.chance);
    }
}
