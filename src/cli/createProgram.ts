import {Command} from "commander";
import {registerBenchCommand} from "./commands/benchCommand.js";
import {registerCalibrateCommand} from "./commands/calibrateCommand.js";
import {registerCanaryCommand} from "./commands/canaryCommand.js";
import {registerCorpusCommand} from "./commands/corpusCommand.js";
import {registerExportCommand} from "./commands/exportCommand.js";
import {registerFamilyCommand} from "./commands/familyCommand.js";
import {registerFairnessCommand} from "./commands/fairnessCommand.js";
import {registerFixturesCommand} from "./commands/fixturesCommand.js";
import {registerGenerateCommand} from "./commands/generateCommand.js";
import {registerOcmCommand} from "./commands/ocmCommand.js";
import {registerServeCommand} from "./commands/serveCommand.js";
import {registerSimulateCommand} from "./commands/simulateCommand.js";
import {registerSweepCommand} from "./commands/sweepCommand.js";
import {registerTaisComputeCommand} from "./commands/taisComputeCommand.js";
import {registerTaisRunCommand} from "./commands/taisRunCommand.js";
import {registerTrainCommand} from "./commands/trainCommand.js";

/** Build the CLI program; tests call this and `parseAsync` without spawning a process. */
export function createProgram(): Command {
    const program = new Command()
        .name("specgate")
        .description("Speculative decoding with a draft model, and proof of what the speed cost.")
        .showHelpAfterError();
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
    registerExportCommand(program);
    registerFamilyCommand(program);
    return program;
}
