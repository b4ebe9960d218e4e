import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {writeRandomLlamaPair} from "./randomLlamaModel.js";

describe("random llama pair shapes", () => {
    it("blame the member whose shape is wrong: a target head size that is not whole is the target's fault", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-shape-"));
        try {
            const target = {embeddingLength: 64, blockCount: 2, headCount: 3, headCountKv: 3, feedForwardLength: 128};
            await expect(writeRandomLlamaPair({directory, seed: 1, target})).rejects.toThrow(
                "target.headCount: the target's embedding length 64 is not a multiple of its 3 heads"
            );
            const draft = {embeddingLength: 30, blockCount: 1, headCount: 4, headCountKv: 4, feedForwardLength: 64};
            await expect(writeRandomLlamaPair({directory, seed: 1, draft})).rejects.toThrow(
                "draft.headCount: the draft's embedding length 30"
            );
        } finally {
            await rm(directory, {recursive: true, force: true});
        }
    });
});
