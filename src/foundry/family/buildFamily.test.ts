import {describe, expect, it, vi} from "vitest";
import {stageKey} from "./buildFamily.js";
import {familyRecipe, type TrainedMemberRecipe} from "./familyRecipe.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const target = familyRecipe.members.find((member) => member.name === "target") as TrainedMemberRecipe;

describe("stageKey", () => {
    it("names the shape, seed, corpus and every stage up to the one it keys", () => {
        const key = stageKey(target, 1) as {stages: unknown[]; shape: string; seed: number};
        expect(key.stages).toEqual(target.stages.slice(0, 2));
        expect(key.shape).toBe(target.shape);
        expect(key.seed).toBe(target.seed);
    });

    it("changes when anything an intermediate stage was trained from changes, so a rebuild never reuses a stale one", () => {
        const reference = JSON.stringify(stageKey(target, 1));
        const variants: TrainedMemberRecipe[] = [
            {...target, seed: target.seed + 1},
            {...target, shape: "64,2,2,112"},
            {...target, stages: [{...target.stages[0], steps: target.stages[0].steps + 1}, ...target.stages.slice(1)]},
            {
                ...target,
                stages: [
                    target.stages[0],
                    {...target.stages[1], minimumLearningRate: target.stages[1].minimumLearningRate / 2},
                    ...target.stages.slice(2)
                ]
            }
        ];
        for (const variant of variants) expect(JSON.stringify(stageKey(variant, 1))).not.toBe(reference);
        // A later stage's change does not invalidate an earlier stage.
        const laterChanged = {
            ...target,
            stages: [...target.stages.slice(0, 2), {...target.stages[2], steps: 1}, ...target.stages.slice(3)]
        };
        expect(JSON.stringify(stageKey(laterChanged, 1))).toBe(reference);
    });
});

describe("familyRecipe", () => {
    it("warms the target up on copy drills first", () => {
        expect(target.stages[0].mixture).toBe("copy-drill");
        for (const member of familyRecipe.members) {
            if (member.kind !== "trained") continue;
            expect(member.stages.length, member.name).toBeGreaterThan(0);
            for (const stage of member.stages) expect(stage.minimumLearningRate, member.name).toBeLessThanOrEqual(stage.learningRate);
        }
    });

    it("builds every member another continues from, quantizes or drafts for earlier in the recipe, with the same shape", () => {
        const names = familyRecipe.members.map((member) => member.name);
        familyRecipe.members.forEach((member, index) => {
            const sources = [member.kind === "quantized" ? member.source : member.from, member.draftsFor ?? undefined].filter(
                (name) => name !== undefined
            );
            for (const source of sources) {
                const at = names.indexOf(source!);
                expect(at, `${member.name} needs ${source}`).toBeGreaterThanOrEqual(0);
                expect(at, `${member.name} after ${source}`).toBeLessThan(index);
            }
            if (member.kind === "trained" && member.from !== undefined) {
                const source = familyRecipe.members[names.indexOf(member.from)] as TrainedMemberRecipe;
                // A member made of some of its source's blocks has the source's shape with fewer layers.
                const [width, layers, heads, feedForward] = source.shape.split(",");
                expect(member.shape).toBe(
                    member.layers === undefined ? source.shape : [width, member.layers.length, heads, feedForward].join(",")
                );
                for (const layer of member.layers ?? []) expect(layer).toBeLessThan(Number(layers));
            }
        });
    });
});

describe("stageKey of a member continued from another", () => {
    it("includes the source member's whole recipe, so changing the target invalidates target-surface's stages", () => {
        const surface = familyRecipe.members.find((member) => member.name === "target-surface") as TrainedMemberRecipe;
        const key = stageKey(surface, 0) as {from: unknown};
        expect(key.from).toEqual(stageKey(target, target.stages.length - 1));
        expect(stageKey(target, 0)).not.toHaveProperty("from");
    });

    it("includes the blocks a shallower member keeps, so another choice of blocks is another stage", () => {
        const shallow = familyRecipe.members.find((member) => member.name === "draft-shallow") as TrainedMemberRecipe;
        const keys = [undefined, [0, 3], [0, 1]].map((layers) => JSON.stringify(stageKey({...shallow, layers}, 0)));
        expect(new Set(keys).size).toBe(3);
        expect(stageKey(shallow, 0)).toHaveProperty("layers", [0, 3]);
    });
});
