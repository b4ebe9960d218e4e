import {InvalidInputError} from "../errors.js";

/**
 * Spearman's rank correlation ρ: the Pearson correlation of the two samples' ranks, tied values
 * sharing their average rank (so it is exact with ties, unlike 1 − 6Σd²/(n(n²−1))). NaN when
 * either sample is constant, because ρ is then undefined.
 */
export function spearmanCorrelation(x: readonly number[], y: readonly number[]): number {
    if (x.length !== y.length) throw new InvalidInputError(`has ${y.length} values, x has ${x.length}`, "y");
    if (x.length < 2) throw new InvalidInputError(`needs at least 2 pairs, got ${x.length}`, "x");
    [...x, ...y].forEach((value, index) => {
        if (!Number.isFinite(value)) throw new InvalidInputError(`value ${index} is ${value}`, index < x.length ? "x" : "y");
    });
    return pearson(averageRanks(x), averageRanks(y));
}

function averageRanks(values: readonly number[]): number[] {
    const order = values.map((_value, index) => index).sort((a, b) => values[a] - values[b]);
    const ranks = new Array<number>(values.length);
    for (let start = 0; start < order.length;) {
        let end = start;
        while (end + 1 < order.length && values[order[end + 1]] === values[order[start]]) end++;
        // Ranks are 1-based; a run of ties from start to end shares the mean of their ranks.
        const rank = (start + end) / 2 + 1;
        for (let index = start; index <= end; index++) ranks[order[index]] = rank;
        start = end + 1;
    }
    return ranks;
}

function pearson(x: readonly number[], y: readonly number[]): number {
    const meanX = x.reduce((sum, value) => sum + value, 0) / x.length;
    const meanY = y.reduce((sum, value) => sum + value, 0) / y.length;
    let covariance = 0;
    let varianceX = 0;
    let varianceY = 0;
    for (let index = 0; index < x.length; index++) {
        const dx = x[index] - meanX;
        const dy = y[index] - meanY;
        covariance += dx * dy;
        varianceX += dx * dx;
        varianceY += dy * dy;
    }
    return varianceX === 0 || varianceY === 0 ? NaN : covariance / Math.sqrt(varianceX * varianceY);
}
