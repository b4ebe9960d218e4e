import {spawn} from "node:child_process";
import {existsSync} from "node:fs";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";
import {Option, type Command} from "commander";
import {InvalidInputError} from "../../errors.js";
import {ExitCode, exitCodeHelp} from "../exitCodes.js";

/** The package's build script (shipped with it: package.json "files"), from dist/cli/commands/ or src/cli/commands/. */
export const buildScriptPath = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "scripts", "buildNativeBackend.mjs");

export interface BuildCommandOptions {
    readonly gpu?: "vulkan" | "cuda" | "off";
    readonly check?: boolean;
}

/** The build script's arguments: --strict always (a build the user asked for that fails is an error). */
export function buildScriptArguments(options: BuildCommandOptions): string[] {
    return [
        buildScriptPath,
        "--strict",
        ...(options.gpu === undefined ? [] : ["--gpu", options.gpu]),
        ...(options.check === true ? ["--check"] : [])
    ];
}

/**
 * Runs the build script in a child process, its output (steps, progress every 30 s, the fix on a
 * failure) copied to stderr; resolves with its exit code.
 */
export function runBuildScript(options: BuildCommandOptions): Promise<number> {
    if (!existsSync(buildScriptPath))
        return Promise.reject(new InvalidInputError(`${buildScriptPath} is missing: reinstall specgate`, "build"));
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, buildScriptArguments(options), {stdio: ["ignore", "pipe", "pipe"]});
        child.stdout.on("data", (chunk: Buffer) => process.stderr.write(chunk));
        child.stderr.on("data", (chunk: Buffer) => process.stderr.write(chunk));
        child.on("error", reject);
        child.on("close", (code) => resolve(code ?? ExitCode.verdictFailed));
    });
}

/** `specgate build`: builds the native addon in the installed package, for projects whose npm did not run its install script. */
export function registerBuildCommand(program: Command): void {
    program
        .command("build")
        .description(
            "build specgate's native llama.cpp addon (what `npm install` builds where npm runs install scripts; npm 11 runs them only once allowed). " +
                "Needs git, cmake ≥ 3.21 and a C++17 compiler; a few minutes the first time, incremental after; says each step on stderr"
        )
        .addOption(
            new Option("--gpu <vulkan|cuda|off>", "also build the Vulkan or CUDA addon (default: SPECGATE_GPU, else off)").choices([
                "vulkan",
                "cuda",
                "off"
            ])
        )
        .option("--check", "say where the llama.cpp source is and whether the tools are here; build nothing")
        .addHelpText(
            "after",
            exitCodeHelp(["success", "verdictFailed", "badInput"], {
                verdictFailed: "not built (with --check: could not build): the reason and the fix are on stderr"
            })
        )
        .action(async (options: BuildCommandOptions) => {
            process.exitCode = await runBuildScript(options);
        });
}
