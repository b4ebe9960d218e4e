import type {ModelBackend} from "../backend/ModelBackend.js";
import {InvalidInputError} from "../errors.js";
import type {TokenConstraint} from "./TokenConstraint.js";

/** A constraint on `backend`'s output from GBNF `grammar`; InvalidInputError (`field`) where the backend has no grammars. */
export function constraintFor(backend: ModelBackend, grammar: string, field = "--json-schema"): TokenConstraint {
    if (backend.createConstraint == null)
        throw new InvalidInputError(
            `needs the native backend (the model runs on ${backend.backendKind ?? "a backend without grammars"})`,
            field
        );
    return backend.createConstraint(grammar);
}
