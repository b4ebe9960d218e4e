import {escapeXml} from "../plots/escapeXml.js";
import type {FairnessAnalysis} from "./FairnessAnalysis.js";
import {niceTicks} from "../plots/niceTicks.js";

const width = 640;
const height = 400;
const margin = {left: 60, right: 30, top: 50, bottom: 70};

/**
 * α against D_T, one point pair per group: filled for the measured acceptance, hollow for the
 * analytic Σ min(p, q). The dashed curve is the Disparate Impacts paper Theorem 1's floor α ≥ 1 − √(D/2) (Pinsker and
 * D ≥ KL), which the analytic points must sit on or above; horizontal whiskers are D_T's CI.
 */
export function renderAlphaDivergenceScatter(analysis: FairnessAnalysis): string {
    const groups = analysis.groups;
    const divergences = groups
        .flatMap((group) => [
            group.distributions.crossEntropy.low,
            group.distributions.crossEntropy.high,
            group.distributions.crossEntropy.estimate
        ])
        .filter(Number.isFinite);
    const xTicks = divergences.length === 0 ? [0, 1] : niceTicks(Math.min(...divergences) * 0.9, Math.max(...divergences) * 1.05);
    const yTicks = niceTicks(0, 1);
    const [xLow, xHigh] = [xTicks[0], xTicks[xTicks.length - 1]];
    const plotWidth = width - margin.left - margin.right;
    const plotHeight = height - margin.top - margin.bottom;
    const x = (value: number) => margin.left + (plotWidth * (Math.max(xLow, Math.min(value, xHigh)) - xLow)) / (xHigh - xLow);
    const y = (value: number) => margin.top + plotHeight * (1 - Math.max(0, Math.min(value, 1)));
    const parts: string[] = [
        `<rect width="${width}" height="${height}" fill="white"/>`,
        `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(`Acceptance α vs cross-entropy D_T per ${analysis.by}`)}</text>`
    ];
    for (const tick of yTicks) {
        parts.push(
            `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" stroke="#e5e5e5"/>`
        );
        parts.push(`<text x="${margin.left - 8}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end" font-size="11">${tick}</text>`);
    }
    for (const tick of xTicks)
        parts.push(`<text x="${x(tick).toFixed(1)}" y="${height - margin.bottom + 18}" text-anchor="middle" font-size="11">${tick}</text>`);
    const bound = Array.from({length: 41}, (_value, index) => xLow + ((xHigh - xLow) * index) / 40)
        .map((d, index) => `${index === 0 ? "M" : "L"}${x(d).toFixed(1)} ${y(1 - Math.sqrt(d / 2)).toFixed(1)}`)
        .join(" ");
    parts.push(`<path d="${bound}" fill="none" stroke="#999" stroke-dasharray="5 4"/>`);
    for (const group of groups) {
        const {estimate, low, high} = group.distributions.crossEntropy;
        if (!Number.isFinite(estimate)) continue;
        const measuredY = y(group.measured.acceptanceRate);
        if (Number.isFinite(low) && Number.isFinite(high))
            parts.push(
                `<line x1="${x(low).toFixed(1)}" x2="${x(high).toFixed(1)}" y1="${measuredY.toFixed(1)}" y2="${measuredY.toFixed(1)}" stroke="#4c78a8"/>`
            );
        parts.push(`<circle cx="${x(estimate).toFixed(1)}" cy="${measuredY.toFixed(1)}" r="5" fill="#4c78a8"/>`);
        parts.push(
            `<circle cx="${x(estimate).toFixed(1)}" cy="${y(group.distributions.alpha).toFixed(1)}" r="5" fill="white" stroke="#e45756" stroke-width="1.5"/>`
        );
        parts.push(
            `<text x="${(x(estimate) + 8).toFixed(1)}" y="${(measuredY - 6).toFixed(1)}" font-size="12">${escapeXml(group.name)}</text>`
        );
    }
    parts.push(`<line x1="${margin.left}" x2="${margin.left}" y1="${margin.top}" y2="${y(0)}" stroke="#222"/>`);
    parts.push(`<line x1="${margin.left}" x2="${width - margin.right}" y1="${y(0)}" y2="${y(0)}" stroke="#222"/>`);
    parts.push(
        `<text x="${margin.left + plotWidth / 2}" y="${height - margin.bottom + 38}" text-anchor="middle" font-size="12">D_T = E[−Σ p log q] (nats)</text>`
    );
    parts.push(
        `<text x="16" y="${margin.top + plotHeight / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 16 ${margin.top + plotHeight / 2})">α</text>`
    );
    const legendY = height - 14;
    parts.push(
        `<circle cx="${margin.left + 6}" cy="${legendY - 4}" r="5" fill="#4c78a8"/><text x="${margin.left + 16}" y="${legendY}" font-size="11">measured α_T</text>`
    );
    parts.push(
        `<circle cx="${margin.left + 126}" cy="${legendY - 4}" r="5" fill="white" stroke="#e45756" stroke-width="1.5"/><text x="${margin.left + 136}" y="${legendY}" font-size="11">analytic Σ min(p, q)</text>`
    );
    parts.push(
        `<line x1="${margin.left + 276}" x2="${margin.left + 300}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="#999" stroke-dasharray="5 4"/><text x="${margin.left + 306}" y="${legendY}" font-size="11">1 − √(D/2) floor</text>`
    );
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, sans-serif">\n${parts.map((part) => `  ${part}`).join("\n")}\n</svg>\n`;
}
