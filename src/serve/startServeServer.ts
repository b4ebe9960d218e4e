import type {Server} from "node:http";
import type {AddressInfo} from "node:net";
import {serve} from "@hono/node-server";
import type {Hono} from "hono";
import {HostAllowList, isLoopbackAddress} from "./accessControl.js";
import {createServeApp, type ServeApp, type ServeAppOptions} from "./createServeApp.js";

export interface ServeServerOptions extends ServeAppOptions {
    /** Default 127.0.0.1: loopback unless told otherwise (set apiKeys before listening elsewhere). */
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

/**
 * Puts the serve app on a TCP port with @hono/node-server and resolves once it listens. On a
 * loopback address the Host header must name a loopback host with this port unless
 * `allowedHosts` says otherwise (the app is built once the port is known, so port 0 works too).
 */
export async function startServeServer(options: ServeServerOptions): Promise<RunningServeServer> {
    const host = options.host ?? "127.0.0.1";
    const handler: {fetch?: Hono["fetch"]} = {};
    const server = await new Promise<Server>((resolve, reject) => {
        // Requests are handled only after the listen callback, by which time `handler.fetch` is set.
        const created = serve({fetch: (...request) => handler.fetch!(...request), hostname: host, port: options.port ?? 8000}, () =>
            resolve(created as Server)
        );
        created.once("error", reject);
    });
    const port = (server.address() as AddressInfo).port;
    let serveApp: ServeApp;
    try {
        serveApp = createServeApp({
            ...options,
            allowedHosts: options.allowedHosts ?? (isLoopbackAddress(host) ? HostAllowList.loopback(port) : undefined)
        });
    } catch (error) {
        server.close();
        throw error;
    }
    handler.fetch = serveApp.app.fetch;
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
                    server.close((error) => (error === undefined ? resolve() : reject(error)));
                    server.closeIdleConnections();
                    // Connections still flushing their last response get a moment, then are closed.
                    setTimeout(() => server.closeAllConnections(), 1000).unref();
                });
            })();
            return closing;
        }
    };
}
