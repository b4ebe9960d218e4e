import {type OpenAiError, openAiError} from "./openAiError.js";

/**
 * The OpenAI error reply for `error`, as openAiError maps it; an unexpected error (a 500, which is
 * a bug) is also logged with its stack and the request's id, and its message carries that id, so a
 * client's report finds the log line.
 */
export function reportError(error: unknown, requestId: string, logError: (message: string) => void): OpenAiError {
    const mapped = openAiError(error);
    if (mapped.status !== 500) return mapped;
    logError(`specgate serve: request ${requestId} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return {...mapped, body: {error: {...mapped.body.error, message: `${mapped.body.error.message} (request ${requestId})`}}};
}
