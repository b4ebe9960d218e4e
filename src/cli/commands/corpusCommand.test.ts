import {mkdtemp, readFile, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {Command} from "commander";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {registerCorpusCommand, runCorpus} from "./corpusCommand.js";

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-corpus-command-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("specgate corpus", () => {
    it("parses its flags and writes the four files", async () => {
        const program = new Command().exitOverride();
        registerCorpusCommand(program);
        const out = join(directory, "cli");
        const written: string[] = [];
        const write = process.stdout.write;
        process.stdout.write = ((chunk: string) => {
            written.push(chunk);
            return true;
        }) as typeof process.stdout.write;
        try {
            await program.parseAsync([
                "node",
                "specgate",
                "corpus",
                "--out",
                out,
                "--seed",
                "9",
                "--samples",
                "300",
                "--mixture",
                "english-heavy",
                "--test-problems",
                "4"
            ]);
        } finally {
            process.stdout.write = write;
        }
        const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8")) as {
            seed: number;
            samples: number;
            testProblemsPerTask: number;
            mixture: {languages: {en: number}};
        };
        expect(manifest).toMatchObject({seed: 9, samples: 300, testProblemsPerTask: 4, mixture: {languages: {en: 0.9}}});
        expect(written.join("")).toMatch(/train\.txt \d+ documents/);
    });

    it("accepts JSON mixtures and names --mixture in errors", async () => {
        const {manifest} = await runCorpus({
            out: join(directory, "json"),
            seed: 1,
            samples: 50,
            mixture: '{"tasks":{"tool-call":1},"languages":{"ja":1}}',
            testProblems: 2
        });
        // Only Japanese tool calls to train on; the test split stays parallel in all four languages.
        expect(manifest.counts["tool-call"].en).toEqual({train: 0, validation: 0, test: 2});
        expect(manifest.counts.arithmetic.en).toEqual({train: 0, validation: 0, test: 2});
        expect(manifest.counts["tool-call"].ja!.train + manifest.counts["tool-call"].ja!.validation).toBe(50);
        await expect(runCorpus({out: join(directory, "bad"), seed: 1, samples: 50, mixture: "skewed", testProblems: 2})).rejects.toThrow(
            InvalidInputError
        );
        await expect(runCorpus({out: join(directory, "bad"), seed: 1, samples: 50, mixture: "skewed", testProblems: 2})).rejects.toThrow(
            /^--mixture: /
        );
    });
});
