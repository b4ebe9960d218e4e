// The layer rule of .dependency-cruiser.mjs, run on a scratch tree of a few files: it refuses an
// import from a lower layer into a higher one, into a folder with no layer, and into test helpers,
// and lets the other imports through. ARCHITECTURE.md lists the same layers in the same order.
import {mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {dirname, join} from "node:path";
import {cruise, type ICruiseResult, type IForbiddenRuleType} from "dependency-cruiser";
import {afterAll, describe, expect, it} from "vitest";

// A plain-JavaScript module (the file dependency-cruiser reads), loaded by URL.
const configUrl = new URL("../.dependency-cruiser.mjs", import.meta.url).href;
const {default: config, layers} = (await import(configUrl)) as {default: {forbidden: IForbiddenRuleType[]}; layers: string[]};

const scratch = mkdtempSync(join(tmpdir(), "specgate-layers-"));
afterAll(() => rmSync(scratch, {recursive: true, force: true}));

function write(files: Record<string, string>): void {
    for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(scratch, path)), {recursive: true});
        writeFileSync(join(scratch, path), text);
    }
}

async function violations(): Promise<string[]> {
    const {output} = await cruise(["src"], {
        baseDir: scratch,
        validate: true,
        ruleSet: {forbidden: config.forbidden},
        tsPreCompilationDeps: true,
        enhancedResolveOptions: {extensions: [".ts", ".js"]}
    });
    const result = output as ICruiseResult;
    return result.summary.violations.map((violation) => `${violation.rule.name}: ${violation.from} → ${violation.to}`).sort();
}

describe("the layer rule", () => {
    // A generous limit: dependency-cruiser parses with TypeScript, seconds on a busy machine.
    it("refuses upward, unlisted and test-helper imports, and allows the rest", async () => {
        write({
            "src/errors.ts": "export class SpecgateError extends Error {}\n",
            "src/backend/ModelBackend.ts": 'import {SpecgateError} from "../errors.js";\nexport type Backend = SpecgateError;\n',
            "src/backend/NativeBackend.ts": 'import type {Schema} from "../constraints/Schema.js";\nexport type Native = Schema;\n',
            "src/backend/NativeBackend.test.ts": 'import {serve} from "../serve/serve.js";\nserve();\n',
            "src/constraints/Schema.ts": 'import type {Backend} from "../backend/ModelBackend.js";\nexport type Schema = Backend;\n',
            "src/serve/serve.ts":
                'import {twin} from "../widgets/twin.js";\nimport {helper} from "./testing/helper.js";\nexport const serve = (): number => twin + helper;\n',
            "src/serve/testing/helper.ts": "export const helper = 1;\n",
            "src/widgets/twin.ts": "export const twin = 2;\n"
        });
        expect(await violations()).toEqual([
            "layer-backend: src/backend/NativeBackend.ts → src/constraints/Schema.ts",
            "layer-unlisted: src/serve/serve.ts → src/widgets/twin.ts",
            "no-test-code-in-production: src/serve/serve.ts → src/serve/testing/helper.ts"
        ]);
    }, 60_000);

    it("is the order ARCHITECTURE.md gives", () => {
        const architecture = readFileSync(new URL("../ARCHITECTURE.md", import.meta.url), "utf8");
        const section = architecture.split("\n## Layers\n")[1]!.split("\n## ")[0]!;
        // The numbered items, each with its folders in order (an item may wrap onto several lines).
        const items = section
            .split(/\n(?=\d+\. )/)
            .filter((item) => /^\d+\. /.test(item))
            .map((item) => item.split("\n\n")[0]!);
        const listed = items.flatMap((item) => [...item.matchAll(/`src\/([^`]+?)\/?`/g)].map((match) => match[1]));
        expect(listed).toEqual(layers);
    });
});
