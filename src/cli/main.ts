#!/usr/bin/env node
import {installInterruptHandlers} from "./interrupts.js";
import {exitOnClosedOutput} from "./closedOutput.js";
import {runCli} from "./runCli.js";

installInterruptHandlers();
exitOnClosedOutput();
process.exitCode = await runCli(process.argv.slice(2));
