import {readdirSync, readFileSync} from "node:fs";
import {join, resolve} from "node:path";

/** The repository root. */
export const repositoryRoot = resolve(new URL("../../../", import.meta.url).pathname);

/** One fenced code block of a document. */
export interface CodeBlock {
    /** Relative to the repository root, e.g. "docs/serving.md". */
    readonly file: string;
    /** The line of the opening fence (1-based). */
    readonly line: number;
    /** The fence's info string's first word ("sh", "ts", "console"…), "" when it has none. */
    readonly language: string;
    readonly body: string;
    /**
     * Why the block is not run, from a `<!-- docs-test: not run: REASON -->` comment on the line
     * before its fence (invisible where the Markdown is rendered); undefined when it is not marked.
     */
    readonly notRun?: string;
}

/** The documents whose blocks must run or type-check: README.md and the guides in docs/. */
export function documentationFiles(): string[] {
    const guides = readdirSync(join(repositoryRoot, "docs"))
        .filter((name) => name.endsWith(".md"))
        .sort()
        .map((name) => `docs/${name}`);
    return ["README.md", ...guides];
}

/** Every fenced block of a Markdown text (fences may be indented, as inside a list item). */
export function codeBlocks(file: string, markdown: string): CodeBlock[] {
    const blocks: CodeBlock[] = [];
    const lines = markdown.split("\n");
    for (let index = 0; index < lines.length; index++) {
        const opening = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/.exec(lines[index]);
        if (opening === null) continue;
        const [, indent, fence, language] = opening;
        const start = index;
        const body: string[] = [];
        for (index++; index < lines.length && !lines[index].trim().startsWith(fence); index++)
            body.push(lines[index].startsWith(indent) ? lines[index].slice(indent.length) : lines[index].trimStart());
        const marker = /^\s*<!--\s*docs-test:\s*not run:\s*(.+?)\s*-->\s*$/.exec(lines[start - 1] ?? "");
        blocks.push({file, line: start + 1, language, body: body.join("\n"), ...(marker !== null ? {notRun: marker[1]} : {})});
    }
    return blocks;
}

/** The code blocks of every documentation file. */
export function documentationBlocks(): CodeBlock[] {
    return documentationFiles().flatMap((file) => codeBlocks(file, readFileSync(join(repositoryRoot, file), "utf8")));
}
