import {describe, expect, it} from "vitest";
import {BigramBackend} from "../testing/BigramBackend.js";
import {SeededChance} from "../../random/SeededChance.js";
import {parseGenerationOptions} from "../GenerationOptions.js";
import {GenerationTelemetry} from "../GenerationTelemetry.js";
import {ChainDrafter} from "./ChainDrafter.js";
import type {Drafter, DrafterSession, DraftOutcome} from "./Drafter.js";

/** A drafter that proposes a fixed answer per call and logs what it is told. */
function scripted(label: string, answers: number[][], log: string[]): Drafter {
    return {
        label,
        members: [label],
        async start(): Promise<DrafterSession> {
            let call = 0;
            return {
                supportsArgmax: true,
                async propose() {
                    log.push(`${label}.propose`);
                    return {tokens: answers[call++] ?? [], source: label, consulted: [label]};
                },
                observe(outcome: DraftOutcome) {
                    log.push(`${label}.observe(${outcome.proposal.source},${outcome.accepted})`);
                },
                finish(output: readonly number[]) {
                    log.push(`${label}.finish(${output.length})`);
                },
                async dispose() {
                    log.push(`${label}.dispose`);
                }
            };
        }
    };
}

const start = {
    target: BigramBackend.random(0, 4),
    promptTokens: [0, 1],
    options: parseGenerationOptions({}),
    chance: new SeededChance(0),
    telemetry: new GenerationTelemetry()
};

describe("ChainDrafter", () => {
    it("takes the first non-empty proposal and does not consult the members after it", async () => {
        const log: string[] = [];
        const chain = new ChainDrafter([scripted("a", [[], [5, 6]], log), scripted("b", [[7], [8]], log)]);
        expect(chain.label).toBe("a+b");
        expect(chain.members).toEqual(["a", "b"]);
        const session = await chain.start(start);
        const first = await session.propose({history: [0, 1], maxTokens: 4, argmaxOnly: true});
        expect(first).toMatchObject({tokens: [7], source: "b", consulted: ["a", "b"]});
        const second = await session.propose({history: [0, 1, 2], maxTokens: 4, argmaxOnly: true});
        expect(second).toMatchObject({tokens: [5, 6], source: "a", consulted: ["a"]});
        expect(log).toEqual(["a.propose", "b.propose", "a.propose"]);
        // Every member observes every outcome, finishes and is disposed.
        session.observe({proposal: second, accepted: 1, emitted: [5, 9]});
        session.finish([5, 9]);
        await session.dispose();
        expect(log.slice(3)).toEqual(["a.observe(a,1)", "b.observe(a,1)", "a.finish(2)", "b.finish(2)", "a.dispose", "b.dispose"]);
    });

    it("returns an empty proposal naming every member consulted when none proposes", async () => {
        const chain = new ChainDrafter([scripted("a", [], []), scripted("b", [], [])]);
        const session = await chain.start(start);
        expect(await session.propose({history: [0, 1], maxTokens: 4, argmaxOnly: false})).toEqual({
            tokens: [],
            source: "b",
            consulted: ["a", "b"]
        });
    });
});
