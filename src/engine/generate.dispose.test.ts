import {describe, expect, it} from "vitest";
import type {BackendSequence} from "../backend/ModelBackend.js";
import {createDrafter} from "./drafters/createDrafter.js";
import type {Drafter} from "./drafters/Drafter.js";
import {generate} from "./generate.js";
import {BigramBackend} from "./testing/BigramBackend.js";

/** A bigram target whose sequences fail to dispose of themselves. */
class FailingDisposalBackend extends BigramBackend {
    public override async createSequence(): Promise<BackendSequence> {
        const sequence = await super.createSequence();
        return Object.assign(sequence, {
            dispose: async () => {
                throw new Error("sequence dispose failed");
            }
        });
    }
}

/** An n-gram drafter that counts the sessions disposed of. */
function countingDrafter(): {drafter: Drafter; disposed: () => number} {
    const inner = createDrafter("ngram:1:2", undefined);
    let disposed = 0;
    const drafter: Drafter = {
        label: inner.label,
        members: inner.members,
        async start(context) {
            const session = await inner.start(context);
            return {
                supportsArgmax: session.supportsArgmax,
                propose: (request) => session.propose(request),
                observe: (outcome) => session.observe(outcome),
                finish: (output) => session.finish(output),
                dispose: async () => {
                    disposed++;
                    await session.dispose();
                }
            };
        }
    };
    return {drafter, disposed: () => disposed};
}

describe("disposal at the end of a generation", () => {
    it("disposes of the drafter session when the target sequence's dispose throws, and reports that error", async () => {
        const base = BigramBackend.random(1, 8, {scale: 2});
        const target = new FailingDisposalBackend(base.table);
        const {drafter, disposed} = countingDrafter();
        await expect(generate(target, undefined, [0, 2, 3, 2, 3], {gamma: 2, maxTokens: 4}, {drafter})).rejects.toThrow(
            "sequence dispose failed"
        );
        expect(disposed()).toBe(1);
    });
});

/**
 * A bigram target that counts the sequences it creates and disposes of, and whose end token can no
 * longer be read once a sequence exists: the generation then fails while it is being set up.
 */
class FailingSetupBackend extends BigramBackend {
    public created = 0;
    public disposed = 0;
    public override async createSequence(): Promise<BackendSequence> {
        const sequence = await super.createSequence();
        this.created++;
        Object.defineProperty(this, "eosToken", {
            get: () => {
                throw new Error("end token unavailable");
            }
        });
        const dispose = sequence.dispose.bind(sequence);
        return Object.assign(sequence, {
            dispose: async () => {
                this.disposed++;
                await dispose();
            }
        });
    }
}

describe("disposal when a generation fails while it is set up", () => {
    it("disposes of the target sequence it created", async () => {
        const base = BigramBackend.random(1, 8, {scale: 2});
        const target = new FailingSetupBackend(base.table);
        await expect(
            generate(target, undefined, [0, 2, 3], {gamma: 2, maxTokens: 4}, {drafter: countingDrafter().drafter})
        ).rejects.toThrow("end token unavailable");
        expect(target.created).toBe(1);
        expect(target.disposed).toBe(1);
    });
});
