// Every TypeScript block of README.md and docs/*.md type-checks against specgate's public entry
// (src/index.ts, what dist/index.d.ts is built from) under strict TypeScript, as a user's ESM
// project would compile it. Each block is its own module; a guide's later snippets may use the two
// names docs/library.md's text introduces without redefining them: `pair` (a pair opened with a
// draft) and `prompt` (a string). Only the blocks' own diagnostics are asked for, so the library's sources are read for
// their types, not re-checked (typecheck does that).
import {mkdirSync, rmSync, writeFileSync} from "node:fs";
import {join} from "node:path";
import ts from "typescript";
import {afterAll, describe, expect, it, vi} from "vitest";
import {type CodeBlock, documentationBlocks, repositoryRoot} from "./testing/codeBlocks.js";

// Building the program reads every source file the entry reaches: tens of seconds on a busy 2-core machine.
vi.setConfig({testTimeout: 180_000});

const scratch = join(repositoryRoot, ".tmp", `doc-typescript-${process.pid}`);
afterAll(() => rmSync(scratch, {recursive: true, force: true}));

const prelude = `import type {ModelPairWithDraft} from "specgate";
declare global {
    /** An open target/draft pair, as docs/library.md's first snippet opens it. */
    const pair: ModelPairWithDraft;
    const prompt: string;
}
export {};
`;

const compilerOptions: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ["lib.es2023.d.ts"],
    types: ["node"],
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    // The package's name resolves to its entry's sources, so the check follows the working tree.
    paths: {specgate: [join(repositoryRoot, "src", "index.ts")]}
};

/** The diagnostics of each snippet, as "FILE:LINE: message" with LINE the line in the Markdown file. */
function typeCheck(blocks: readonly CodeBlock[]): string[] {
    mkdirSync(scratch, {recursive: true});
    const preludePath = join(scratch, "prelude.d.ts");
    writeFileSync(preludePath, prelude);
    const paths = blocks.map((block, index) => {
        const path = join(scratch, `block-${index}.ts`);
        // `export {}` makes every snippet a module (top-level await, its own scope), as a user's file is.
        writeFileSync(path, `${block.body}\nexport {};\n`);
        return path;
    });
    const program = ts.createProgram([preludePath, ...paths], compilerOptions);
    return paths.flatMap((path, index) => {
        const source = program.getSourceFile(path)!;
        return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((diagnostic) => {
            const line = diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line;
            return `${blocks[index].file}:${blocks[index].line + 1 + line}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`;
        });
    });
}

const blocks = documentationBlocks().filter((block) => block.language === "ts" || block.language === "typescript");

describe("TypeScript in the docs", () => {
    it("is found in README.md, docs/library.md and docs/serving.md", () => {
        for (const file of ["README.md", "docs/library.md", "docs/serving.md"])
            expect(
                blocks.some((block) => block.file === file),
                file
            ).toBe(true);
    });

    it("type-checks against the public entry under strict TypeScript (and a wrong snippet would not)", () => {
        const wrong: CodeBlock = {
            file: "wrong.md",
            line: 1,
            language: "ts",
            body: 'import {generate} from "specgate";\nawait generate(pair.target, undefined, 42);'
        };
        // The pair the guide opens, with a draft file, is typed as one whose draft is loaded (what the prelude declares).
        const opened: CodeBlock = {
            file: "opened.md",
            line: 1,
            language: "ts",
            body: 'import {openModelPair, type ModelPairWithDraft} from "specgate";\nconst opened: ModelPairWithDraft = await openModelPair({target: "t.gguf", draft: "d.gguf"});'
        };
        const problems = typeCheck([...blocks, wrong, opened]);
        expect(problems.filter((problem) => problem.startsWith("wrong.md:"))).toEqual([
            expect.stringMatching(/^wrong\.md:3: Argument of type 'number'/)
        ]);
        expect(problems.filter((problem) => !problem.startsWith("wrong.md:"))).toEqual([]);
    });
});
