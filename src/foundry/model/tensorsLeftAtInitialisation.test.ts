import {describe, expect, it} from "vitest";
import {tensorsLeftAtInitialisation} from "./tensorsLeftAtInitialisation.js";

describe("tensorsLeftAtInitialisation", () => {
    const initial = new Map([
        ["token_embd.weight", Float64Array.from([0.1, -0.2, 0.3, 0.05])],
        ["blk.0.attn_k.weight", Float64Array.from([0.2, 0.1, -0.1, 0.4])],
        ["blk.0.attn_q.weight", Float64Array.from([0.3, -0.3, 0.2, 0.1])]
    ]);

    it("flags unchanged and uniformly shrunk matrices, not trained ones", () => {
        const trained = new Map([
            ["token_embd.weight", Float64Array.from(initial.get("token_embd.weight")!)],
            // Weight decay alone: every value times 0.874.
            ["blk.0.attn_k.weight", initial.get("blk.0.attn_k.weight")!.map((value) => 0.874 * value)],
            ["blk.0.attn_q.weight", Float64Array.from([0.25, -0.1, 0.4, 0.3])]
        ]);
        expect(tensorsLeftAtInitialisation(initial, trained)).toEqual(["token_embd.weight", "blk.0.attn_k.weight"]);
    });

    it("counts a small real update as training", () => {
        const nudged = new Map(
            [...initial].map(([name, values]) => [name, values.map((value, index) => value + (index === 0 ? 0.01 : 0))])
        );
        expect(tensorsLeftAtInitialisation(initial, nudged)).toEqual([]);
    });
});
