import type {Chance} from "../random/Chance.js";
import {ScratchRow, sampleFromRow} from "./rowOperations.js";
import type {PositionDiagnostic, VerificationPolicy, VerificationResult, VerificationStep} from "./VerificationPolicy.js";

/**
 * Block verification (Sun, Mendlovic, Leviathan, Aharoni, Beirami, Ro, Suresh, "Block Verification
 * Accelerates Speculative Decoding", ICLR 2025, Algorithm 2): the draft block is verified jointly
 * instead of token by token. Lossless, and never accepts fewer tokens in expectation than `strict`.
 *
 * Notation (0-based; the paper's X_{i+1} is draftTokens[i]). For a block of γ draft tokens x_0..x_{γ−1}:
 *   P_i = targetProbs[i]  [V]  the target's row after the prompt and x_0..x_{i−1}   (i = 0..γ)
 *   Q_i = draftProbs[i]   [V]  the draft's row after the same prefix               (i = 0..γ−1)
 *   w_0 = 1,  w_{i+1} = min(1, w_i · P_i(x_i) / Q_i(x_i))          weights [γ+1]   (the paper's p_i)
 *   R_i(v) = max(w_i · P_i(v) − Q_i(v), 0),  r_i = Σ_v R_i(v)       residual at i   (i < γ)
 *   h_i = r_i / (r_i + 1 − w_i)  (i < γ),   h_γ = w_γ              stop probabilities [γ+1]
 *   τ = max{i : η_i ≤ h_i},  η_i ~ U(0, 1) independent             accepted length (h_0 = 1, so τ ≥ 0)
 *   emit x_0..x_{τ−1}, then y ~ P_γ if τ = γ (bonus), else y ~ norm(R_τ)
 *
 * τ is drawn backwards: i = γ, γ−1, …, stopping at the first success, so a step that keeps the whole
 * block computes no residual, and one that keeps τ tokens computes γ − τ residual rows (each one
 * pass over V, the last one reused for the draw). `strict` computes at most one.
 *
 * Why it is lossless (the paper's Theorem 1): by backward induction P(τ ≥ i | x_0..x_{i−1}) = w_i,
 * because E[w_{i+1} | x_<i] = Σ_v min(w_i·P_i(v), Q_i(v)) = w_i − r_i and h_i was chosen so that
 * (w_i − r_i) + (1 − w_i + r_i)·h_i = w_i. Hence P(τ = i, x_<i, y) = Q(x_<i)·R_i(y): the block keeps the
 * prefix x_<i with probability mass Q(x_<i)·w_i ≤ P(x_<i), and the residual R_i supplies exactly the
 * target mass of the continuations the kept prefix did not cover. Token-wise verification is the
 * special case that resets w to 1 after every accepted token; carrying the leftover w forward is
 * what lets a block keep a later token whose ratio P/Q exceeds 1 to make up for an earlier one below 1.
 *
 * Drafts without draft rows (n-gram / prompt-lookup) are verified as Q_i = δ_{x_i}, as `strict` does:
 * then w_{i+1} = w_i·P_i(x_i), r_i = w_i − w_{i+1}, and R_i is w_i·P_i without x_i; the accepted length
 * has exactly strict's distribution (no joint gain is possible for a deterministic proposal). A draft
 * token with Q_i(x_i) = 0 cannot have been drawn from Q_i and gets w = 0 (strict rejects it).
 *
 * At temperature 0 (one-hot target rows) the weights are 1 up to the first draft token that is not the
 * target's argmax and 0 from there, so τ is the matching prefix and y the target's argmax: exactly
 * `greedy` and `strict`.
 */
export function createBlockPolicy(): VerificationPolicy {
    const residual = new ScratchRow();
    const weights = new ScratchRow();
    return {
        kind: "block",
        lossless: true,
        readsTargetLogits: false,
        releasesRows: true,
        verify(step: VerificationStep, chance: Chance) {
            return verifyBlock(step, chance, residual, weights);
        }
    };
}

/**
 * One block-verification step (see createBlockPolicy). Deterministic given the decisions `chance`
 * returns: at most γ Bernoulli trials (η_i ≤ h_i, backwards) and one categorical draw.
 */
export function verifyBlock(
    step: VerificationStep,
    chance: Chance,
    residualScratch: ScratchRow,
    weightScratch: ScratchRow
): VerificationResult {
    const gamma = step.draftTokens.length;
    const weights = blockWeights(step, weightScratch.get(gamma + 1)); // [γ+1]
    let stop: {stopProbability: number; residualMass: number} | undefined; // at the position τ, when τ < γ
    let accepted = gamma;
    let emittedLast: number;
    // i = γ: keep the whole block with probability h_γ = w_γ, then a bonus token from P_γ.
    if (gamma === 0 || chance.accept(weights[gamma])) {
        emittedLast = sampleFromRow(step.targetProbs[gamma], chance);
    } else {
        const vocabularySize = step.targetProbs[0].length;
        const row = residualScratch.get(vocabularySize); // [V]
        for (accepted = gamma - 1; ; accepted--) {
            const residualMass = fillResidual(step, accepted, weights[accepted], row);
            const stopProbability = stopProbabilityAt(residualMass, weights[accepted]);
            stop = {stopProbability, residualMass};
            // h_0 = 1 (w_0 = 1), so the walk always ends by i = 0.
            if (accepted === 0 || chance.accept(stopProbability)) {
                // Rounding can leave no residual mass where one was due (P ≈ Q to the last bit): fall back to P.
                emittedLast = residualMass > 0 ? chance.choose(row, residualMass) : sampleFromRow(step.targetProbs[accepted], chance);
                break;
            }
        }
    }
    const emitted = Array.from({length: accepted}, (_value, index) => step.draftTokens[index]);
    emitted.push(emittedLast);
    return {
        acceptedCount: accepted,
        emitted,
        finalTokenSource: accepted === gamma ? "bonus" : "residual",
        positions: diagnostics(step, weights, accepted, emittedLast, stop)
    };
}

/**
 * w [γ+1]: w_0 = 1, w_{i+1} = min(1, w_i · P_i(x_i) / Q_i(x_i)); Q_i = δ_{x_i} without draft rows; a
 * token the draft row gives probability 0 gets weight 0 (it cannot have been drawn from Q_i).
 */
export function blockWeights(step: VerificationStep, weights: Float64Array): Float64Array {
    weights[0] = 1;
    for (let position = 0; position < step.draftTokens.length; position++) {
        const token = step.draftTokens[position];
        const targetProbability = step.targetProbs[position][token];
        const draftProbability = step.draftProbs == null ? 1 : step.draftProbs[position][token];
        const ratio = draftProbability > 0 ? targetProbability / draftProbability : 0;
        weights[position + 1] = Math.min(1, weights[position] * ratio);
    }
    return weights;
}

/**
 * Fills row [V] with R_i(v) = max(w_i·P_i(v) − Q_i(v), 0) (Q_i = δ_{x_i} without draft rows: w_i·P_i
 * with x_i removed, since w_i·P_i(x_i) ≤ 1) and returns its mass r_i. One pass over V, no allocation.
 */
export function fillResidual(step: VerificationStep, position: number, weight: number, row: Float64Array): number {
    const target = step.targetProbs[position];
    const draft = step.draftProbs?.[position];
    let mass = 0;
    if (draft == null) {
        for (let token = 0; token < target.length; token++) {
            const value = weight * target[token];
            row[token] = value;
            mass += value;
        }
        mass -= row[step.draftTokens[position]];
        row[step.draftTokens[position]] = 0;
        return Math.max(0, mass);
    }
    for (let token = 0; token < target.length; token++) {
        const difference = weight * target[token] - draft[token];
        const value = difference > 0 ? difference : 0;
        row[token] = value;
        mass += value;
    }
    return mass;
}

/**
 * h_i = r_i / (r_i + 1 − w_i). A zero denominator (r_i = 0 and w_i = 1) means the walk reaches i
 * with probability 0 (every continuation keeps w = 1); h_i = 1 then, so w_0 = 1 always stops at 0.
 */
export function stopProbabilityAt(residualMass: number, weight: number): number {
    // (1 − w) first: at w = 1 the denominator is r exactly and h = 1, not r / (r + 1 − 1) ≈ 1 − ε.
    const denominator = residualMass + (1 - weight);
    return denominator > 0 ? Math.min(1, residualMass / denominator) : 1;
}

/**
 * One entry per position up to the first one not kept (as the left-to-right policies report): the
 * kept ones with their weight, the first dropped one with the stop quantities and the token that
 * replaced it. A kept position may have P/Q < 1; block verification judges the prefix, not the token.
 */
function diagnostics(
    step: VerificationStep,
    weights: Float64Array,
    accepted: number,
    emittedLast: number,
    stop: {stopProbability: number; residualMass: number} | undefined
): PositionDiagnostic[] {
    const gamma = step.draftTokens.length;
    const positions: PositionDiagnostic[] = [];
    for (let position = 0; position < Math.min(accepted + 1, gamma); position++) {
        const draftToken = step.draftTokens[position];
        const values: Record<string, number> = {
            targetProbability: step.targetProbs[position][draftToken],
            draftProbability: step.draftProbs == null ? 1 : step.draftProbs[position][draftToken],
            blockWeight: weights[position + 1]
        };
        if (position < accepted) {
            positions.push({position, draftToken, accepted: true, reason: "block-accepted", values});
            continue;
        }
        positions.push({
            position,
            draftToken,
            accepted: false,
            reason: "block-rejected",
            values: {...values, prefixWeight: weights[position], ...stop, recoveredToken: emittedLast}
        });
    }
    return positions;
}
