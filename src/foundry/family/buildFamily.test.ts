import {describe, expect, it} from "vitest";
import {warmUpReportMatches} from "./buildFamily.js";
import {familyRecipe, type TrainedMemberRecipe} from "./familyRecipe.js";

const target = familyRecipe.members.find((member) => member.name === "target") as TrainedMemberRecipe;
const corpus = ".tmp/family/corpus-copy-drill";
const report = {
    shape: target.shape, steps: target.warmUp!.steps, seed: target.seed, learningRate: target.warmUp!.learningRate,
    minimumLearningRate: target.warmUp!.learningRate, corpus: {directory: corpus, seed: familyRecipe.corpus.seed, samples: familyRecipe.corpus.samples}
};

describe("warmUpReportMatches", () => {
    it("reuses a warm-up only when its report is the recipe's, on the same corpus", () => {
        expect(target.warmUp).toBeDefined();
        expect(warmUpReportMatches(report, target, corpus)).toBe(true);
        expect(warmUpReportMatches(report, target, ".tmp/other/corpus-copy-drill")).toBe(false);
        expect(warmUpReportMatches({...report, steps: report.steps - 1}, target, corpus)).toBe(false);
        expect(warmUpReportMatches({...report, seed: report.seed + 1}, target, corpus)).toBe(false);
        expect(warmUpReportMatches({...report, shape: "64,2,2,112"}, target, corpus)).toBe(false);
        expect(warmUpReportMatches({...report, minimumLearningRate: report.learningRate / 10}, target, corpus)).toBe(false);
        expect(warmUpReportMatches({...report, corpus: {...report.corpus, seed: 8}}, target, corpus)).toBe(false);
    });

    it("never reuses for a member without a warm-up, or from a missing or corrupt report", () => {
        const draft = familyRecipe.members.find((member) => member.name === "draft") as TrainedMemberRecipe;
        expect(warmUpReportMatches(report, draft, corpus)).toBe(false);
        expect(warmUpReportMatches(undefined, target, corpus)).toBe(false);
        expect(warmUpReportMatches("not a report", target, corpus)).toBe(false);
        expect(warmUpReportMatches(null, target, corpus)).toBe(false);
    });
});
