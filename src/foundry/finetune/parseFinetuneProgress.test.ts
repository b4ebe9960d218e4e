import {describe, expect, it, vi} from "vitest";
import {parseFinetuneProgress} from "./parseFinetuneProgress.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

describe("parseFinetuneProgress", () => {
    it("reads llama-finetune's training and validation progress bars", () => {
        expect(
            parseFinetuneProgress("train: [███▍    ] data=0000128/0001024 loss=2.71234±0.03100 acc=31.25±0.50% t=00:01:14 ETA=00:08:40 ")
        ).toEqual({
            phase: "train",
            done: 128,
            total: 1024,
            loss: 2.71234,
            lossUncertainty: 0.031,
            accuracy: 0.3125,
            elapsedSeconds: 74
        });
        const validation = parseFinetuneProgress(
            "val:   [████████] data=0000548/0000548 loss=1.04211±0.00412 acc=68.90±0.12% t=01:00:02 ETA=00:00:00 "
        );
        expect(validation).toMatchObject({phase: "val", done: 548, total: 548, loss: 1.04211, elapsedSeconds: 3602});
        expect(validation?.accuracy).toBeCloseTo(0.689, 12);
    });

    it("ignores every other line", () => {
        expect(parseFinetuneProgress("llama_model_loader: loaded meta data with 24 key-value pairs")).toBeNull();
        expect(parseFinetuneProgress("")).toBeNull();
        expect(parseFinetuneProgress("train: data=12/100")).toBeNull();
    });
});
