/**
 * The `data:` payloads of a server-sent-event body, in order, as they arrive. Stop iterating early
 * (break) to cancel the body, which is how a test disconnects mid-stream.
 */
export async function* readSseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
        for (;;) {
            const {done, value} = await reader.read();
            if (done) break;
            buffer += value;
            let boundary: number;
            while ((boundary = buffer.indexOf("\n\n")) >= 0) {
                const event = buffer.slice(0, boundary);
                buffer = buffer.slice(boundary + 2);
                const data = event
                    .split("\n")
                    .filter((line) => line.startsWith("data: "))
                    .map((line) => line.slice(6))
                    .join("\n");
                if (data !== "") yield data;
            }
        }
    } finally {
        await reader.cancel().catch(() => undefined);
    }
}
