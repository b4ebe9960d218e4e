#!/usr/bin/env node
import {CommanderError} from "commander";
import {SpecgateError} from "../errors.js";
import {createProgram} from "./createProgram.js";

/** The one place typed errors become messages and exit codes: 2 for bad input, 1 for a bug. */
async function main(): Promise<void> {
    try {
        await createProgram().exitOverride().parseAsync(process.argv);
    } catch (error) {
        if (error instanceof CommanderError) {
            process.exitCode = error.exitCode === 0 ? 0 : 2;
            return;
        }
        if (error instanceof SpecgateError) {
            process.stderr.write(`specgate: ${error.name}: ${error.message}\n`);
            process.exitCode = 2;
            return;
        }
        throw error;
    }
}

await main();
