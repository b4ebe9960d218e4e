import {describe, expect, it} from "vitest";
import {runExport} from "./exportCommand.js";

describe("specgate export", () => {
    it("names --layers when it is not a list of block numbers, before reading the model", async () => {
        for (const layers of ["0,x", "", "1;2", "-1"])
            await expect(runExport({model: "missing.gguf", out: "out.gguf", layers})).rejects.toThrow(
                /--layers.*block numbers separated by commas/
            );
    });
});
