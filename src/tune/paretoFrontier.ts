/** A measured setting as the frontier sees it: both coordinates are maximised. */
export interface FrontierPoint {
    readonly accuracy: number;
    readonly tokensPerSecond: number;
}

/**
 * Which points are Pareto-optimal when maximising accuracy and tokens/s: a point is dropped only if
 * another is at least as good on both axes and strictly better on one. Duplicates of an optimal
 * point are all kept (neither dominates the other). Non-finite points never make the frontier.
 */
export function paretoFrontier(points: readonly FrontierPoint[]): boolean[] {
    const finite = (point: FrontierPoint) => Number.isFinite(point.accuracy) && Number.isFinite(point.tokensPerSecond);
    return points.map(
        (point) =>
            finite(point) &&
            !points.some(
                (other) =>
                    finite(other) &&
                    other.accuracy >= point.accuracy &&
                    other.tokensPerSecond >= point.tokensPerSecond &&
                    (other.accuracy > point.accuracy || other.tokensPerSecond > point.tokensPerSecond)
            )
    );
}
