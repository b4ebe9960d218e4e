import {existsSync, readFileSync} from "node:fs";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {defaultModelName} from "../serve/defaultModelName.js";
import {ExitCode} from "./exitCodes.js";
import {runCli} from "./runCli.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const root = new URL("../../", import.meta.url).pathname;
const readme = readFileSync(join(root, "README.md"), "utf8");

/** Commands cheap enough to run here (seconds on the shipped files); serve never returns, the rest train or sweep. */
const cheapCommands = ["simulate", "generate", "tais compute", "canary"];
/** Flags whose value is written, not read: pointed at a scratch folder. */
const outputFlags = new Set(["--json", "--report", "--counts", "--ledger", "--out", "--plots", "--equalize"]);

interface Example {
    readonly line: string;
    readonly words: string[];
    /** The exit code the README shows after the command (`; echo "exit $?"` then "exit N"), if it shows one. */
    readonly shownExit: number | null;
}

/** The `npx specgate …` commands of the README's sh and console blocks, continuation lines joined. */
function readmeExamples(): Example[] {
    const examples: Example[] = [];
    const blocks = readme.matchAll(/^[ \t]*```(sh|console)\n([\s\S]*?)^[ \t]*```/gm);
    for (const [, , body] of blocks) {
        const lines = body
            .replace(/\\\n\s*/g, "")
            .split("\n")
            .map((line) => line.trim().replace(/^\$ /, ""));
        lines.forEach((line, index) => {
            if (!line.startsWith("npx specgate ")) return;
            const shown = line.includes('echo "exit $?"')
                ? lines
                      .slice(index + 1)
                      .map((next) => /^exit (\d+)$/.exec(next))
                      .find((match) => match != null)
                : null;
            examples.push({line, words: shellWords(line.split(/;\s*echo /)[0]), shownExit: shown == null ? null : Number(shown[1])});
        });
    }
    return examples;
}

/** Splits a command line as sh does for the quoting the README uses ('…', "…", no escapes inside). */
function shellWords(line: string): string[] {
    const words: string[] = [];
    for (const match of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3]);
    return words;
}

/** The files a command reads, as named in its arguments (decode path specs included). */
function inputFiles(words: readonly string[]): string[] {
    return words.flatMap((word, index) =>
        outputFlags.has(words[index - 1] ?? "") ? [] : [...word.matchAll(/[\w./-]+\.(?:gguf|jsonl|json|csv)\b/g)].map((match) => match[0])
    );
}

let scratch: string;
beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "specgate-readme-"));
});
afterAll(async () => {
    await rm(scratch, {recursive: true, force: true});
});

describe("README examples", () => {
    const examples = readmeExamples();

    it("say `npx specgate` (a bare `specgate` is not on the PATH after npm ci)", () => {
        expect(examples.length).toBeGreaterThan(5);
        const blocks = [...readme.matchAll(/^[ \t]*```(?:sh|console)\n([\s\S]*?)^[ \t]*```/gm)].map((match) => match[1]).join("\n");
        const bare = [...blocks.matchAll(/^[ \t]*(?:\$ )?specgate \S+/gm)].map((match) => match[0].trim());
        expect(bare).toEqual([]);
    });

    it("the serve example's curl and client use the id the server serves", () => {
        const ids = [...readme.matchAll(/"model":\s*"([^"]+)"|model: "([^"]+)"/g)].map((match) => match[1] ?? match[2]);
        expect(ids.length).toBeGreaterThanOrEqual(2);
        expect(new Set(ids)).toEqual(new Set([defaultModelName(join(root, "models/target/model.gguf"))]));
    });

    const runnable = examples.filter((example) => {
        const command = example.words
            .slice(2)
            .filter((word) => !word.startsWith("-"))
            .slice(0, 2)
            .join(" ");
        return (
            cheapCommands.some((cheap) => command === cheap || command.startsWith(`${cheap} `) || command.split(" ")[0] === cheap) &&
            !example.words.some((word) => word.includes("$")) &&
            inputFiles(example.words).every((file) => existsSync(join(root, file)))
        );
    });

    it("write their outputs outside the repository (a reader runs them from its root)", () => {
        for (const example of readmeExamples())
            example.words.forEach((word, index, words) => {
                if (outputFlags.has(words[index - 1] ?? "") && word !== "-")
                    expect(word.startsWith("/") && !word.startsWith(root), `${words[index - 1]} ${word}`).toBe(true);
            });
    });

    it("include a runnable example of each cheap command on the shipped files", () => {
        for (const command of cheapCommands)
            expect(
                runnable.some((example) => example.words.slice(2).join(" ").startsWith(command)),
                command
            ).toBe(true);
    });

    for (const example of runnable) {
        it(`runs as written: ${example.line.slice(0, 110)}`, async () => {
            expect(process.cwd()).toBe(root.replace(/\/$/, ""));
            const args = example.words
                .slice(2)
                .map((word, index, words) =>
                    outputFlags.has(words[index - 1] ?? "") && word !== "-" ? join(scratch, word.replace(/\//g, "_")) : word
                );
            let stderr = "";
            const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
            const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
                stderr += String(chunk);
                return true;
            });
            let code: number;
            try {
                code = await runCli(args);
            } finally {
                out.mockRestore();
                err.mockRestore();
            }
            expect(code, stderr).toBe(example.shownExit ?? ExitCode.success);
        });
    }
});
