import {escapeXml} from "../plots/escapeXml.js";
import type {FairnessAnalysis} from "./FairnessAnalysis.js";
import {niceTicks} from "../plots/niceTicks.js";

const width = 640;
const height = 360;
const margin = {left: 60, right: 20, top: 40, bottom: 60};

/**
 * Bars of the measured speed-up per group with their bootstrap CI whiskers, a hollow diamond for
 * the model-predicted S_T, and a dashed line at 1× (no speed-up). Plain SVG, no scripts or fonts.
 */
export function renderSpeedupChart(analysis: FairnessAnalysis): string {
    const groups = analysis.groups;
    const values = groups
        .flatMap((group) => [
            group.measured.speedup.low,
            group.measured.speedup.high,
            group.measured.speedup.estimate,
            group.measured.costCurveSpeedup ?? 0
        ])
        .filter(Number.isFinite);
    const ticks = niceTicks(0, Math.max(1.2, ...values));
    const top = ticks[ticks.length - 1];
    const plotWidth = width - margin.left - margin.right;
    const plotHeight = height - margin.top - margin.bottom;
    const y = (value: number) => margin.top + plotHeight * (1 - Math.max(0, Math.min(value, top)) / top);
    const slot = plotWidth / groups.length;
    const barWidth = Math.min(60, slot * 0.6);
    const parts: string[] = [
        `<rect width="${width}" height="${height}" fill="white"/>`,
        `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(`Speed-up per ${analysis.by} (γ = ${analysis.settings.gamma}, ${Math.round(100 * analysis.settings.confidence)}% CI)`)}</text>`
    ];
    for (const tick of ticks) {
        parts.push(
            `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" stroke="#e5e5e5"/>`
        );
        parts.push(`<text x="${margin.left - 8}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end" font-size="11">${tick}×</text>`);
    }
    parts.push(
        `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y(1).toFixed(1)}" y2="${y(1).toFixed(1)}" stroke="#888" stroke-dasharray="5 4"/>`
    );
    groups.forEach((group, index) => {
        const centre = margin.left + slot * (index + 0.5);
        const {estimate, low, high} = group.measured.speedup;
        if (Number.isFinite(estimate))
            parts.push(
                `<rect x="${(centre - barWidth / 2).toFixed(1)}" y="${y(estimate).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${(y(0) - y(estimate)).toFixed(1)}" fill="#4c78a8"/>`
            );
        if (Number.isFinite(low) && Number.isFinite(high)) {
            const whisker = `stroke="#222" stroke-width="1.5"`;
            parts.push(
                `<line x1="${centre.toFixed(1)}" x2="${centre.toFixed(1)}" y1="${y(low).toFixed(1)}" y2="${y(high).toFixed(1)}" ${whisker}/>`
            );
            for (const end of [low, high])
                parts.push(
                    `<line x1="${(centre - 8).toFixed(1)}" x2="${(centre + 8).toFixed(1)}" y1="${y(end).toFixed(1)}" y2="${y(end).toFixed(1)}" ${whisker}/>`
                );
        }
        const predicted = group.measured.costCurveSpeedup;
        if (predicted != null && Number.isFinite(predicted)) {
            const py = y(predicted);
            parts.push(
                `<path d="M${centre.toFixed(1)} ${(py - 6).toFixed(1)} l6 6 l-6 6 l-6 -6 z" fill="white" stroke="#e45756" stroke-width="1.5"/>`
            );
        }
        parts.push(
            `<text x="${centre.toFixed(1)}" y="${height - margin.bottom + 18}" text-anchor="middle" font-size="12">${escapeXml(group.name)}</text>`
        );
        parts.push(
            `<text x="${centre.toFixed(1)}" y="${height - margin.bottom + 33}" text-anchor="middle" font-size="10" fill="#555">α ${group.measured.acceptanceRate.toFixed(2)}</text>`
        );
    });
    parts.push(`<line x1="${margin.left}" x2="${margin.left}" y1="${margin.top}" y2="${y(0)}" stroke="#222"/>`);
    parts.push(
        `<rect x="${width - 215}" y="${height - 20}" width="12" height="10" fill="#4c78a8"/><text x="${width - 198}" y="${height - 11}" font-size="11">measured</text>`
    );
    parts.push(
        `<path d="M${width - 125} ${height - 21} l6 6 l-6 6 l-6 -6 z" fill="white" stroke="#e45756" stroke-width="1.5"/><text x="${width - 112}" y="${height - 11}" font-size="11">cost-curve S (α̂)</text>`
    );
    return svgDocument(parts);
}

function svgDocument(parts: readonly string[]): string {
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, sans-serif">\n${parts.map((part) => `  ${part}`).join("\n")}\n</svg>\n`;
}
