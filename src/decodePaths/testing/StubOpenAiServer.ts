import {createServer, type IncomingMessage, type Server, type ServerResponse} from "node:http";
import type {AddressInfo} from "node:net";

/** One scripted reply: status, headers, body text, and an optional delay before answering. */
export interface StubReply {
    readonly status?: number;
    readonly headers?: Readonly<Record<string, string>>;
    readonly body: string;
    readonly delayMs?: number;
}

export interface RecordedRequest {
    readonly path: string;
    readonly headers: IncomingMessage["headers"];
    readonly body: unknown;
}

/**
 * A local HTTP server on 127.0.0.1 that answers requests with scripted replies, in order (the last
 * one repeats), records what it was sent, and tracks the most requests it had in flight at once.
 */
export class StubOpenAiServer {
    public readonly requests: RecordedRequest[] = [];
    public maximumInFlight = 0;
    private inFlight = 0;
    /** Bumped by script(), so late requests of an earlier script (a timed-out one still sleeping) do not count. */
    private generation = 0;
    private replies: StubReply[] = [];
    private readonly server: Server;

    private constructor() {
        this.server = createServer((request, response) => void this.handle(request, response));
    }

    public static async start(): Promise<StubOpenAiServer> {
        const stub = new StubOpenAiServer();
        await new Promise<void>((resolve) => stub.server.listen(0, "127.0.0.1", resolve));
        return stub;
    }

    public get baseUrl(): string {
        return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    }

    /** Replaces the script and forgets recorded requests. */
    public script(...replies: StubReply[]): void {
        this.replies = [...replies];
        this.requests.length = 0;
        this.maximumInFlight = 0;
        this.inFlight = 0;
        this.generation++;
    }

    public async close(): Promise<void> {
        this.server.closeAllConnections();
        await new Promise<void>((resolve) => this.server.close(() => resolve()));
    }

    private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
        const generation = this.generation;
        this.inFlight++;
        this.maximumInFlight = Math.max(this.maximumInFlight, this.inFlight);
        const chunks: Buffer[] = [];
        for await (const chunk of request) chunks.push(chunk as Buffer);
        const text = Buffer.concat(chunks).toString("utf8");
        this.requests.push({path: request.url ?? "", headers: request.headers, body: text === "" ? undefined : JSON.parse(text)});
        const reply = this.replies.length > 1 ? this.replies.shift()! : this.replies[0];
        if (reply.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
        if (generation === this.generation) this.inFlight--;
        if (response.destroyed) return;
        response.writeHead(reply.status ?? 200, {"content-type": "application/json", ...reply.headers});
        response.end(reply.body);
    }
}
