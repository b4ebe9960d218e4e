// Every shell block (sh, bash, shell, console) of README.md and docs/*.md runs or is checked by the
// real CLI, one command at a time:
//  - `specgate …` commands of a few seconds on the files the repository ships (simulate, generate,
//    tais compute, canary, battery check) run as written, in-process from the repository root with
//    their output files sent to a scratch folder; each must exit as the block shows (`…; echo "exit
//    $?"` then `exit N`), else 0, and print the output lines a console block shows after it (`…`
//    stands for any text; `{…}` lines abbreviate YAML and are not compared). Identical commands
//    showing the same output run once.
//  - every other `specgate …` command (bench, serve, train, sweep… minutes each, or files a reader
//    supplies) is parsed by the real CLI with its action replaced: the command, every flag, each
//    flag's value parser and the required options are checked, nothing runs.
//  - `curl` commands are sent to the server the document's `specgate serve` command starts (as
//    written, on a free port), and must be answered 200.
//  - `npm` commands name scripts package.json has; `scripts/…` commands name files that exist.
// A block that cannot run here (it needs another machine, another project or a tool the repository
// does not install) is marked `<!-- docs-test: not run: REASON -->` on the line before its fence;
// its specgate commands are still parsed, and the marked blocks are listed below.
import {existsSync, readFileSync} from "node:fs";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {Command} from "commander";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {registerServeCommand} from "../cli/commands/serveCommand.js";
import {createProgram} from "../cli/createProgram.js";
import {ExitCode} from "../cli/exitCodes.js";
import {runCli} from "../cli/runCli.js";
import {defaultModelName} from "../serve/defaultModelName.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {documentationBlocks, repositoryRoot} from "./testing/codeBlocks.js";
import {type ShellCommand, shellCommands, shellLanguages, specgateArguments} from "./testing/shellCommands.js";

vi.setConfig(modelTestTimeouts);

/** The blocks marked as not run, by file and the first words of their first command: keep this short. */
const notRunBlocks = [
    "docs/audits.md: npx specgate corpus (needs jq)",
    "docs/library.md: cp node_modules/specgate/examples/library-quickstart.ts src/ (in a user's project; test/packedPackage.test.ts runs the same steps)",
    "docs/serving.md: export SPECGATE_API_KEY=change-me (needs a machine whose address is 10.0.0.5)"
];

/** Commands of seconds on the shipped files: these run; the others are parsed. */
const runnable = ["simulate", "generate", "tais compute", "canary", "battery check"];
/** Flags whose value is written, not read: pointed into the scratch folder. */
const outputFlags = new Set(["--json", "--report", "--counts", "--ledger", "--out", "--plots"]);
/** Commands whose npm runs without a script of that name. */
const npmBuiltins = new Set(["ci", "install", "exec"]);

const packageScripts = (JSON.parse(readFileSync(join(repositoryRoot, "package.json"), "utf8")) as {scripts: Record<string, string>})
    .scripts;
const blocks = documentationBlocks().filter((block) => shellLanguages.has(block.language));
const commands = blocks.flatMap((block) => shellCommands(block));

let scratch: string;
beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "specgate-doc-shell-"));
});
afterAll(async () => {
    await rm(scratch, {recursive: true, force: true});
});

function where(command: ShellCommand): string {
    return `${command.block.file}:${command.block.line}: ${command.line.slice(0, 140)}`;
}

/** Whether a specgate command runs here (else it is parsed): a cheap command on files that exist, with no shell variables. */
function runsHere(args: readonly string[], command: ShellCommand): boolean {
    const name = args.filter((word) => !word.startsWith("-")).slice(0, 2);
    if (!runnable.some((candidate) => candidate === name[0] || candidate === name.join(" "))) return false;
    if (command.block.notRun !== undefined || command.line.replace('echo "exit $?"', "").includes("$")) return false;
    return args.every((word, index) => {
        if (outputFlags.has(args[index - 1] ?? "")) return true;
        return [...word.matchAll(/[\w./-]+\.(?:gguf|jsonl|json|csv|tsv)\b/g)].every((file) => existsSync(join(repositoryRoot, file[0])));
    });
}

/** The arguments with every output file moved into the scratch folder. */
function scratchOutputs(args: readonly string[]): string[] {
    return args.map((word, index) =>
        outputFlags.has(args[index - 1] ?? "") && word !== "-" ? join(scratch, word.replace(/\//g, "_")) : word
    );
}

/** Why the real CLI refuses the arguments (an unknown command or flag, a bad flag value, a missing required option), or null. */
async function parseProblem(args: readonly string[]): Promise<string | null> {
    const program = createProgram();
    const dry = (command: Command): void => {
        command.exitOverride().configureOutput({writeOut: () => undefined, writeErr: () => undefined});
        // A leaf command's action is replaced: parsing checks everything commander knows, and nothing runs.
        if (command.commands.length === 0) command.action(() => undefined);
        command.commands.forEach(dry);
    };
    dry(program);
    try {
        await program.parseAsync([...args], {from: "user"});
        return null;
    } catch (error) {
        return (error as Error).message;
    }
}

/** Runs the CLI in-process and returns its exit code and everything it printed. */
async function runCaptured(args: readonly string[]): Promise<{code: number; output: string}> {
    let output = "";
    const capture = (chunk: unknown): boolean => {
        output += String(chunk);
        return true;
    };
    const out = vi.spyOn(process.stdout, "write").mockImplementation(capture);
    const err = vi.spyOn(process.stderr, "write").mockImplementation(capture);
    try {
        return {code: await runCli(args), output};
    } finally {
        out.mockRestore();
        err.mockRestore();
    }
}

/** Whether `printed` has a line that the shown line describes (`…` and `...` stand for any text). */
function shows(printed: string, shown: string): boolean {
    const pattern = shown
        .split(/…|\.\.\./)
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
        .join(".*");
    return new RegExp(`^\\s*${pattern}\\s*$`, "m").test(printed);
}

/**
 * Whether a shown output line stands for itself: not only an ellipsis, and not a flow-style `{…}` or
 * `[…]` abbreviation of the block YAML a command prints.
 */
function literal(line: string): boolean {
    return line.replace(/[….\s]/g, "") !== "" && !/[{}[\]]/.test(line);
}

/** Starts `specgate serve` with the given arguments (its port replaced by a free one), hands its URL to `use`, then stops it. */
async function withServer(args: readonly string[], use: (url: string) => Promise<void>): Promise<void> {
    const portAt = args.indexOf("--port");
    const onFreePort = portAt < 0 ? [...args, "--port", "0"] : args.map((word, index) => (index === portAt + 1 ? "0" : word));
    const program = new Command().exitOverride().configureOutput({writeOut: () => undefined, writeErr: () => undefined});
    let failure: unknown;
    registerServeCommand(program, {
        onListening: (server, stop) => {
            void use(server.url)
                .catch((error: unknown) => (failure = error))
                .finally(() => stop());
        }
    });
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
        await program.parseAsync(["node", "specgate", ...onFreePort]);
    } finally {
        err.mockRestore();
    }
    if (failure !== undefined) throw failure instanceof Error ? failure : new Error(String(failure));
}

/** A curl command as a fetch: its URL on `base`, method, headers and body. */
async function sendCurl(words: readonly string[], base: string): Promise<{status: number; body: string}> {
    const headers: Record<string, string> = {};
    let body: string | undefined;
    let url: string | undefined;
    for (let index = 1; index < words.length; index++) {
        const word = words[index];
        if (word === "-H") {
            const [name, ...value] = words[++index].split(":");
            headers[name.trim()] = value.join(":").trim();
        } else if (word === "-d") body = words[++index];
        else if (!word.startsWith("-")) url = word;
    }
    const path = new URL(/^https?:/.test(url!) ? url! : `http://${url}`).pathname;
    const response = await fetch(`${base}${path}`, {method: body === undefined ? "GET" : "POST", headers, body});
    return {status: response.status, body: await response.text()};
}

describe("shell blocks in the docs", () => {
    it("are found in README.md and the guides, and only the listed blocks are marked as not run", () => {
        expect(commands.filter((command) => command.block.file === "README.md").length).toBeGreaterThan(5);
        const marked = blocks
            .filter((block) => block.notRun !== undefined)
            .map((block) => {
                const first = shellCommands(block)[0].words.slice(0, 3).join(" ");
                return `${block.file}: ${first} (${block.notRun})`;
            });
        expect(marked).toEqual(notRunBlocks);
    });

    it("hold only commands this test can run or check", () => {
        const unknown = commands
            .filter((command) => command.block.notRun === undefined)
            .filter((command) => {
                const [program] = command.words.filter((word) => !/^[A-Z_][A-Z0-9_]*=/.test(word));
                return specgateArguments(command.words) === null && !["curl", "npm"].includes(program) && !program.startsWith("scripts/");
            })
            .map(where);
        expect(unknown).toEqual([]);
    });

    it("name npm scripts package.json has, and repository scripts that exist", () => {
        const problems: string[] = [];
        for (const command of commands) {
            const words = command.words.filter((word) => !/^[A-Z_][A-Z0-9_]*=/.test(word));
            if (words[0] === "npm") {
                const script = words[1] === "run" ? words[2] : words[1];
                if (!npmBuiltins.has(script) && packageScripts[script] === undefined)
                    problems.push(`${where(command)}: no npm script ${script}`);
            }
            if (words[0].startsWith("scripts/") && !existsSync(join(repositoryRoot, words[0])))
                problems.push(`${where(command)}: no ${words[0]}`);
        }
        expect(problems).toEqual([]);
    });

    it("README's commands say `npx specgate` and write outside the repository (a reader runs them from its root)", () => {
        for (const command of commands.filter((candidate) => candidate.block.file === "README.md")) {
            const args = specgateArguments(command.words);
            if (args === null) continue;
            expect(command.words[0], where(command)).toBe("npx");
            args.forEach((word, index) => {
                if (outputFlags.has(args[index - 1] ?? "") && word !== "-")
                    expect(word.startsWith("/") && !word.startsWith(repositoryRoot), `${where(command)}: ${word}`).toBe(true);
            });
        }
    });

    const specgate = commands.flatMap((command) => {
        const args = specgateArguments(command.words);
        return args === null ? [] : [{command, args}];
    });
    const parsed = specgate.filter(({command, args}) => !runsHere(args, command));

    it("parse every specgate command that does not run here with the real CLI", async () => {
        const problems: string[] = [];
        for (const {command, args} of parsed) {
            const problem = await parseProblem(args);
            if (problem !== null) problems.push(`${where(command)}: ${problem}`);
        }
        expect(problems).toEqual([]);
    });

    it("the dry parse fails an unknown flag, a bad flag value and a missing required option", async () => {
        expect(await parseProblem(["generate", "--target", "t.gguf", "Hi"])).toBeNull();
        expect(await parseProblem(["generate", "--target", "t.gguf", "--no-such-flag", "Hi"])).toMatch(/unknown option '--no-such-flag'/);
        expect(await parseProblem(["serve", "--target", "t.gguf", "--gamma", "99"])).toMatch(/--gamma/);
        expect(await parseProblem(["serve", "--draft", "d.gguf"])).toMatch(/required option '--target/);
    });

    // One run per distinct command: the same canary appears in README.md, audits.md and serving.md.
    const runs = new Map<string, {command: ShellCommand; args: string[]}>();
    for (const {command, args} of specgate.filter((entry) => !parsed.includes(entry))) {
        const key = JSON.stringify([
            args.map((word, index) => (outputFlags.has(args[index - 1] ?? "") ? "OUT" : word)),
            command.shownExit,
            command.shownOutput
        ]);
        if (!runs.has(key)) runs.set(key, {command, args});
    }

    it("run the cheap commands of README.md and several guides", () => {
        const files = new Set([...runs.values()].map(({command}) => command.block.file));
        for (const file of ["README.md", "docs/audits.md", "docs/drafters.md", "docs/policies.md"])
            expect(files.has(file), file).toBe(true);
    });

    for (const {command, args} of runs.values())
        it(`runs as written: ${where(command)}`, async () => {
            const {code, output} = await runCaptured(scratchOutputs(args));
            expect(code, output).toBe(command.shownExit ?? ExitCode.success);
            const missing = command.shownOutput.filter((line) => literal(line) && !shows(output, line));
            expect(missing, output).toEqual([]);
        });

    it("the TypeScript clients name the model id the documented server serves", () => {
        const served = defaultModelName(join(repositoryRoot, "models", "target", "model.gguf"));
        const clients = documentationBlocks().filter((block) => block.language === "ts" && block.body.includes("new OpenAI("));
        expect(clients.length).toBeGreaterThanOrEqual(2);
        for (const client of clients)
            for (const [, id] of client.body.matchAll(/model: "([^"]+)"/g)) expect(id, `${client.file}:${client.line}`).toBe(served);
    });

    it("README's quoted telemetry line is what its generate example prints (tok/s aside)", async () => {
        const readme = readFileSync(join(repositoryRoot, "README.md"), "utf8").replace(/\n/g, " ");
        const quoted = /`(\[model, strict, γ=4\][^`]*)`/.exec(readme)?.[1];
        expect(quoted, "a quoted telemetry line").toBeDefined();
        const generate = [...runs.values()].find(({command, args}) => command.block.file === "README.md" && args[0] === "generate");
        const {output} = await runCaptured(scratchOutputs(generate!.args));
        const printed = output.split("\n").find((line) => line.startsWith("[model, strict, γ=4]"));
        expect(printed?.replace(/[\d.]+ tok\/s/, "… tok/s")).toBe(quoted);
    });

    for (const block of blocks.filter((candidate) => candidate.notRun === undefined && /^\s*curl /m.test(candidate.body))) {
        const curls = shellCommands(block).filter((command) => command.words[0] === "curl");
        // The server is the document's own: the last `specgate serve` before the curl commands.
        const serve = specgate
            .filter(
                ({command, args}) =>
                    command.block.file === block.file &&
                    command.block.line <= block.line &&
                    args[0] === "serve" &&
                    !command.line.includes("$")
            )
            .at(-1);
        it(`answers the curl commands of ${block.file}:${block.line} 200, on the server its own serve command starts`, async () => {
            expect(serve, "a specgate serve command before the curl block").toBeDefined();
            const answers: string[] = [];
            await withServer(serve!.args, async (url) => {
                for (const curl of curls) {
                    const {status, body} = await sendCurl(curl.words, url);
                    answers.push(`${status} ${status === 200 ? "" : body.slice(0, 300)}`.trim());
                }
            });
            expect(answers).toEqual(curls.map(() => "200"));
        });
    }
});
