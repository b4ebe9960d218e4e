import {PayloadTooLargeError} from "../errors.js";

/** How many bytes beyond the limit are read and dropped so that the client can read the 413 (nginx's lingering close). */
export const defaultDrainBytes = 64 * 1024 * 1024;

/**
 * Reads a request body as UTF-8 text, at most `maxBytes` of it. A longer body (declared by
 * Content-Length or found while reading) is read on to its end and dropped, up to `drainBytes`
 * more, and then refused with PayloadTooLargeError: a server that answers and closes while the
 * client is still sending resets the connection, and the client never reads its 413. A body
 * declared or found beyond `maxBytes + drainBytes` is refused without reading on (its sender may
 * then see a reset).
 */
export async function readRequestBody(request: Request, maxBytes: number, drainBytes = defaultDrainBytes): Promise<string> {
    const tooLarge = (): PayloadTooLargeError => new PayloadTooLargeError(`the request body exceeds ${maxBytes} bytes`);
    const declared = Number(request.headers.get("content-length") ?? Number.NaN);
    if (declared > maxBytes + drainBytes) throw tooLarge();
    // A declared length within the limit bounds the body (Node's HTTP parser reads no more than it), so
    // it is read whole: on @hono/node-server, text() collects the socket's chunks without building a
    // web Request and its stream.
    if (Number.isSafeInteger(declared) && declared <= maxBytes && request.headers.get("transfer-encoding") === null) return request.text();
    if (request.body === null) return "";
    const reader = request.body.getReader();
    const chunks: Uint8Array[] = [];
    let received = 0;
    let over = Number.isFinite(declared) && declared > maxBytes;
    try {
        for (;;) {
            const {done, value} = await reader.read();
            if (done) break;
            received += value.byteLength;
            if (received > maxBytes) over = true;
            if (!over) chunks.push(value);
            if (received > maxBytes + drainBytes) {
                await reader.cancel().catch(() => undefined);
                throw tooLarge();
            }
        }
    } finally {
        reader.releaseLock();
    }
    if (over) throw tooLarge();
    return Buffer.concat(chunks).toString("utf8");
}
