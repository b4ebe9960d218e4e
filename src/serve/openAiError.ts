import {HTTPException} from "hono/http-exception";
import {
    AuthenticationError,
    HostNotAllowedError,
    UnsupportedMediaTypeError,
    InvalidDrafterError,
    InvalidInputError,
    InvalidPolicyError,
    ModelNotFoundError,
    PayloadTooLargeError,
    RouteNotFoundError,
    ServerOverloadedError,
    ServerShuttingDownError,
    SpecgateError,
    TokenizerMismatchError,
    TokenOutOfRangeError
} from "../errors.js";

export interface OpenAiError {
    readonly status: 400 | 401 | 403 | 404 | 413 | 415 | 429 | 499 | 500 | 503;
    readonly body: {error: {message: string; type: string; param: string | null; code: string | null}};
    /** Seconds a client should wait before retrying (429, 503). */
    readonly retryAfter?: number;
}

/**
 * The one mapping from exceptions to OpenAI-format errors, for the HTTP error handler and for an
 * error that happens mid-stream (sent as a final SSE event). Bad input is a 400 naming the field;
 * only a fault of the server itself is a 500, and its message is not passed to the client.
 */
export function openAiError(error: unknown): OpenAiError {
    const of = (
        status: OpenAiError["status"],
        type: string,
        message: string,
        param: string | null,
        code: string | null,
        retryAfter?: number
    ): OpenAiError => ({status, body: {error: {message, type, param, code}}, retryAfter});
    if (
        error instanceof InvalidInputError ||
        error instanceof InvalidPolicyError ||
        error instanceof InvalidDrafterError ||
        error instanceof TokenOutOfRangeError
    )
        return of(400, "invalid_request_error", error.message, error.field ?? null, error.code);
    if (error instanceof AuthenticationError) return of(401, "invalid_request_error", error.message, null, error.code);
    if (error instanceof HostNotAllowedError) return of(403, "invalid_request_error", error.message, null, error.code);
    if (error instanceof UnsupportedMediaTypeError) return of(415, "invalid_request_error", error.message, null, error.code);
    if (error instanceof ModelNotFoundError)
        return of(404, "invalid_request_error", error.message, error.field ?? "model", "model_not_found");
    if (error instanceof RouteNotFoundError) return of(404, "invalid_request_error", error.message, null, error.code);
    if (error instanceof PayloadTooLargeError) return of(413, "invalid_request_error", error.message, null, error.code);
    if (error instanceof ServerOverloadedError) return of(429, "rate_limit_exceeded", error.message, null, error.code, 1);
    if (error instanceof ServerShuttingDownError) return of(503, "server_error", error.message, null, error.code, 5);
    if (error instanceof DOMException && (error.name === "AbortError" || error.name === "TimeoutError"))
        // The client is gone (nginx's 499); nobody reads this, it only keeps the status below 500.
        return of(499, "invalid_request_error", "the request was aborted", null, "aborted");
    if (error instanceof HTTPException && error.status < 500)
        return of(400, "invalid_request_error", error.message || "bad request", null, null);
    if (error instanceof TokenizerMismatchError || error instanceof SpecgateError)
        return of(500, "server_error", error.message, null, error.code);
    return of(500, "server_error", "internal server error", null, null);
}
