import {mkdir, mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {letterPieces} from "../gguf/letterPieces.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import type {Command} from "commander";
import {createProgram} from "./createProgram.js";
import {ExitCode} from "./exitCodes.js";
import {runCliCaptured} from "./testing/runCliCaptured.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const root = new URL("../../", import.meta.url).pathname;
const shipped = (path: string) => join(root, path);
/** A model path that does not exist: a command that checks its outputs first never gets to load it. */
const absentModel = "/nonexistent/model.gguf";

let directory: string;
let scored: string;
let unscored: string;
let twoGroups: string;
let counts: string;

const cli = runCliCaptured;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-contract-"));
    scored = join(directory, "scored.jsonl");
    await writeFile(
        scored,
        ["a", "b", "c", "d"]
            .map((id, index) =>
                JSON.stringify({
                    id,
                    task: index % 2 === 0 ? "sums" : "echo",
                    prompt: `Question: ${index} + 1?\nAnswer:`,
                    reference: String(index + 1)
                })
            )
            .join("\n")
    );
    unscored = join(directory, "unscored.jsonl");
    await writeFile(unscored, JSON.stringify({id: "a", task: "chat", prompt: "Hello"}));
    twoGroups = scored;
    counts = join(directory, "counts.csv");
    await writeFile(counts, "cell_id,task,arm,n_total,n_safety_pass\nc,t,target_only,100,90\nc,t,speculative,100,90\n");
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("the exit-code contract", () => {
    it("--version prints package.json's version and exits 0", async () => {
        const version = (JSON.parse(await readFile(shipped("package.json"), "utf8")) as {version: string}).version;
        expect(await cli("--version")).toEqual({code: ExitCode.success, stdout: `${version}\n`, stderr: ""});
    });

    it("--help lists every exit code", async () => {
        const {code, stdout} = await cli("--help");
        expect(code).toBe(0);
        for (const value of Object.values(ExitCode)) expect(stdout).toMatch(new RegExp(`^ {2}${value} +\\S`, "m"));
    });

    it("every command's --help lists its exit codes and shows numeric defaults as numbers", async () => {
        const leaves = (command: Command, path: string[]): string[][] =>
            command.commands.length === 0
                ? [path]
                : command.commands.filter((child) => child.name() !== "help").flatMap((child) => leaves(child, [...path, child.name()]));
        const paths = leaves(createProgram(), []);
        expect(paths.length).toBeGreaterThanOrEqual(18);
        for (const path of paths) {
            const {code, stdout} = await cli(...path, "--help");
            expect(code, path.join(" ")).toBe(ExitCode.success);
            expect(stdout, path.join(" ")).toMatch(/\nExit codes:\n {2}0 {2}\S[^]*\n {2}2 {2}\S/);
            expect(stdout, path.join(" ")).not.toMatch(/\(default: "-?\d*\.?\d+"\)/);
        }
    });

    it("a missing subcommand is bad usage, at the top and in a command group alike", async () => {
        for (const args of [[], ["fairness"], ["tais"], ["ocm"], ["family"]]) {
            const {code, stderr} = await cli(...args);
            expect(code, args.join(" ")).toBe(ExitCode.badInput);
            expect(stderr).toMatch(/^Usage: specgate/);
        }
    });

    it("every commander usage error is exit 2 with one line and a pointer to --help, never the whole help", async () => {
        const cases: string[][] = [
            ["simulate", "--input", "examples/strict-step.json", "--samples", "NaN"],
            ["simulate", "--input", "examples/strict-step.json", "--gama", "1"],
            ["generate", "--target", absentModel, "--gamma", "-1", "hi"],
            ["generate", "--target", absentModel],
            ["bench", "--target", absentModel, "--draft", absentModel, "--repeats", "0"],
            ["ocm", "build", "--target", absentModel, "--draft", absentModel, "--corpus", "x", "--out", "m.json", "--gama", "2"],
            ["corpus", "--out", "x", "--samples", "many"],
            ["fixtures", "--out", "x", "--typo"],
            ["canary", "--typo"],
            ["tais", "run", "--typo"],
            ["tais", "compute", "--format", "xml"],
            ["sweep", "--typo"],
            ["calibrate", "--typo"],
            ["fairness", "analyze", "--typo"],
            ["fairness", "mitigate", "--typo"],
            ["serve", "--target", absentModel, "--port", "99999"],
            ["train", "--typo"],
            ["export", "--typo"],
            ["family", "build", "--typo"],
            ["no-such-command"]
        ];
        for (const args of cases) {
            const {code, stdout, stderr} = await cli(...args);
            const label = args.join(" ");
            expect(code, label).toBe(ExitCode.badInput);
            expect(stdout, label).toBe("");
            expect(stderr, label).not.toMatch(/Usage:|Options:/);
            expect(stderr.trimEnd().split("\n").length, label).toBeLessThanOrEqual(2);
            expect(stderr, label).toMatch(/^specgate[^\n]*: /);
            expect(stderr, label).toMatch(/--help`\)\n$/);
        }
    });

    it("a context no machine could hold is bad input, found from the GGUF header before the model loads", async () => {
        const started = performance.now();
        const {code, stderr} = await cli("generate", "--target", shipped("models/target/model.gguf"), "--context-size", "99999999", "hi");
        expect(code).toBe(ExitCode.badInput);
        expect(stderr).toMatch(
            /^specgate generate: contextSize: 99999999 tokens need a \d+ GiB KV cache per sequence, more than this machine's /
        );
        expect(stderr.trimEnd().split("\n")).toHaveLength(1);
        expect(performance.now() - started).toBeLessThan(2000);
    });

    it("typed errors lead with what is wrong, not a class name", async () => {
        const {code, stderr} = await cli("simulate", "--input", "/nonexistent/step.json");
        expect(code).toBe(ExitCode.badInput);
        expect(stderr).toBe("specgate simulate: /nonexistent/step.json: cannot read file: ENOENT\n");
    });
});

describe("every output is checked before any work: a bad output path is one line and exit 2", () => {
    const missingFolder = "/nonexistent/out.json";
    const aFile = shipped("package.json");
    const model = absentModel;
    // Each command with an output it cannot write. The models do not exist: the output check has to
    // come first for the message to name the output (so none of these loads a model or runs anything).
    const cases: Array<{args: () => string[]; flag: string}> = [
        {args: () => ["simulate", "--input", shipped("examples/strict-step.json"), "--json", missingFolder], flag: "--json"},
        {args: () => ["generate", "--target", model, "--json", missingFolder, "hi"], flag: "--json"},
        {
            args: () => [
                "bench",
                "--target",
                model,
                "--draft",
                model,
                "--prompts",
                shipped("examples/family-prompts.jsonl"),
                "--json",
                missingFolder
            ],
            flag: "--json"
        },
        {args: () => ["fixtures", "--out", aFile], flag: "--out"},
        {
            args: () => [
                "ocm",
                "build",
                "--target",
                model,
                "--draft",
                model,
                "--corpus",
                shipped("examples/family-prompts.jsonl"),
                "--out",
                missingFolder
            ],
            flag: "--out"
        },
        {args: () => ["corpus", "--out", aFile, "--samples", "4"], flag: "--out"},
        {args: () => ["export", "--model", model, "--out", directory], flag: "--out"},
        {args: () => ["train", "--corpus", directory, "--out", "/nonexistent/model.gguf", "--shape", "8,1,1,8"], flag: "--out"},
        {args: () => ["family", "build", "--out", aFile], flag: "--out"},
        {args: () => ["family", "cards", "--models", aFile], flag: "--models"},
        {args: () => ["tais", "compute", "--input", counts, "--json", missingFolder], flag: "--json"},
        {
            args: () => [
                "tais",
                "run",
                "--battery",
                scored,
                "--a",
                `embedded:target=${model}`,
                "--b",
                `embedded:target=${model}`,
                "--json",
                missingFolder
            ],
            flag: "--json"
        },
        {
            args: () => [
                "tais",
                "run",
                "--battery",
                scored,
                "--a",
                `embedded:target=${model}`,
                "--b",
                `embedded:target=${model}`,
                "--counts",
                missingFolder
            ],
            flag: "--counts"
        },
        {
            args: () => [
                "tais",
                "run",
                "--battery",
                scored,
                "--a",
                `embedded:target=${model}`,
                "--b",
                `embedded:target=${model}`,
                "--ledger",
                directory
            ],
            flag: "--ledger"
        },
        {
            args: () => [
                "canary",
                "--a",
                `embedded:target=${model}`,
                "--b",
                `embedded:target=${model}`,
                "--prompts",
                shipped("examples/family-prompts.jsonl"),
                "--report",
                missingFolder
            ],
            flag: "--report"
        },
        {
            args: () => [
                "canary",
                "--a",
                `embedded:target=${model}`,
                "--b",
                `embedded:target=${model}`,
                "--prompts",
                shipped("examples/family-prompts.jsonl"),
                "--json",
                missingFolder
            ],
            flag: "--json"
        },
        {
            args: () => [
                "sweep",
                "--target",
                model,
                "--draft",
                model,
                "--battery",
                scored,
                "--policies",
                "strict",
                "--json",
                missingFolder
            ],
            flag: "--json"
        },
        {
            args: () => [
                "sweep",
                "--target",
                model,
                "--draft",
                model,
                "--battery",
                scored,
                "--policies",
                "strict",
                "--report",
                missingFolder
            ],
            flag: "--report"
        },
        {
            args: () => ["sweep", "--target", model, "--draft", model, "--battery", scored, "--policies", "strict", "--plots", aFile],
            flag: "--plots"
        },
        {
            args: () => [
                "calibrate",
                "--target",
                model,
                "--draft",
                model,
                "--battery",
                scored,
                "--max-accuracy-drop",
                "1",
                "--report",
                missingFolder
            ],
            flag: "--report"
        },
        {
            args: () => ["fairness", "analyze", "--target", model, "--draft", model, "--battery", twoGroups, "--json", missingFolder],
            flag: "--json"
        },
        {
            args: () => ["fairness", "analyze", "--target", model, "--draft", model, "--battery", twoGroups, "--equalize", missingFolder],
            flag: "--equalize"
        },
        {
            args: () => ["fairness", "mitigate", "--target", model, "--draft", model, "--battery", twoGroups, "--out", missingFolder],
            flag: "--out"
        }
    ];
    for (const {args, flag} of cases) {
        it(`${args()
            .slice(0, 2)
            .filter((word) => !word.startsWith("-"))
            .join(" ")} ${flag}`, async () => {
            const {code, stdout, stderr} = await cli(...args());
            expect(code).toBe(ExitCode.badInput);
            expect(stdout).toBe("");
            expect(stderr).toMatch(
                new RegExp(`^specgate[^\\n]*: ${flag}: (cannot write|cannot create|\\S+ is a (file|folder))[^\\n]*\\n$`)
            );
        });
    }
});

describe("inputs are checked before any model work", () => {
    it("tais run refuses a battery with nothing to score before opening a decode path", async () => {
        const {code, stderr} = await cli(
            "tais",
            "run",
            "--battery",
            unscored,
            "--a",
            `embedded:target=${absentModel}`,
            "--b",
            `embedded:target=${absentModel}`
        );
        expect(code).toBe(ExitCode.badInput);
        expect(stderr).toMatch(/^specgate tais run: --battery: has no scored items/);
    });

    it("sweep refuses a draft with another tokenizer and an unreadable --memory before the first configuration", async () => {
        const other = join(directory, "other");
        await mkdir(other);
        // 129 pieces more than the byte vocabulary: one token beyond llama.cpp's largest allowed size difference.
        const pair = await writeRandomLlamaPair({directory: other, seed: 3, pieces: letterPieces(129)});
        const target = shipped("models/target/model.gguf");
        const common = ["sweep", "--target", target, "--battery", scored, "--max-tokens", "4"];
        const mismatched = await cli(...common, "--draft", pair.draftPath, "--policies", "strict");
        expect(mismatched.code).toBe(ExitCode.badInput);
        expect(mismatched.stderr).toMatch(
            /^specgate sweep: --draft: target has 260 tokens, draft has 389: 129 apart, at most 128 allowed\n$/
        );
        const memory = await cli(
            ...common,
            "--draft",
            shipped("models/draft/model.gguf"),
            "--policies",
            "calibrated",
            "--memory",
            join(directory, "absent.json")
        );
        expect(memory.code).toBe(ExitCode.badInput);
        // Only the error: no configuration ran (each would print a progress line).
        expect(memory.stderr).not.toMatch(/target-only:/);
        expect(memory.stderr.trimEnd().split("\n")).toHaveLength(1);
        expect(memory.stderr).toMatch(/absent\.json/);
    });
});
