import {SpecgateError} from "../errors.js";

/**
 * The command-line flag for each parameter name that library errors give as their `field`: the
 * library names what its caller passed (`maxAccuracyDrop`), and the CLI, which took it from a flag,
 * says which (`--max-accuracy-drop`). Fields not listed (`prompt`, `sampling.temperature`…) are
 * printed as they are.
 */
const flags: Readonly<Record<string, string>> = {
    battery: "--battery",
    by: "--by",
    calibrationShare: "--calibration-share",
    draft: "--draft",
    drafter: "--drafter",
    drafters: "--drafters",
    gamma: "--gamma",
    gammas: "--gamma",
    groups: "--battery",
    items: "--battery",
    jsonSchema: "--json-schema",
    ledger: "--ledger",
    maxAccuracyDrop: "--max-accuracy-drop",
    maxMismatch: "--max-mismatch",
    maxTokens: "--max-tokens",
    memory: "--memory",
    oracle: "--oracle",
    policies: "--policies",
    policy: "--policy",
    requestDrafters: "--request-drafters",
    requestPolicies: "--request-policies",
    shape: "--shape",
    speed: "--speed",
    thresholds: "--thresholds",
    tokenizer: "--tokenizer"
};

/** Where a command reads a parameter from a flag of another name (the canary's items are its --prompts, bench's policies its --policies). */
const commandFlags: Readonly<Record<string, Readonly<Record<string, string>>>> = {
    "specgate bench": {policy: "--policies"},
    "specgate canary": {items: "--prompts"},
    "specgate fairness analyze": {maxGamma: "--equalize-max-gamma"},
    "specgate fairness mitigate": {drafterPath: "--draft"},
    "specgate ocm build": {prompts: "--corpus"},
    "specgate sweep": {policy: "--policies"}
};

/** The flag `command` reads `field` from, if one does. */
export function flagForField(field: string, command: string): string | undefined {
    return commandFlags[command]?.[field] ?? flags[field];
}

/**
 * An error's message as the CLI prints it: a SpecgateError whose field is (or starts with, as in
 * `policy.threshold`) a parameter a flag of `command` gives names the flag instead; anything else
 * keeps its message.
 */
export function cliErrorMessage(error: Error, command: string): string {
    if (!(error instanceof SpecgateError) || error.field === undefined || !error.message.startsWith(`${error.field}: `))
        return error.message;
    const [, name, rest] = /^([A-Za-z]+)(.*)$/s.exec(error.field) ?? [];
    const flag = name !== undefined && (rest === "" || /^[.[]/.test(rest)) ? flagForField(name, command) : undefined;
    return flag === undefined ? error.message : `${flag}${rest}${error.message.slice(error.field.length)}`;
}
