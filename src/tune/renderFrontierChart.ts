import {escapeXml} from "../plots/escapeXml.js";
import {niceTicks} from "../plots/niceTicks.js";
import type {SweepResult, SweepRole} from "./SweepResult.js";

const width = 720;
const height = 480;
const margin = {left: 64, right: 24, top: 44, bottom: 92};

const styles: Record<SweepRole, {colour: string; name: string}> = {
    "target-only": {colour: "#222222", name: "target only"},
    "draft-only": {colour: "#888888", name: "draft only"},
    strict: {colour: "#4c78a8", name: "strict SD"},
    policy: {colour: "#f58518", name: "configuration"},
    "random-acceptance": {colour: "#b279a2", name: "random acceptance"}
};

/**
 * Accuracy against tokens/s, as the Fuzzy SD paper Figure 2: every configuration and baseline with its Wilson
 * CI, the Pareto frontier joined in red, and the random-allocation baseline as a grey dashed curve
 * (straight in accuracy–time, hence curved in accuracy–tokens/s). Plain SVG, no scripts or fonts.
 */
export function renderFrontierChart(result: SweepResult, title = "Accuracy vs speed"): string {
    const points = result.points;
    const speeds = [
        ...points.map((point) => point.tokensPerSecond),
        ...result.randomAllocation.map((point) => point.tokensPerSecond)
    ].filter(Number.isFinite);
    const accuracies = points.flatMap((point) => [point.interval.lower, point.interval.upper]).map((value) => 100 * value);
    const xTicks = niceTicks(Math.min(...speeds) * 0.95, Math.max(...speeds) * 1.05);
    const yTicks = niceTicks(Math.max(0, Math.min(...accuracies) - 2), Math.min(100, Math.max(...accuracies) + 2));
    const [xLow, xHigh] = [xTicks[0], xTicks[xTicks.length - 1]];
    const [yLow, yHigh] = [yTicks[0], yTicks[yTicks.length - 1]];
    const plotWidth = width - margin.left - margin.right;
    const plotHeight = height - margin.top - margin.bottom;
    const x = (value: number) => (margin.left + (plotWidth * (value - xLow)) / (xHigh - xLow)).toFixed(1);
    const y = (fraction: number) => (margin.top + plotHeight * (1 - (100 * fraction - yLow) / (yHigh - yLow))).toFixed(1);
    const parts: string[] = [
        `<rect width="${width}" height="${height}" fill="white"/>`,
        `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15">${escapeXml(`${title} (${result.settings.items} items, 95% Wilson CI)`)}</text>`
    ];
    for (const tick of yTicks) {
        const tickY = margin.top + plotHeight * (1 - (tick - yLow) / (yHigh - yLow));
        parts.push(
            `<line x1="${margin.left}" x2="${width - margin.right}" y1="${tickY.toFixed(1)}" y2="${tickY.toFixed(1)}" stroke="#e5e5e5"/>`
        );
        parts.push(`<text x="${margin.left - 8}" y="${(tickY + 4).toFixed(1)}" text-anchor="end" font-size="11">${tick}</text>`);
    }
    for (const tick of xTicks)
        parts.push(`<text x="${x(tick)}" y="${height - margin.bottom + 18}" text-anchor="middle" font-size="11">${tick}</text>`);
    const allocation = result.randomAllocation
        .map((point, index) => `${index === 0 ? "M" : "L"}${x(point.tokensPerSecond)} ${y(point.accuracy)}`)
        .join(" ");
    parts.push(`<path d="${allocation}" fill="none" stroke="#aaaaaa" stroke-width="2" stroke-dasharray="6 4"/>`);
    const frontier = points.filter((point) => point.onFrontier).sort((a, b) => a.tokensPerSecond - b.tokensPerSecond);
    if (frontier.length > 1)
        parts.push(
            `<path d="${frontier.map((point, index) => `${index === 0 ? "M" : "L"}${x(point.tokensPerSecond)} ${y(point.accuracy)}`).join(" ")}" fill="none" stroke="#e45756" stroke-width="2"/>`
        );
    const placed: Box[] = [];
    // Frontier points and baselines claim label space first; a label that would overlap is left
    // out (the table names every point), which keeps dense sweeps readable.
    const labelOrder = [...points].sort(
        (a, b) =>
            Number(b.onFrontier) - Number(a.onFrontier) ||
            Number(b.role !== "policy" && b.role !== "random-acceptance") - Number(a.role !== "policy" && a.role !== "random-acceptance")
    );
    for (const point of points) {
        const {colour} = styles[point.role];
        parts.push(
            `<line x1="${x(point.tokensPerSecond)}" x2="${x(point.tokensPerSecond)}" y1="${y(point.interval.lower)}" y2="${y(point.interval.upper)}" stroke="${colour}" stroke-opacity="0.45"/>`
        );
        const outline = point.onFrontier ? `stroke="#e45756" stroke-width="2.5"` : `stroke="white" stroke-width="1"`;
        parts.push(`<circle cx="${x(point.tokensPerSecond)}" cy="${y(point.accuracy)}" r="5" fill="${colour}" ${outline}/>`);
    }
    for (const point of labelOrder) {
        const text = point.label.replace(/ \(≈ .*\)$/, "");
        const [pointX, pointY] = [Number(x(point.tokensPerSecond)), Number(y(point.accuracy))];
        const textWidth = text.length * 5.4;
        const box = [
            [7, -15],
            [7, 4],
            [-7 - textWidth, -15],
            [-7 - textWidth, 4]
        ]
            .map(([dx, dy]): Box => ({left: pointX + dx, top: pointY + dy, right: pointX + dx + textWidth, bottom: pointY + dy + 11}))
            .find((candidate) => candidate.left >= 0 && candidate.right <= width && !placed.some((other) => overlaps(candidate, other)));
        if (box == null) continue;
        placed.push(box);
        parts.push(
            `<text x="${box.left.toFixed(1)}" y="${(box.bottom - 2).toFixed(1)}" font-size="9" fill="#333">${escapeXml(text)}</text>`
        );
    }
    parts.push(`<line x1="${margin.left}" x2="${margin.left}" y1="${margin.top}" y2="${margin.top + plotHeight}" stroke="#222"/>`);
    parts.push(
        `<line x1="${margin.left}" x2="${width - margin.right}" y1="${margin.top + plotHeight}" y2="${margin.top + plotHeight}" stroke="#222"/>`
    );
    parts.push(
        `<text x="${margin.left + plotWidth / 2}" y="${height - margin.bottom + 38}" text-anchor="middle" font-size="12">tokens / s</text>`
    );
    parts.push(
        `<text x="18" y="${margin.top + plotHeight / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 18 ${margin.top + plotHeight / 2})">accuracy (%)</text>`
    );
    const legend = [
        ...(["target-only", "draft-only", "strict", "policy", "random-acceptance"] as const).map((role) => ({
            mark: `<circle cx="0" cy="-4" r="5" fill="${styles[role].colour}"/>`,
            name: styles[role].name
        })),
        {mark: `<line x1="-6" x2="8" y1="-4" y2="-4" stroke="#e45756" stroke-width="2"/>`, name: "Pareto frontier"},
        {mark: `<line x1="-6" x2="8" y1="-4" y2="-4" stroke="#aaaaaa" stroke-width="2" stroke-dasharray="6 4"/>`, name: "random allocation"}
    ];
    legend.forEach((entry, index) => {
        const column = index % 4;
        const row = Math.floor(index / 4);
        const legendX = margin.left + 10 + column * 165;
        const legendY = height - 30 + row * 18;
        parts.push(
            `<g transform="translate(${legendX} ${legendY})">${entry.mark}<text x="12" y="0" font-size="11">${escapeXml(entry.name)}</text></g>`
        );
    });
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, sans-serif">\n${parts.map((part) => `  ${part}`).join("\n")}\n</svg>\n`;
}

interface Box {
    readonly left: number;
    readonly top: number;
    readonly right: number;
    readonly bottom: number;
}

function overlaps(a: Box, b: Box): boolean {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}
