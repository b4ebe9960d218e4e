/**
 * Chance that at least one of k independent calls diverges when each does with probability p:
 * 1 − (1 − p)^k, for k = 1..maxCalls (drift article: 1.2% per call is ~6% over a 5-call session).
 */
export function compoundingRisk(perCallProbability: number, maxCalls = 10): {calls: number; risk: number}[] {
    return Array.from({length: maxCalls}, (_value, index) => ({calls: index + 1, risk: 1 - (1 - perCallProbability) ** (index + 1)}));
}
