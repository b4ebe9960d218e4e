import {describe, expect, it} from "vitest";
import type {BackendSequence} from "../backend/ModelBackend.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {createServeApp} from "./createServeApp.js";

/** A constraint that allows every token and counts how often it is disposed of. */
class CountingConstraint implements TokenConstraint {
    public disposed = 0;
    public allows(): boolean {
        return true;
    }
    public async maskLogits(): Promise<void> {}
    public accept(): void {}
    public async acceptTokens(tokens: readonly number[]): Promise<number> {
        return tokens.length;
    }
    public async maskRows(): Promise<number> {
        return 0;
    }
    public mark(): void {}
    public rewind(): void {}
    public dispose(): void {
        this.disposed++;
    }
}

/** A bigram target with grammars whose sequences fail as `failure` says: at creation, or when handed back idle. */
class FailingSequenceBackend extends BigramBackend {
    public readonly constraints: CountingConstraint[] = [];

    public constructor(private readonly failure: "create" | "idle") {
        super(BigramBackend.random(3, 28).table);
    }

    public createConstraint(): TokenConstraint {
        const constraint = new CountingConstraint();
        this.constraints.push(constraint);
        return constraint;
    }

    public override async createSequence(): Promise<BackendSequence> {
        if (this.failure === "create") throw new Error("no sequence today");
        return Object.assign(await super.createSequence(), {
            idle: () => {
                throw new Error("idle failed");
            }
        });
    }
}

async function postStructured(target: FailingSequenceBackend): Promise<{statuses: number[]; running: number}> {
    const {app, state} = createServeApp({
        target,
        draft: undefined,
        modelName: "bigram",
        maxConcurrency: 1,
        maxQueue: 0,
        logError: () => {}
    });
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
        const response = await app.request("/v1/completions", {
            method: "POST",
            headers: {"content-type": "application/json"},
            body: JSON.stringify({
                prompt: "abc",
                max_tokens: 4,
                response_format: {type: "json_schema", json_schema: {name: "x", schema: {type: "string"}}}
            })
        });
        statuses.push(response.status);
    }
    return {statuses, running: state.slots.running};
}

describe("a structured-output request whose sequences fail", () => {
    it("disposes of its constraint and frees its slot when the prompt cache's lease throws", async () => {
        const target = new FailingSequenceBackend("create");
        expect(await postStructured(target)).toEqual({statuses: [500, 500], running: 0});
        expect(target.constraints.map((constraint) => constraint.disposed)).toEqual([1, 1]);
    });

    it("disposes of its constraint and frees its slot when handing the lease back throws", async () => {
        const target = new FailingSequenceBackend("idle");
        expect(await postStructured(target)).toEqual({statuses: [500, 500], running: 0});
        expect(target.constraints.map((constraint) => constraint.disposed)).toEqual([1, 1]);
    });
});
