import {describe, expect, it} from "vitest";
import {InvalidDrafterError} from "../../errors.js";
import {drafterLabel, drafterUsesModel, parseDrafterSpec} from "./parseDrafterSpec.js";

describe("parseDrafterSpec", () => {
    it("parses each drafter with its defaults and round-trips through the label", () => {
        expect(parseDrafterSpec("model")).toEqual({kind: "model"});
        expect(parseDrafterSpec("model:retokenize")).toEqual({kind: "model", retokenize: true});
        expect(parseDrafterSpec("eagle3")).toEqual({kind: "eagle3"});
        expect(parseDrafterSpec("ngram")).toEqual({kind: "ngram", minN: 3, maxN: 16});
        expect(parseDrafterSpec("ngram:2:5")).toEqual({kind: "ngram", minN: 2, maxN: 5});
        expect(parseDrafterSpec("ngram:6")).toEqual({kind: "ngram", minN: 6, maxN: 16});
        expect(parseDrafterSpec("ngram:20")).toEqual({kind: "ngram", minN: 20, maxN: 20});
        expect(parseDrafterSpec("ngram:1:3:8")).toEqual({kind: "ngram", minN: 1, maxN: 3, length: 8});
        expect(parseDrafterSpec("suffix")).toEqual({kind: "suffix", minMatch: 3, minCount: 1, depth: 24, maxNodes: 100000});
        expect(parseDrafterSpec(" suffix:2:3:32:5000 ")).toEqual({kind: "suffix", minMatch: 2, minCount: 3, depth: 32, maxNodes: 5000});
        for (const spec of [
            "model",
            "model:retokenize",
            "ngram:2:5+model:retokenize",
            "eagle3",
            "ngram:3:16+eagle3",
            "ngram:1:3:8",
            "suffix:3:2:16:1000",
            "ngram:2:4+suffix:3:1:24:100000+model"
        ])
            expect(drafterLabel(parseDrafterSpec(spec))).toBe(spec);
        expect(drafterLabel(parseDrafterSpec("ngram+model"))).toBe("ngram:3:16+model");
    });

    it("parses chains in order", () => {
        const chain = parseDrafterSpec("ngram:3:5+model");
        expect(chain).toEqual({kind: "chain", members: [{kind: "ngram", minN: 3, maxN: 5}, {kind: "model"}]});
        expect(drafterUsesModel(chain)).toBe(true);
        expect(drafterUsesModel(parseDrafterSpec("ngram+suffix"))).toBe(false);
        expect(drafterUsesModel(parseDrafterSpec("ngram+model:retokenize"))).toBe(true);
        expect(drafterUsesModel(parseDrafterSpec("suffix+eagle3"))).toBe(true);
    });

    it.each([
        ["", "is empty"],
        ["beam", 'unknown drafter "beam" in "beam"; expected model, model:retokenize, eagle3, ngram[:MIN[:MAX[:LENGTH]]], suffix['],
        ["eagle3:2", '"eagle3" takes no argument, got "eagle3:2"'],
        ["ngram+eagle3+model", 'names both "model" and "eagle3" in the chain'],
        ["ngram+beam", "or a chain of them joined by + (e.g. ngram+model)"],
        ["ngram:0", 'ngram MIN must be an integer in [1, 64], got "0"'],
        ["ngram:2:x", "ngram MAX must be an integer"],
        ["ngram:4:2", "ngram MAX (2) is below MIN (4)"],
        ["ngram:2:4:0", "ngram LENGTH must be an integer in [1, 64]"],
        ["ngram:1:2:3:4", '"ngram" takes at most 3 arguments'],
        ["model:4", '"model" takes no argument or "retokenize" (drafting across tokenizers), got "model:4"'],
        ["model:retokenize:2", '"model" takes at most 1 arguments'],
        ["model+model:retokenize", 'names "model" twice in the chain'],
        ["suffix:0", "suffix MIN_MATCH must be"],
        ["suffix:1:0", "suffix MIN_COUNT must be"],
        ["suffix:1:1:1", "suffix DEPTH must be an integer in [2, 256]"],
        ["suffix:9:1:16", "suffix MIN_MATCH (9) must be at most DEPTH/2 (8)"],
        ["suffix:1:1:8:99999999", "suffix MAX_NODES must be"],
        ["suffix:1:1:8:9:9", '"suffix" takes at most 4 arguments'],
        ["ngram+", "empty member"],
        ["ngram+ngram:3", 'names "ngram" twice']
    ])("rejects %j: %s", (spec, message) => {
        let error: unknown;
        try {
            parseDrafterSpec(spec, "--drafter");
        } catch (caught) {
            error = caught;
        }
        expect(error).toBeInstanceOf(InvalidDrafterError);
        expect((error as InvalidDrafterError).message).toContain(message);
        expect((error as InvalidDrafterError).field).toBe("--drafter");
        expect((error as InvalidDrafterError).code).toBe("invalid_drafter");
    });
});
