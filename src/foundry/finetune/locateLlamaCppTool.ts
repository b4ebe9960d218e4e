import {accessSync, constants} from "node:fs";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {LlamaCppToolMissingError} from "./LlamaCppToolMissingError.js";

export type LlamaCppTool = "llama-finetune" | "llama-quantize";

/** The repository root: this file sits three folders below it, in src/ (tsx) and in dist/ (compiled) alike. */
const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** Where scripts/buildLlamaCppTools.sh puts the binaries, unless SPECGATE_LLAMA_CPP_BIN names another folder. */
export function llamaCppToolPath(tool: LlamaCppTool, environment: NodeJS.ProcessEnv = process.env): string {
    const folder = environment.SPECGATE_LLAMA_CPP_BIN ?? join(packageRoot, ".tmp", "llama.cpp", "build", "bin");
    return join(folder, tool);
}

export function llamaCppToolExists(tool: LlamaCppTool, environment: NodeJS.ProcessEnv = process.env): boolean {
    try {
        accessSync(llamaCppToolPath(tool, environment), constants.X_OK);
        return true;
    } catch {
        return false;
    }
}

/** The tool's path, or a LlamaCppToolMissingError naming it and the build script. */
export function locateLlamaCppTool(tool: LlamaCppTool, environment: NodeJS.ProcessEnv = process.env): string {
    const path = llamaCppToolPath(tool, environment);
    if (!llamaCppToolExists(tool, environment)) throw new LlamaCppToolMissingError(tool, path);
    return path;
}
