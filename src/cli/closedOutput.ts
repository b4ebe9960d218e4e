import {removeTemporaryFiles} from "../io/temporaryFiles.js";

/**
 * `specgate … | head`: once the reader has closed the pipe, writes to stdout fail with EPIPE. Like a
 * command killed by SIGPIPE, specgate then stops quietly (no stack trace), leaving no temporary file.
 */
export function exitOnClosedOutput(): void {
    for (const stream of [process.stdout, process.stderr])
        stream.on("error", (error: NodeJS.ErrnoException) => {
            if (error.code !== "EPIPE") throw error;
            removeTemporaryFiles();
            process.exit(process.exitCode ?? 0);
        });
}
