import {execFileSync} from "node:child_process";
import {existsSync, readdirSync, readFileSync, statSync} from "node:fs";
import {dirname, join, resolve} from "node:path";
import type {Command} from "commander";
import {describe, expect, it} from "vitest";
import {createProgram} from "../cli/createProgram.js";

// The documentation cannot drift silently from the files and the CLI it describes: every relative
// link in a Markdown file resolves (to a file, and to a heading when it names one), and every
// `specgate …` command a document shows exists with the flags it is given.

const root = resolve(new URL("../../", import.meta.url).pathname);

/** Every Markdown file git knows of (tracked, or new and not ignored); a directory walk where git is absent. */
function markdownFiles(): string[] {
    try {
        const listed = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"], {
            cwd: root,
            encoding: "utf8"
        });
        return [
            ...new Set(listed.split("\0").filter((path) => path !== "" && !path.includes("node_modules/") && existsSync(join(root, path))))
        ].sort();
    } catch {
        const found: string[] = [];
        const walk = (directory: string): void => {
            for (const entry of readdirSync(join(root, directory), {withFileTypes: true})) {
                const path = directory === "" ? entry.name : `${directory}/${entry.name}`;
                if (entry.isDirectory() && !["node_modules", ".git", "dist", ".tmp", ".specgate", "native"].includes(entry.name))
                    walk(path);
                else if (entry.isFile() && entry.name.endsWith(".md")) found.push(path);
            }
        };
        walk("");
        return found.sort();
    }
}

/** The text outside fenced code blocks (fences may be indented, as inside a list item), line numbers kept. */
export function outsideCodeFences(markdown: string): string {
    let fence: string | null = null;
    return markdown
        .split("\n")
        .map((line) => {
            const opening = /^\s*(`{3,}|~{3,})/.exec(line);
            if (fence === null && opening !== null) {
                fence = opening[1];
                return "";
            }
            if (fence !== null) {
                if (line.trim().startsWith(fence)) fence = null;
                return "";
            }
            return line;
        })
        .join("\n");
}

/** GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces as hyphens. */
export function headingSlug(heading: string): string {
    return heading
        .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
        .replace(/[`*]/g, "")
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{M}\p{N}\- _]/gu, "")
        .replace(/ /g, "-");
}

/** The anchors a Markdown document's headings get, duplicates numbered as GitHub numbers them. */
export function headingAnchors(markdown: string): Set<string> {
    const anchors = new Set<string>();
    const seen = new Map<string, number>();
    for (const [, text] of outsideCodeFences(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
        const slug = headingSlug(text);
        const count = seen.get(slug) ?? 0;
        seen.set(slug, count + 1);
        anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    return anchors;
}

export interface BrokenLink {
    readonly file: string;
    readonly line: number;
    readonly target: string;
    readonly reason: string;
}

/**
 * Relative links of one document (`[text](target)`, images included, outside code) that do not
 * resolve: a missing file or folder, or an anchor that is no heading of the file it points into.
 */
export function brokenLinks(file: string, markdown: string, readDocument: (path: string) => string | null): BrokenLink[] {
    const broken: BrokenLink[] = [];
    const text = outsideCodeFences(markdown).replace(/`[^`\n]*`/g, (code) => " ".repeat(code.length));
    text.split("\n").forEach((line, index) => {
        for (const [, rawTarget] of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
            const target = rawTarget;
            if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
            const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined];
            const path = pathPart === "" ? file : join(dirname(file), decodeURIComponent(pathPart));
            const report = (reason: string) => broken.push({file, line: index + 1, target, reason});
            if (path === ".." || path.startsWith("../")) {
                report("points outside the repository");
                continue;
            }
            const document = readDocument(path);
            if (document === null) {
                report("no such file or folder");
                continue;
            }
            if (
                anchor !== undefined &&
                anchor !== "" &&
                path.endsWith(".md") &&
                !headingAnchors(document).has(decodeURIComponent(anchor).toLowerCase())
            )
                report(`no heading with anchor #${anchor} in ${path}`);
        }
    });
    return broken;
}

/** A repository path's text ("" for a folder), or null when nothing is there. */
function readRepositoryPath(path: string): string | null {
    const absolute = join(root, path);
    if (!existsSync(absolute)) return null;
    return statSync(absolute).isDirectory() ? "" : readFileSync(absolute, "utf8");
}

export interface ShownCommand {
    readonly file: string;
    readonly line: string;
    /** The words after `specgate`, quotes removed. */
    readonly words: string[];
}

/** `specgate …` and `npx specgate …` command lines in a document's sh and console blocks, continuation lines joined. */
export function shownCommands(file: string, markdown: string): ShownCommand[] {
    const commands: ShownCommand[] = [];
    for (const [, body] of markdown.matchAll(/^[ \t]*```(?:sh|bash|console|shell)[ \t]*\n([\s\S]*?)^[ \t]*```/gm)) {
        for (const rawLine of body.replace(/\\\n\s*/g, " ").split("\n")) {
            const line = rawLine.trim().replace(/^\$ /, "");
            const match = /^(?:[A-Z_]+=\S+\s+)*(?:taskset -c \d+ )?(?:npx )?specgate (.*)$/.exec(line);
            if (match === null) continue;
            const command = match[1].split(/\s*(?:;|&&|\|\||\|)\s*/)[0].replace(/\s+#.*$/, "");
            commands.push({
                file,
                line,
                words: [...command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((word) => word[1] ?? word[2] ?? word[3])
            });
        }
    }
    return commands;
}

/** Why a shown command would not run as written (an unknown command, subcommand or flag), or null. */
export function commandProblem(program: Command, words: readonly string[]): string | null {
    let command = program;
    let index = 0;
    while (command.commands.length > 0) {
        const name = words[index];
        const child = command.commands.find((candidate) => candidate.name() === name || candidate.aliases().includes(name));
        if (child === undefined) return `no command "${[...words.slice(0, index), name ?? ""].join(" ").trim()}" in specgate --help`;
        command = child;
        index++;
    }
    const known = new Set(command.options.flatMap((option) => [option.long, option.short]).filter((flag): flag is string => flag != null));
    known.add("--help").add("-h");
    for (const word of words.slice(index)) {
        if (!/^--?[a-z]/i.test(word)) continue;
        const flag = word.split("=")[0];
        if (!known.has(flag)) return `specgate ${words.slice(0, index).join(" ")} has no option ${flag}`;
    }
    return null;
}

const files = markdownFiles();

describe("Markdown documents", () => {
    it("are found (README, BENCHMARKS, ARCHITECTURE and the guides)", () => {
        for (const expected of ["README.md", "BENCHMARKS.md", "ARCHITECTURE.md", "docs/README.md", "models/README.md"])
            expect(files).toContain(expected);
    });

    it("link only to files and headings that exist", () => {
        const broken = files.flatMap((file) => brokenLinks(file, readFileSync(join(root, file), "utf8"), readRepositoryPath));
        expect(broken.map((link) => `${link.file}:${link.line}: ${link.target} (${link.reason})`)).toEqual([]);
    });

    it("show only specgate commands and flags that the CLI has", () => {
        const program = createProgram();
        const shown = files.flatMap((file) => shownCommands(file, readFileSync(join(root, file), "utf8")));
        expect(shown.filter((command) => command.file === "README.md").length).toBeGreaterThanOrEqual(4);
        const problems = shown
            .filter((command) => !command.words.some((word) => word.includes("…") || word === "(as"))
            .map((command) => ({command, problem: commandProblem(program, command.words)}))
            .filter(({problem}) => problem !== null)
            .map(({command, problem}) => `${command.file}: ${problem}: ${command.line.slice(0, 120)}`);
        expect(problems).toEqual([]);
    });

    it("tour in README covers generate, bench, serve and an audit", () => {
        const readmeCommands = shownCommands("README.md", readFileSync(join(root, "README.md"), "utf8")).map((command) =>
            command.words.slice(0, 2).join(" ")
        );
        for (const needed of ["generate", "bench", "serve", "canary"])
            expect(
                readmeCommands.some((command) => command.split(" ")[0] === needed),
                needed
            ).toBe(true);
    });
});

describe("the link check itself", () => {
    const documents: Record<string, string> = {
        "docs/guide.md": "# Guide\n\n## Drift canary: `specgate canary`\n\n```sh\n# not a heading\n```\n",
        "README.md": ""
    };
    const read = (path: string) => documents[path] ?? null;

    it("fails a link to a missing file, a missing heading, or outside the repository", () => {
        const markdown =
            "[ok](docs/guide.md) [anchor](docs/guide.md#drift-canary-specgate-canary) [gone](docs/missing.md)\n" +
            "[bad anchor](docs/guide.md#not-a-heading) [out](../elsewhere.md) [web](https://example.com/x.md) `[code](nowhere.md)`\n" +
            "```md\n[fenced](nowhere.md)\n```\n";
        expect(brokenLinks("README.md", markdown, read).map((link) => `${link.line}: ${link.target}`)).toEqual([
            "1: docs/missing.md",
            "2: docs/guide.md#not-a-heading",
            "2: ../elsewhere.md"
        ]);
    });

    it("resolves links relative to the linking file, and same-file anchors", () => {
        expect(
            brokenLinks("docs/guide.md", "[up](../README.md) [here](#guide) [there](#nothing)", read).map((link) => link.target)
        ).toEqual(["#nothing"]);
    });

    it("computes GitHub's anchors", () => {
        expect(headingSlug("Backends: what `npm ci` builds, and what happens without a compiler")).toBe(
            "backends-what-npm-ci-builds-and-what-happens-without-a-compiler"
        );
        expect(headingSlug("specgate against native llama.cpp")).toBe("specgate-against-native-llamacpp");
        expect([...headingAnchors("# A\n## A\n## A")]).toEqual(["a", "a-1", "a-2"]);
    });

    it("fails a command or flag the CLI does not have", () => {
        const program = createProgram();
        expect(commandProblem(program, ["generate", "--target", "t.gguf", "prompt"])).toBeNull();
        expect(commandProblem(program, ["tais", "compute", "--input", "x.csv"])).toBeNull();
        expect(commandProblem(program, ["generat", "--target", "t.gguf"])).toMatch(/no command "generat"/);
        expect(commandProblem(program, ["tais", "judge"])).toMatch(/no command "tais judge"/);
        expect(commandProblem(program, ["serve", "--no-such-flag"])).toMatch(/no option --no-such-flag/);
    });
});
