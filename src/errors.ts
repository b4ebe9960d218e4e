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
    public constructor(message: string, field?: string, code = "invalid_input") {
        super(code, message, field);
    }
}

/**
 * A prompt with more tokens than the model's context can hold (with room for one generated token):
 * nothing was generated. Battery runners catch it per item, so one long prompt does not end a run.
 * A remote server's refusal gives no counts (undefined) and its own message. Its code is OpenAI's
 * for the same refusal, which serve answers with.
 */
export class PromptExceedsContextError extends InvalidInputError {
    public constructor(
        public readonly promptTokens: number | undefined,
        public readonly contextSize: number | undefined,
        field = "prompt",
        message?: string
    ) {
        super(message ?? `has ${promptTokens} tokens; the context holds ${contextSize}`, field, "context_length_exceeded");
    }
}

/** A probability row or logit row is not a valid distribution (NaN, negative, wrong sum, wrong size). */
export class InvalidDistributionError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("invalid_distribution", message, field);
    }
}

/** A verification policy configuration names an unknown kind or parameter, a parameter is out of range, or (code policy_not_allowed) a server does not offer it to requests. */
export class InvalidPolicyError extends SpecgateError {
    public constructor(message: string, field?: string, code = "invalid_policy") {
        super(code, message, field);
    }
}

/** A drafter spec names an unknown drafter or parameter, a parameter is out of range, a drafter lacks what it needs, or (code drafter_not_allowed) a server does not offer it to requests. */
export class InvalidDrafterError extends SpecgateError {
    public constructor(message: string, field?: string, code = "invalid_drafter") {
        super(code, message, field);
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

/**
 * An EAGLE-3 head cannot draft for this target: it reads hidden states of another width, or layers
 * the target does not have (its eagle3.target_hidden_size and eagle3.target_layers name what it was
 * trained on).
 */
export class DraftHeadMismatchError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("draft_head_mismatch", message, field);
    }
}

/** A draft and a target model do not share the same tokenizer, so their token ids cannot be compared. */
export class TokenizerMismatchError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("tokenizer_mismatch", message, field);
    }
}

/** A row of a data file (battery, ledger, prompts) cannot be parsed; `file` and `line` say where. */
export class MalformedRowError extends SpecgateError {
    public readonly file: string;
    public readonly line: number;

    public constructor(file: string, line: number, message: string) {
        super("malformed_row", message, `${file}:${line}`);
        this.file = file;
        this.line = line;
    }
}

/**
 * A decode path could not complete a request. "http_status": the server answered with a non-retryable
 * or final error status; "timeout": every attempt timed out; "malformed_response": the reply is not the
 * expected JSON; "network": the connection failed on every attempt.
 */
export class DecodePathError extends SpecgateError {
    public readonly reason: "http_status" | "timeout" | "malformed_response" | "network";
    public readonly status?: number;

    public constructor(reason: "http_status" | "timeout" | "malformed_response" | "network", message: string, status?: number) {
        super("decode_path_failed", message);
        this.reason = reason;
        this.status = status;
    }
}

/** An existing ledger was written by a run with a different configuration, so resuming it would mix runs. */
export class LedgerMismatchError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("ledger_mismatch", message, field);
    }
}

/** A request names a model the server does not serve (HTTP 404). */
export class ModelNotFoundError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("model_not_found", message, field);
    }
}

/** No route matches a request's method and path (HTTP 404). */
export class RouteNotFoundError extends SpecgateError {
    public constructor(message: string) {
        super("not_found", message);
    }
}

/** A request body exceeds the server's size limit (HTTP 413). */
export class PayloadTooLargeError extends SpecgateError {
    public constructor(message: string) {
        super("payload_too_large", message);
    }
}

/** Every generation slot is busy and the waiting queue is full (HTTP 429). */
export class ServerOverloadedError extends SpecgateError {
    public constructor(message: string) {
        super("server_overloaded", message);
    }
}

/** Another live process holds a ledger's lock (two runs appending to one ledger would duplicate its samples). */
export class LedgerLockedError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("ledger_locked", message, field);
    }
}

/** A request without a valid API key, on a server that requires one (HTTP 401). */
export class AuthenticationError extends SpecgateError {
    public constructor(message: string) {
        super("invalid_api_key", message);
    }
}

/** A request whose Host header names a host the server does not answer for (HTTP 403, against DNS rebinding). */
export class HostNotAllowedError extends SpecgateError {
    public constructor(message: string) {
        super("host_not_allowed", message);
    }
}

/** A request body that is not declared as JSON (HTTP 415). */
export class UnsupportedMediaTypeError extends SpecgateError {
    public constructor(message: string) {
        super("unsupported_media_type", message);
    }
}

/** The server is draining for shutdown and takes no new requests (HTTP 503). */
export class ServerShuttingDownError extends SpecgateError {
    public constructor(message: string) {
        super("shutting_down", message);
    }
}

/**
 * A training checkpoint cannot be used. "missing": no such file; "corrupt": not a specgate checkpoint,
 * truncated or malformed; "mismatch": a valid checkpoint of another model shape or training setup.
 */
export class CheckpointError extends SpecgateError {
    public readonly reason: "missing" | "corrupt" | "mismatch";

    public constructor(reason: "missing" | "corrupt" | "mismatch", message: string, field?: string) {
        super("checkpoint_unusable", message, field);
        this.reason = reason;
    }
}

/** A fairness analysis needs at least two groups to compare; the battery yields fewer under the chosen grouping. */
export class SingleGroupError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("single_group", message, field);
    }
}

/** A language tag (a battery variant or an item's `language`) is not a known language. */
export class UnknownLanguageError extends SpecgateError {
    public readonly tag: string;

    public constructor(tag: string, message: string, field?: string) {
        super("unknown_language", message, field);
        this.tag = tag;
    }
}

/** A battery has no items (after its limits and, for calibration, after splitting). */
export class EmptyBatteryError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("empty_battery", message, field);
    }
}

/** A battery's items cannot be scored for accuracy: no scorer, or a scorer whose reference or choices are missing. */
export class ScorerMismatchError extends SpecgateError {
    /** Ids of the items that cannot be scored (the first few). */
    public readonly itemIds: readonly string[];

    public constructor(itemIds: readonly string[], message: string, field?: string) {
        super("scorer_mismatch", message, field);
        this.itemIds = itemIds;
    }
}

/** The native backend was asked for but its addon is not built or does not load here. */
export class NativeBackendUnavailableError extends SpecgateError {
    public constructor(message: string) {
        super("native_backend_unavailable", message, "backend");
    }
}

/**
 * A structured-output schema (or its grammar) beyond what the server can compile or follow within its
 * limits: a part over the documented size limits, conversion or construction over the time or memory
 * budget, or a generation whose grammar work exceeded its per-request compute budget (HTTP 400).
 */
export class GrammarTooComplexError extends InvalidInputError {
    public constructor(message: string, field?: string) {
        super(message, field, "grammar_too_complex");
    }
}

/** A token was fed to a constraint (a grammar) that forbids it at that point. */
export class ConstraintViolationError extends SpecgateError {
    public constructor(message: string) {
        super("constraint_violation", message);
    }
}

/** The process received SIGINT or SIGTERM: the reason of the CLI's interrupt signal (src/cli/interrupts.ts). */
export class InterruptedError extends SpecgateError {
    public readonly signal: NodeJS.Signals;

    public constructor(signal: NodeJS.Signals) {
        super("interrupted", `interrupted by ${signal}`);
        this.signal = signal;
    }
}

/**
 * Too little data for a result: an audit whose items, after those skipped under the context rule,
 * leave a group empty. Commands exit 3 (insufficient data) on it.
 */
export class InsufficientDataError extends SpecgateError {
    public constructor(message: string, field?: string) {
        super("insufficient_data", message, field);
    }
}
