import {addsBos} from "../backend/addsBos.js";
import type {BackendSequence, ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {scoreItem} from "../batteries/scorers/scoreItem.js";
import {argmax} from "../distributions/argmax.js";
import {generate} from "../engine/generate.js";
import {StopDetector} from "../engine/StopDetector.js";
import {InvalidInputError} from "../errors.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import {batteryPromptTokens} from "./batteryPromptTokens.js";
import {sharedPrefixLength} from "../backend/sharedPrefixLength.js";

export interface ScorePreservingOracleSettings {
    readonly gamma: number;
    readonly maxTokens: number;
    readonly stop?: readonly string[];
    /** Whether an output passes the item; default: the item's own scorer. */
    readonly passes?: (item: BatteryItem, output: string) => boolean;
    readonly signal?: AbortSignal;
    /** How chat items become prompts (see ConfigurationSettings.chatTemplate). */
    readonly chatTemplate?: ChatTemplate;
}

/** Acceptance totals of one decoding rule over a battery, counted as the engine's telemetry counts them. */
export interface AcceptanceTotals {
    readonly correct: number;
    /** Steps that proposed at least one draft token. */
    readonly drafts: number;
    readonly draftTokens: number;
    readonly acceptedTokens: number;
    /** 1 + accepted / drafts, vLLM's mean acceptance length. */
    readonly meanAcceptanceLength: number;
}

export interface OracleTotals extends AcceptanceTotals {
    /** Draft tokens the target would not have chosen, accepted because the item still passed. */
    readonly rescuedTokens: number;
    /** Mismatches the oracle examined (each one a target-only completion and a scoring). */
    readonly checkedMismatches: number;
}

export interface ScorePreservingOracleMeasurement {
    readonly gamma: number;
    readonly items: number;
    /** Exact greedy verification: accept while the draft token is the target's argmax. */
    readonly strict: AcceptanceTotals;
    /** Accept a mismatching draft token whenever finishing from it with the target still passes. */
    readonly oracle: OracleTotals;
    /** oracle / strict mean acceptance length − 1. */
    readonly gain: number;
    readonly byTask: ReadonlyArray<{
        readonly task: string;
        readonly items: number;
        readonly strict: AcceptanceTotals;
        readonly oracle: OracleTotals;
    }>;
}

/**
 * The headroom a battery leaves for lossy verification at temperature 0. A relaxed policy gains
 * only where a draft token differs from the target's choice and the answer survives it ("neutral
 * divergence", the Calibrated SD paper §5). The oracle knows exactly that: at every mismatch it finishes the item
 * from the draft token with target-only greedy decoding, scores the result, and accepts the draft
 * token if the item still passes. Its mean acceptance length estimates what a policy could reach
 * without losing an item. It is not a strict bound: it looks one token ahead and trusts the target to
 * finish, so a rule that keeps following the draft where the target alone would fail can accept
 * more — and does, when the draft is the better model. The strict row is counted by the same loop
 * and equals the engine's.
 *
 * Costs one target-only completion per mismatch: an offline analysis, not a serving policy.
 */
export async function measureScorePreservingOracle(
    target: ModelBackend,
    draft: ModelBackend,
    items: readonly BatteryItem[],
    settings: ScorePreservingOracleSettings
): Promise<ScorePreservingOracleMeasurement> {
    if (!Number.isInteger(settings.gamma) || settings.gamma < 1)
        throw new InvalidInputError(`must be a positive integer, got ${settings.gamma}`, "gamma");
    if (items.length === 0) throw new InvalidInputError("no items to measure", "items");
    const passes = settings.passes ?? ((item: BatteryItem, output: string) => scoreItem(item, output).pass === true);
    const targetSequence = await target.createSequence();
    const draftSequence = await draft.createSequence();
    try {
        const strict = new Tally();
        const oracle = new Tally();
        const byTask = new Map<string, {items: number; strict: Tally; oracle: Tally}>();
        for (const item of items) {
            settings.signal?.throwIfAborted();
            const prompt = batteryPromptTokens(target, draft, item, settings.maxTokens, settings.chatTemplate);
            // As generate() does with its default addBos.
            if (addsBos(target) && prompt[0] !== target.bosToken) prompt.unshift(target.bosToken!);
            let task = byTask.get(item.task);
            if (task === undefined) byTask.set(item.task, (task = {items: 0, strict: new Tally(), oracle: new Tally()}));
            task.items++;
            for (const [useOracle, tallies] of [
                [false, [strict, task.strict]],
                [true, [oracle, task.oracle]]
            ] as const) {
                const run = await decodeItem({target, draft, targetSequence, draftSequence, item, prompt, settings, passes, useOracle});
                for (const tally of tallies) tally.add(run);
            }
        }
        const strictTotals = strict.totals();
        const oracleTotals = oracle.totals();
        return {
            gamma: settings.gamma,
            items: items.length,
            strict: strictTotals,
            oracle: oracleTotals,
            gain: oracleTotals.meanAcceptanceLength / strictTotals.meanAcceptanceLength - 1,
            byTask: [...byTask].map(([task, tallies]) => ({
                task,
                items: tallies.items,
                strict: tallies.strict.totals(),
                oracle: tallies.oracle.totals()
            }))
        };
    } finally {
        await targetSequence.dispose();
        await draftSequence.dispose();
    }
}

interface ItemRun {
    pass: boolean;
    drafts: number;
    draftTokens: number;
    acceptedTokens: number;
    rescuedTokens: number;
    checkedMismatches: number;
}

class Tally {
    private readonly sums: {-readonly [Key in Exclude<keyof OracleTotals, "meanAcceptanceLength">]: number} = {
        correct: 0,
        drafts: 0,
        draftTokens: 0,
        acceptedTokens: 0,
        rescuedTokens: 0,
        checkedMismatches: 0
    };

    public add(run: ItemRun): void {
        if (run.pass) this.sums.correct++;
        this.sums.drafts += run.drafts;
        this.sums.draftTokens += run.draftTokens;
        this.sums.acceptedTokens += run.acceptedTokens;
        this.sums.rescuedTokens += run.rescuedTokens;
        this.sums.checkedMismatches += run.checkedMismatches;
    }

    public totals(): OracleTotals {
        const {drafts, acceptedTokens} = this.sums;
        return {...this.sums, meanAcceptanceLength: drafts === 0 ? 1 : 1 + acceptedTokens / drafts};
    }
}

/**
 * Greedy speculative decoding of one item, step for step as the engine does it at temperature 0
 * (same draft length, context room, stop handling and counts), with the oracle's rescue optional.
 */
async function decodeItem(run: {
    target: ModelBackend;
    draft: ModelBackend;
    targetSequence: BackendSequence;
    draftSequence: BackendSequence;
    item: BatteryItem;
    prompt: readonly number[];
    settings: ScorePreservingOracleSettings;
    passes: (item: BatteryItem, output: string) => boolean;
    useOracle: boolean;
}): Promise<ItemRun> {
    const {target, settings, item, prompt} = run;
    const stop = settings.stop ?? [];
    const endTokens = new Set<number>(target.eosToken != null ? [target.eosToken] : []);
    const newDetector = () =>
        new StopDetector({endTokens, maxTokens: settings.maxTokens, stop, decode: (tokens) => target.detokenize(tokens)});
    const detector = newDetector();
    const result: ItemRun = {pass: false, drafts: 0, draftTokens: 0, acceptedTokens: 0, rescuedTokens: 0, checkedMismatches: 0};

    // Whether the item passes when the target finishes greedily after `emitted`.
    const survives = async (emitted: readonly number[]): Promise<boolean> => {
        result.checkedMismatches++;
        const check = newDetector();
        if (check.accept(emitted).finished == null) {
            const completion = await generate(target, undefined, [...prompt, ...emitted], {
                gamma: 0,
                sampling: {temperature: 0},
                maxTokens: settings.maxTokens - emitted.length,
                stop,
                addBos: false
            });
            check.accept(completion.tokens);
        }
        return run.passes(item, check.text);
    };

    for (;;) {
        const context = [...prompt, ...detector.emittedTokens];
        // As the engine: a draft longer than the tokens still wanted, less one, is never proposed.
        const wanted = Math.min(
            settings.gamma,
            target.contextSize - context.length,
            settings.maxTokens - detector.emittedTokens.length - 1
        );
        const draftTokens: number[] = [];
        if (wanted > 0) {
            let [token] = await argmaxAfter(run.draftSequence, context, 1);
            for (let position = 0; position < wanted; position++) {
                draftTokens.push(token);
                if (position < wanted - 1) [token] = await argmaxAfter(run.draftSequence, [...context, ...draftTokens], 1);
            }
        }
        const targetArgmax = await argmaxAfter(run.targetSequence, [...context, ...draftTokens], draftTokens.length + 1);
        const emitted: number[] = [];
        let accepted = 0;
        for (; accepted < draftTokens.length; accepted++) {
            const token = draftTokens[accepted];
            if (token !== targetArgmax[accepted]) {
                if (!run.useOracle || !(await survives([...detector.emittedTokens, ...emitted, token]))) break;
                result.rescuedTokens++;
            }
            emitted.push(token);
        }
        emitted.push(targetArgmax[accepted]);
        if (draftTokens.length > 0) result.drafts++;
        result.draftTokens += draftTokens.length;
        result.acceptedTokens += accepted;
        if (detector.accept(emitted).finished != null || target.contextSize - context.length - emitted.length < 0) break;
    }
    result.pass = run.passes(item, detector.text);
    return result;
}

/**
 * The argmax after each of the last `count` tokens of `tokens`, reusing the sequence's cache for
 * the longest prefix it already holds (at least the last `count` tokens are evaluated again).
 */
async function argmaxAfter(sequence: BackendSequence, tokens: readonly number[], count: number): Promise<number[]> {
    const common = sharedPrefixLength(sequence.tokens, tokens, tokens.length - count);
    await sequence.rollback(sequence.tokens.length - common);
    const batch = tokens.slice(common);
    const positions = Array.from({length: count}, (_value, index) => batch.length - count + index);
    if (sequence.evaluateArgmax != null) return sequence.evaluateArgmax(batch, {positions});
    return (await sequence.evaluate(batch, {positions})).map((row) => argmax(row));
}
