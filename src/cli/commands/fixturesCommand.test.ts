import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-fixtures-cli-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

const target = "models/target/model.gguf";
const draft = "models/draft/model.gguf";

describe("specgate fixtures --widen-from", () => {
    it("writes the target twin at --target-shape and the draft twin at its own shape by default", async () => {
        const out = join(directory, "pair");
        const run = await runCliCaptured(
            "fixtures",
            "--out",
            out,
            "--widen-from",
            target,
            "--target-shape",
            "256,6,8,1024",
            "--type",
            "F16",
            "--widen-draft-from",
            draft
        );
        expect(run.code, run.stderr).toBe(0);
        expect(run.stdout).toBe(`${join(out, "target.gguf")}\n${join(out, "draft.gguf")}\n`);
        expect(run.stderr).toContain("d 256, 6 layers, 8 heads (8 kv), ff 1024");
        const twin = GgufReader.readHeader(join(out, "target.gguf"));
        expect(twin.metadata.get("llama.embedding_length")?.value).toBe(256);
        expect(twin.tensor("blk.5.attn_q.weight").type).toBe(GgmlTensorType.F16);
        const draftTwin = GgufReader.readHeader(join(out, "draft.gguf"));
        expect(draftTwin.metadata.get("llama.embedding_length")?.value).toBe(64);
        expect(draftTwin.metadata.get("llama.feed_forward_length")?.value).toBe(112);
    });

    it("refuses what a twin cannot be, naming the flag", async () => {
        const out = join(directory, "refused");
        const refusals: [string[], string][] = [
            [["--widen-from", target], "--target-shape: is required with --widen-from"],
            [["--widen-from", target, "--target-shape", "256,6,6,1024"], "--target-shape: keeps the source's head size 32"],
            [["--widen-from", target, "--target-shape", "256,6,8,1024", "--context", "512"], "--context: does not apply to --widen-from"],
            [["--widen-from", target, "--target-shape", "128,4,4,512", "--perturb", "1"], "--perturb: needs an extra head"],
            [["--widen-from", target, "--target-shape", "256,6,8,1024", "--perturb", "-1"], "--perturb: must be a number >= 0"],
            [["--widen-from", "README.md", "--target-shape", "256,6,8,1024"], "not a GGUF file"],
            [
                ["--widen-from", target, "--target-shape", "256,6,8,1024", "--widen-draft-from", draft, "--type", "Q8_0"],
                "--draft-shape: Q8_0 needs ff"
            ],
            [["--perturb", "1"], "--perturb: applies to widened twins only"],
            [["--type", "F8"], "option '--type <F32|F16|Q8_0>' argument 'F8' is invalid. Allowed choices are F32, F16, Q8_0."]
        ];
        for (const [flags, message] of refusals) {
            const run = await runCliCaptured("fixtures", "--out", out, ...flags);
            expect(run.code, flags.join(" ")).toBe(2);
            expect(run.stderr).toContain(message);
        }
    });
});
