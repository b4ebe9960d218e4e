import {createServer} from "node:net";

/** A TCP port on 127.0.0.1 that was free a moment ago, for a server process a benchmark or a test starts. */
export function freePort(): Promise<number> {
    return new Promise((resolvePort, reject) => {
        const server = createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
            const address = server.address();
            const port = typeof address === "object" && address != null ? address.port : 0;
            server.close(() => resolvePort(port));
        });
    });
}
