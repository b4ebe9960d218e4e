/** The values of /metrics' `drafter` label: a closed set, whatever drafter specs clients send. */
export const drafterMetricKinds = ["model", "model:retokenize", "ngram", "suffix"] as const;

/**
 * The `drafter` label of a drafter's counters: its kind, never the parameters a request gave it
 * (`suffix:2:1:32:500000` counts under `suffix`), so the number of series stays fixed however many
 * specs clients send. A chain's members count under their own kinds, a token tree under `model`.
 */
export function drafterMetricLabel(memberLabel: string): string {
    if (memberLabel === "model:retokenize") return memberLabel;
    const kind = memberLabel.split(":", 1)[0];
    return (drafterMetricKinds as readonly string[]).includes(kind) ? kind : "other";
}
