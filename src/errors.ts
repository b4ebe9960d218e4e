/**
 * Typed errors. Every error specgate raises on bad input is a SpecgateError with a stable `code`
 * and, where one exists, the `field` (a JSON-path-like string) that is wrong, so a CLI, a server
 * or a test can turn it into a precise message without parsing text.
 */
export class SpecgateError extends Error {
    public readonly code: string;
    public readonly field?: string;

    public constructor(code: string, message: string, field?: string) {
        super(field != null ? `${field}: ${message}` : message);
        this.name = new.target.name;
        this.code = code;
        this.field = field;
    }
}

/** A value given by the user (file, flag, request body) is malformed or out of range. */
export class InvalidInputError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("invalid_input", message, field);
    }
}

/** A probability row or logit row is not a valid distribution (NaN, negative, wrong sum, wrong size). */
export class InvalidDistributionError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("invalid_distribution", message, field);
    }
}

/** A verification policy configuration names an unknown kind or parameter, or a parameter is out of range. */
export class InvalidPolicyError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("invalid_policy", message, field);
    }
}

/** A token id is outside [0, vocabularySize). */
export class TokenOutOfRangeError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("token_out_of_range", message, field);
    }
}

/** Exact enumeration was asked for a problem whose outcome tree is larger than the allowed bound. */
export class EnumerationTooLargeError extends SpecgateError {
    public constructor(message: string) {
        super("enumeration_too_large", message);
    }
}

/** A model file could not be loaded: it is missing, is not a GGUF file, or is a corrupt / unsupported GGUF file. */
export class ModelLoadError extends SpecgateError {
    /** "missing": no such file; "not_gguf": wrong magic bytes; "corrupt": a GGUF that fails to parse or load. */
    public readonly reason: "missing" | "not_gguf" | "corrupt";

    public constructor(reason: "missing" | "not_gguf" | "corrupt", message: string, field?: string) {
        super("model_load_failed", message, field);
        this.reason = reason;
    }
}

/** A draft and a target model do not share the same tokenizer, so their token ids cannot be compared. */
export class TokenizerMismatchError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("tokenizer_mismatch", message, field);
    }
}
