import {type LoadModelBackendOptions, loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {trainedContextWarning} from "./contextSizeOption.js";

/** A command's target and, when it names one, its draft. */
export interface CliModels<Draft extends ModelBackend | undefined = ModelBackend | undefined> {
    readonly target: ModelBackend;
    readonly draft: Draft;
}

/**
 * Loads the target and, when a path is given, the draft with the same options; the target is
 * disposed of when the draft fails to load. After both loads, a stderr line (as `command`) for each
 * model whose training context is shorter than `loadOptions.contextSize`. `load` loads one model
 * (loadModelBackend unless a caller, e.g. a test, gives another).
 */
export async function openCliModels(
    command: string,
    paths: {target: string; draft: string},
    loadOptions: LoadModelBackendOptions,
    load?: typeof loadModelBackend
): Promise<CliModels<ModelBackend>>;
export async function openCliModels(
    command: string,
    paths: {target: string; draft?: string | undefined},
    loadOptions: LoadModelBackendOptions,
    load?: typeof loadModelBackend
): Promise<CliModels>;
export async function openCliModels(
    command: string,
    paths: {target: string; draft?: string | undefined},
    loadOptions: LoadModelBackendOptions,
    load: typeof loadModelBackend = loadModelBackend
): Promise<CliModels> {
    const target = await load(paths.target, loadOptions);
    let draft: ModelBackend | undefined;
    try {
        draft = paths.draft != null ? await load(paths.draft, loadOptions) : undefined;
    } catch (error) {
        await target.dispose();
        throw error;
    }
    for (const path of [paths.target, paths.draft])
        if (path != null) process.stderr.write(trainedContextWarning(command, path, loadOptions.contextSize));
    return {target, draft};
}
