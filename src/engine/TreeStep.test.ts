import {describe, expect, it} from "vitest";
import type {BackendSequence} from "../backend/ModelBackend.js";
import {InvalidInputError} from "../errors.js";
import {generate} from "./generate.js";
import {BigramBackend} from "./testing/BigramBackend.js";

/** A bigram backend that counts the sequences it created and those disposed of; `trees`: they claim the tree methods. */
class CountingBackend extends BigramBackend {
    public created = 0;
    public disposed = 0;

    public constructor(
        table: Float64Array[],
        private readonly trees: boolean
    ) {
        super(table);
    }

    public override async createSequence(): Promise<BackendSequence> {
        const sequence = await super.createSequence();
        const dispose = sequence.dispose.bind(sequence);
        this.created++;
        const counted = Object.assign(sequence, {
            dispose: async () => {
                this.disposed++;
                await dispose();
            }
        });
        if (!this.trees) return counted;
        // Never reached: a generation refused at the start decodes no tree.
        const refuse = async (): Promise<never> => {
            throw new Error("a tree was decoded");
        };
        return Object.assign(counted, {treeBranches: 4, evaluateTree: refuse, keepTreePath: refuse});
    }
}

async function refusal(targetTrees: boolean, draftTrees: boolean) {
    const table = BigramBackend.random(3, 8).table;
    const target = new CountingBackend(table, targetTrees);
    const draft = new CountingBackend(table, draftTrees);
    const error = await generate(target, draft, [0, 2, 3], {tree: {width: 2, depth: 2}, maxTokens: 4}).catch((caught: unknown) => caught);
    return {error, target, draft};
}

describe("token trees on sequences without the tree methods", () => {
    it("a draft whose sequences decode no trees is refused, naming draft; the target's sequence is disposed of", async () => {
        const {error, target, draft} = await refusal(true, false);
        expect(error).toBeInstanceOf(InvalidInputError);
        expect((error as InvalidInputError).field).toBe("draft");
        expect([target.created, target.disposed, draft.created, draft.disposed]).toEqual([1, 1, 1, 1]);
    });

    it("a target whose sequences decode no trees is refused, naming target; both sequences are disposed of", async () => {
        const {error, target, draft} = await refusal(false, true);
        expect(error).toBeInstanceOf(InvalidInputError);
        expect((error as InvalidInputError).field).toBe("target");
        expect([target.created, target.disposed, draft.created, draft.disposed]).toEqual([1, 1, 1, 1]);
    });
});
