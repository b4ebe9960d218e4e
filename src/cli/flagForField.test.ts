import {describe, expect, it} from "vitest";
import {InvalidInputError, InvalidPolicyError} from "../errors.js";
import {calibrateSetting} from "../tune/calibrateSetting.js";
import {cliErrorMessage, flagForField} from "./flagForField.js";

describe("library errors name parameters; the CLI names the flags", () => {
    it("a library function's error names its parameter, and the CLI prints the flag that gave it", async () => {
        const error = (await calibrateSetting({items: [], maxAccuracyDrop: -1} as never).catch((caught: unknown) => caught)) as Error;
        expect(error.message).toMatch(/^items: has no items/);
        expect(cliErrorMessage(error, "specgate calibrate")).toMatch(/^--battery: has no items/);
        const drop = new InvalidInputError("must be a non-negative number of points, got -1", "maxAccuracyDrop");
        expect(cliErrorMessage(drop, "specgate calibrate")).toBe("--max-accuracy-drop: must be a non-negative number of points, got -1");
    });

    it("maps a field's leading parameter, and the command's own flag where it reads the parameter from another", () => {
        expect(cliErrorMessage(new InvalidPolicyError("unknown parameter", "policy.treshold"), "specgate generate")).toBe(
            "--policy.treshold: unknown parameter"
        );
        expect(flagForField("items", "specgate canary")).toBe("--prompts");
        expect(flagForField("items", "specgate sweep")).toBe("--battery");
        expect(flagForField("policy", "specgate bench")).toBe("--policies");
        expect(flagForField("policy", "specgate generate")).toBe("--policy");
    });

    it("leaves fields no flag gives, errors without a field and other errors as they are", () => {
        expect(cliErrorMessage(new InvalidInputError("is empty", "prompt"), "specgate generate")).toBe("prompt: is empty");
        expect(cliErrorMessage(new InvalidInputError("is empty", "policyName"), "specgate generate")).toBe("policyName: is empty");
        expect(cliErrorMessage(new InvalidInputError("bad"), "specgate generate")).toBe("bad");
        expect(cliErrorMessage(new Error("gamma: boom"), "specgate generate")).toBe("gamma: boom");
    });
});
