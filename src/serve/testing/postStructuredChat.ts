/** POSTs a one-message chat completion constrained by `response_format` json_schema `schema` (T = 1). */
export function postStructuredChat(
    url: string,
    schema: unknown,
    options: {maxTokens: number; stream?: boolean; content?: string}
): Promise<Response> {
    return fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify({
            messages: [{role: "user", content: options.content ?? "Answer."}],
            max_tokens: options.maxTokens,
            temperature: 1,
            ...(options.stream === undefined ? {} : {stream: options.stream}),
            response_format: {type: "json_schema", json_schema: {name: "x", schema}}
        })
    });
}
