import {InvalidDrafterError} from "../errors.js";
import {type DrafterSpec, drafterLabel, drafterUsesModel, parseDrafterSpec} from "../engine/drafters/parseDrafterSpec.js";

/** Help text of --drafter, shared by every command that decodes. */
export const drafterOptionHelp =
    "drafter: model (the --draft GGUF), model:retokenize (a --draft GGUF of another vocabulary, drafting in text), " +
    "eagle3 (the --draft GGUF is an EAGLE-3 head, which `model` also drafts with), " +
    "ngram[:MIN[:MAX[:LENGTH]]] (prompt lookup, defaults 3:16:γ), " +
    "suffix[:MIN_MATCH[:MIN_COUNT[:DEPTH[:MAX_NODES]]]] (earlier outputs, defaults 3:1:24:100000) or a chain tried in order, e.g. ngram+model; " +
    "default: model with --draft, else none";

/**
 * The drafter of a command line: --drafter SPEC, or `model` when only --draft is given, or none
 * (target-only). A spec that drafts with a model needs --draft, and --draft with a spec that never
 * uses it is refused (the model would load for nothing) unless `allowUnusedDraft` (serve, whose
 * requests may still ask for `model`).
 */
export function resolveCliDrafter(
    drafter: string | undefined,
    draftPath: string | undefined,
    field = "--drafter",
    allowUnusedDraft = false
): DrafterSpec | undefined {
    if (drafter == null) return draftPath != null ? {kind: "model"} : undefined;
    const spec = parseDrafterSpec(drafter, field);
    if (drafterUsesModel(spec) && draftPath == null)
        throw new InvalidDrafterError(`"${drafterLabel(spec)}" drafts with a model: give --draft D.gguf`, field);
    if (!drafterUsesModel(spec) && draftPath != null && !allowUnusedDraft)
        throw new InvalidDrafterError(
            `"${drafterLabel(spec)}" does not use --draft; chain it (e.g. ${drafterLabel(spec)}+model) or drop --draft`,
            field
        );
    return spec;
}

/**
 * A comma-separated list of drafter specs (bench's --drafters). --draft is needed when any of them
 * drafts with a model and refused when none does; a drafter named twice is refused.
 */
export function resolveCliDrafterList(list: string, draftPath: string | undefined, field = "--drafters"): DrafterSpec[] {
    const specs = list.split(",").map((spec) => parseDrafterSpec(spec, field));
    const labels = new Set<string>();
    for (const spec of specs) {
        const label = drafterLabel(spec);
        if (labels.has(label)) throw new InvalidDrafterError(`names "${label}" twice`, field);
        labels.add(label);
    }
    const withModel = specs.find(drafterUsesModel);
    if (withModel != null && draftPath == null)
        throw new InvalidDrafterError(`"${drafterLabel(withModel)}" drafts with a model: give --draft D.gguf`, field);
    if (withModel == null && draftPath != null)
        throw new InvalidDrafterError(
            "no drafter in the list uses --draft; add model (or a chain such as ngram+model) or drop --draft",
            field
        );
    return specs;
}
