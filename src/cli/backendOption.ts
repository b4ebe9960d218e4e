import {InvalidArgumentError, Option} from "commander";
import {type BackendChoice, backendKinds, parseBackendChoice} from "../backend/loadModelBackend.js";

/** `--backend`: which engine runs the models (docs/install.md, "Backends"). */
export function backendOption(): Option {
    return new Option(
        "--backend <auto|native|node-llama-cpp>",
        "engine that runs the models: native (specgate's llama.cpp addon, built by npm install), node-llama-cpp, " +
        "or auto (native where it is built; default, or the SPECGATE_BACKEND environment variable)"
    ).argParser((value: string): BackendChoice => {
        try {
            return parseBackendChoice(value);
        } catch {
            throw new InvalidArgumentError(`expected auto, ${backendKinds.join(" or ")}, got "${value}"`);
        }
    });
}
