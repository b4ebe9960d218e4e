import {readFileSync} from "node:fs";
import {Command} from "commander";
import {registerBatteryCommand} from "./commands/batteryCommand.js";
import {registerBenchCommand} from "./commands/benchCommand.js";
import {registerBuildCommand} from "./commands/buildCommand.js";
import {registerCalibrateCommand} from "./commands/calibrateCommand.js";
import {registerCanaryCommand} from "./commands/canaryCommand.js";
import {registerCorpusCommand} from "./commands/corpusCommand.js";
import {registerExportCommand} from "./commands/exportCommand.js";
import {registerFamilyCommand} from "./commands/familyCommand.js";
import {registerFairnessCommand} from "./commands/fairnessCommand.js";
import {registerFixturesCommand} from "./commands/fixturesCommand.js";
import {registerGenerateCommand} from "./commands/generateCommand.js";
import {registerInfoCommand} from "./commands/infoCommand.js";
import {registerOcmCommand} from "./commands/ocmCommand.js";
import {registerServeCommand} from "./commands/serveCommand.js";
import {registerSimulateCommand} from "./commands/simulateCommand.js";
import {registerSweepCommand} from "./commands/sweepCommand.js";
import {registerTaisComputeCommand} from "./commands/taisComputeCommand.js";
import {registerTaisRunCommand} from "./commands/taisRunCommand.js";
import {registerTrainCommand} from "./commands/trainCommand.js";
import {registerTrainEagle3Command} from "./commands/trainEagle3Command.js";
import {registerWidenEagle3Command} from "./commands/widenEagle3Command.js";
import {exitCodeHelp} from "./exitCodes.js";

/** Build the CLI program; tests call this and `parseAsync` without spawning a process. */
export function createProgram(): Command {
    const program = new Command()
        .name("specgate")
        .description("Speculative decoding with a draft model, and proof of what the speed cost.")
        .version(packageVersion(), "-V, --version", "print the specgate version");
    registerSimulateCommand(program);
    registerGenerateCommand(program);
    registerBenchCommand(program);
    registerFixturesCommand(program);
    registerOcmCommand(program);
    registerTaisComputeCommand(program);
    registerServeCommand(program);
    registerTaisRunCommand(program);
    registerCanaryCommand(program);
    registerCorpusCommand(program);
    registerFairnessCommand(program);
    registerSweepCommand(program);
    registerCalibrateCommand(program);
    registerTrainCommand(program);
    registerTrainEagle3Command(program);
    registerWidenEagle3Command(program);
    registerExportCommand(program);
    registerFamilyCommand(program);
    registerInfoCommand(program);
    registerBatteryCommand(program);
    registerBuildCommand(program);
    program.addHelpText(
        "after",
        exitCodeHelp([
            "success",
            "verdictFailed",
            "badInput",
            "insufficientData",
            "couldNotCompare",
            "internalError",
            "interrupted",
            "terminated"
        ])
    );
    // Commands without a verdict can only succeed or refuse their input; the others list their own codes.
    for (const path of commandsWithoutVerdict) findCommand(program, path).addHelpText("after", exitCodeHelp(["success", "badInput"]));
    reportUsageErrorsBriefly(program);
    return program;
}

const commandsWithoutVerdict = [
    "simulate",
    "generate",
    "bench",
    "fixtures",
    "ocm build",
    "corpus",
    "serve",
    "train",
    "train-eagle3",
    "widen-eagle3",
    "export",
    "family build",
    "family cards",
    "info",
    "battery check"
];

function findCommand(program: Command, path: string): Command {
    let command = program;
    for (const name of path.split(" ")) {
        const child = command.commands.find((candidate) => candidate.name() === name);
        if (child === undefined) throw new Error(`no command "${path}"`);
        command = child;
    }
    return command;
}

/** The version in package.json (two folders up from src/cli and from dist/cli alike). */
function packageVersion(): string {
    return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {version: string}).version;
}

/**
 * Every command, however deep: numeric defaults shown as numbers, and a usage error (unknown flag, bad value, missing argument) is one
 * line naming the command plus a pointer to its --help, and is thrown as a CommanderError for
 * main.ts to turn into exit code 2 instead of commander exiting the process with 1.
 */
function reportUsageErrorsBriefly(command: Command): void {
    const path = commandPath(command);
    // Defaults given as text ("0.015") are shown as the numbers they are.
    for (const option of command.options)
        if (
            typeof option.defaultValue === "string" &&
            option.defaultValueDescription === undefined &&
            /^-?\d*\.?\d+(?:e-?\d+)?$/i.test(option.defaultValue)
        )
            option.defaultValueDescription = option.defaultValue;
    command
        .exitOverride()
        .configureOutput({
            outputError: (text, write) => write(`${path}: ${text.replace(/^error: /, "").replace(/\n\(Did you mean/, " (did you mean")}`)
        })
        .showHelpAfterError(`(see \`${path} --help\`)`);
    for (const child of command.commands) reportUsageErrorsBriefly(child);
}

/** "specgate ocm build": the names from the program down to a command. */
export function commandPath(command: Command): string {
    const names: string[] = [];
    for (let current: Command | null = command; current != null; current = current.parent) names.unshift(current.name());
    return names.join(" ");
}
