import type {ModelBackend} from "../backend/ModelBackend.js";
import {InvalidInputError} from "../errors.js";
import type {TokenConstraint} from "../backend/TokenConstraint.js";

/** InvalidInputError (`field`) where `backend` has no grammars (only the native backend has). */
export function assertConstrainable(backend: ModelBackend, field: string): void {
    if (backend.createConstraint == null)
        throw new InvalidInputError(
            `needs the native backend (the model runs on ${backend.backendKind ?? "a backend without grammars"})`,
            field
        );
}

/** A constraint on `backend`'s output from GBNF `grammar`; InvalidInputError (`field`) where the backend has no grammars. */
export function constraintFor(backend: ModelBackend, grammar: string, field = "jsonSchema"): TokenConstraint {
    assertConstrainable(backend, field);
    return backend.createConstraint!(grammar);
}
