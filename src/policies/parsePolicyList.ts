import {InvalidPolicyError} from "../errors.js";
import {parsePolicySpec} from "./parsePolicySpec.js";
import type {PolicyConfig} from "./policyConfigSchema.js";

/**
 * A comma-separated list of policy specs (parsePolicySpec), where an entry may also be a JSON
 * object: commas inside braces, brackets or JSON strings do not split, so
 * `strict,{"kind":"fuzzy","threshold":0.4,"topK":50},calibrated:6:0.01` is three policies.
 */
export function parsePolicyList(text: string, field = "policies"): PolicyConfig[] {
    return splitPolicyList(text, field).map((spec) => parsePolicySpec(spec, field));
}

/** The entries of a policy list, trimmed, empty ones dropped. */
export function splitPolicyList(text: string, field = "policies"): string[] {
    const entries: string[] = [];
    let depth = 0;
    let inString = false;
    let start = 0;
    for (let index = 0; index < text.length; index++) {
        const character = text[index];
        if (inString) {
            if (character === "\\") index++;
            else if (character === '"') inString = false;
            continue;
        }
        if (character === '"') inString = true;
        else if (character === "{" || character === "[") depth++;
        else if (character === "}" || character === "]") {
            depth--;
            if (depth < 0) throw new InvalidPolicyError(`unbalanced "${character}" at character ${index + 1} of "${text}"`, field);
        } else if (character === "," && depth === 0) {
            entries.push(text.slice(start, index));
            start = index + 1;
        }
    }
    if (depth !== 0 || inString) throw new InvalidPolicyError(`unterminated JSON object in "${text}"`, field);
    entries.push(text.slice(start));
    return entries.map((entry) => entry.trim()).filter((entry) => entry !== "");
}
