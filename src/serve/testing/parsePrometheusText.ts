/** One sample line of the Prometheus text exposition format. */
export interface PrometheusSample {
    readonly name: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly value: number;
}

const samplePattern = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/gy;

/**
 * Parses Prometheus text format (version 0.0.4) into samples; comments (# HELP, # TYPE) are skipped.
 * Strict: a line that is not a comment and not a well-formed sample throws, so a malformed
 * exposition fails the test that reads it.
 */
export function parsePrometheusText(text: string): PrometheusSample[] {
    const samples: PrometheusSample[] = [];
    for (const [index, raw] of text.split("\n").entries()) {
        const line = raw.trim();
        if (line === "" || line.startsWith("#")) continue;
        const match = samplePattern.exec(line);
        if (match === null) throw new Error(`line ${index + 1} is not a sample: ${line}`);
        const labels: Record<string, string> = {};
        const labelText = match[2] ?? "";
        labelPattern.lastIndex = 0;
        while (labelPattern.lastIndex < labelText.length) {
            const label = labelPattern.exec(labelText);
            if (label === null) throw new Error(`line ${index + 1} has malformed labels: ${labelText}`);
            labels[label[1]] = label[2].replace(/\\(["\\n])/g, (_escape, character: string) => (character === "n" ? "\n" : character));
        }
        const value = match[3] === "+Inf" ? Infinity : match[3] === "-Inf" ? -Infinity : Number(match[3]);
        if (Number.isNaN(value) && match[3] !== "NaN") throw new Error(`line ${index + 1} has a bad value: ${match[3]}`);
        samples.push({name: match[1], labels, value});
    }
    return samples;
}

/** Sum of the samples named `name` whose labels include `labels`. */
export function sumSamples(samples: readonly PrometheusSample[], name: string, labels: Readonly<Record<string, string>> = {}): number {
    return samples
        .filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
        .reduce((total, sample) => total + sample.value, 0);
}
