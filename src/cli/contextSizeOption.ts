import {Option} from "commander";
import {readModelHeader} from "../backend/readModelHeader.js";
import {parseDecodePathSpec} from "../decodePaths/parseDecodePathSpec.js";
import {integerOption} from "./parseIntegerOption.js";

const CONTEXT_SIZE_HELP =
    "context tokens per sequence of each model (default: the model's training context, at most 4096); " +
    "a prompt that does not fit with --max-tokens is skipped and counted by audits, refused by generate and serve";

/** `--context-size`: the one context flag of every command that loads a model (docs/install.md, "Context size"). */
export function contextSizeOption(help = CONTEXT_SIZE_HELP): Option {
    return new Option("--context-size <N>", help).argParser(integerOption(8));
}

/**
 * A stderr line when `contextSize` (given as `flag`) exceeds the context the GGUF at `modelPath` was trained on
 * (`<arch>.context_length`): llama.cpp runs past it, but positions the model never saw in training
 * give degraded output. "" when it does not, or when the file does not state its training context.
 */
export function trainedContextWarning(
    command: string,
    modelPath: string,
    contextSize: number | undefined,
    flag = "--context-size"
): string {
    if (contextSize === undefined) return "";
    let trained: number | undefined;
    try {
        trained = readModelHeader(modelPath).trainedContextLength;
    } catch {
        return ""; // The load that follows reports an unreadable file with its reason.
    }
    if (trained === undefined || contextSize <= trained) return "";
    return (
        `${command}: warning: ${flag} ${contextSize} exceeds the ${trained}-token context ${modelPath} was trained on; ` +
        "positions past it were never seen in training and usually give degraded output\n"
    );
}

/** trainedContextWarning for an embedded decode path spec's `context=N` (target and draft); "" for any other spec. */
export function decodePathContextWarning(command: string, spec: string): string {
    let parsed;
    try {
        parsed = parseDecodePathSpec(spec);
    } catch {
        return ""; // Opening the path reports a bad spec.
    }
    if (parsed.kind !== "embedded") return "";
    return [parsed.target, parsed.draft]
        .map((path) => (path === undefined ? "" : trainedContextWarning(command, path, parsed.contextSize, "context=")))
        .join("");
}
