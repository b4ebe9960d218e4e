import {afterEach, describe, expect, it} from "vitest";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {openCliModels} from "./openCliModels.js";

const loaded: {path: string; disposed: boolean}[] = [];

/** Loads nothing: records the path, and fails for a path naming "missing". */
async function fakeLoad(path: string): Promise<ModelBackend> {
    if (path.includes("missing")) throw new Error(`cannot open ${path}`);
    const entry = {path, disposed: false};
    loaded.push(entry);
    return {
        dispose: async () => {
            entry.disposed = true;
        }
    } as unknown as ModelBackend;
}

afterEach(() => {
    loaded.length = 0;
});

describe("openCliModels", () => {
    it("loads the target and the draft it names, and no draft without one", async () => {
        const both = await openCliModels("specgate test", {target: "t.gguf", draft: "d.gguf"}, {}, fakeLoad);
        expect(both.draft).toBeDefined();
        const alone = await openCliModels("specgate test", {target: "t.gguf"}, {}, fakeLoad);
        expect(alone.draft).toBeUndefined();
        expect(loaded.map((entry) => entry.path)).toEqual(["t.gguf", "d.gguf", "t.gguf"]);
    });

    it("disposes of the loaded target when the draft fails to load, and rethrows", async () => {
        await expect(openCliModels("specgate test", {target: "t.gguf", draft: "missing.gguf"}, {}, fakeLoad)).rejects.toThrow(
            "cannot open missing.gguf"
        );
        expect(loaded).toEqual([{path: "t.gguf", disposed: true}]);
    });
});
