import type {Server} from "node:http";
import type {AddressInfo} from "node:net";
import {serve} from "@hono/node-server";
import {createServeApp, type ServeApp, type ServeAppOptions} from "./createServeApp.js";

export interface ServeServerOptions extends ServeAppOptions {
    /** Default 127.0.0.1: the server has no authentication, so it listens on loopback unless told otherwise. */
    readonly host?: string;
    /** 0 picks a free port (tests). Default 8000, as vLLM. */
    readonly port?: number;
}

export interface RunningServeServer {
    readonly serveApp: ServeApp;
    readonly server: Server;
    /** e.g. http://127.0.0.1:8000 (no /v1). */
    readonly url: string;
    readonly port: number;
    /** Drains (see ServeApp.shutdown), then closes the listener and its idle keep-alive connections. */
    close(drainTimeoutMs?: number): Promise<void>;
}

/** Puts the serve app on a TCP port with @hono/node-server and resolves once it listens. */
export async function startServeServer(options: ServeServerOptions): Promise<RunningServeServer> {
    const serveApp = createServeApp(options);
    const host = options.host ?? "127.0.0.1";
    const server = await new Promise<Server>((resolve, reject) => {
        const created = serve({fetch: serveApp.app.fetch, hostname: host, port: options.port ?? 8000}, () => resolve(created as Server));
        created.once("error", reject);
    });
    const port = (server.address() as AddressInfo).port;
    let closing: Promise<void> | undefined;
    return {
        serveApp,
        server,
        url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
        port,
        close(drainTimeoutMs?: number) {
            closing ??= (async () => {
                await serveApp.shutdown(drainTimeoutMs);
                await new Promise<void>((resolve, reject) => {
                    server.close((error) => error === undefined ? resolve() : reject(error));
                    server.closeIdleConnections();
                    // Connections still flushing their last response get a moment, then are closed.
                    setTimeout(() => server.closeAllConnections(), 1000).unref();
                });
            })();
            return closing;
        }
    };
}
