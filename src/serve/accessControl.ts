import {createHash, timingSafeEqual} from "node:crypto";
import {AuthenticationError, HostNotAllowedError, InvalidInputError, UnsupportedMediaTypeError} from "../errors.js";
import {serverTenant} from "./TenantResources.js";

/**
 * Checks `Authorization: Bearer <key>` against the server's API keys. Every key is compared, in
 * constant time, as a sha256 digest (equal lengths, so neither a key's content nor its length leaks
 * through timing), and the loop does not stop at the first match.
 */
export class ApiKeys {
    private readonly digests: Buffer[];

    public constructor(keys: readonly string[]) {
        keys.forEach((key, index) => {
            if (key.length === 0 || /\s/.test(key))
                throw new InvalidInputError("an API key must be non-empty and contain no whitespace", `apiKeys[${index}]`);
        });
        this.digests = keys.map(digest);
    }

    public get required(): boolean {
        return this.digests.length > 0;
    }

    /**
     * Throws AuthenticationError unless the header carries one of the keys (or no key is required).
     * Returns the caller's tenant: `key-<i>` for the i-th key (never the key itself), or
     * serverTenant when the server has no keys.
     */
    public check(authorization: string | undefined): string {
        if (!this.required) return serverTenant;
        const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? "");
        if (match === null) throw new AuthenticationError('this server requires an API key: send "Authorization: Bearer <key>"');
        const presented = digest(match[1]);
        let matched = -1;
        this.digests.forEach((key, index) => {
            if (timingSafeEqual(key, presented)) matched = index;
        });
        if (matched < 0) throw new AuthenticationError("incorrect API key provided");
        return `key-${matched}`;
    }
}

/**
 * The operator's key for /metrics (--metrics-api-key): the only key that reads it, so one tenant never
 * sees another's series, and a scraper's key opens no other route.
 */
export class MetricsKey {
    private readonly key: ApiKeys;

    public constructor(key: string) {
        if (key.length === 0 || /\s/.test(key)) throw new InvalidInputError("must be non-empty and contain no whitespace", "metricsApiKey");
        this.key = new ApiKeys([key]);
    }

    /** Throws AuthenticationError unless the header carries the metrics key; the reader is the server's operator. */
    public check(authorization: string | undefined): string {
        try {
            this.key.check(authorization);
        } catch (error) {
            if (error instanceof AuthenticationError)
                throw new AuthenticationError(
                    '/metrics is read with the server\'s metrics key (--metrics-api-key): send "Authorization: Bearer <metrics key>"'
                );
            throw error;
        }
        return serverTenant;
    }
}

function digest(key: string): Buffer {
    return createHash("sha256").update(key, "utf8").digest();
}

/** The hostnames that reach this machine's loopback interface only. */
export const loopbackHostnames = ["localhost", "127.0.0.1", "[::1]"] as const;

/** True for an address that only this machine can connect to (127.0.0.0/8, ::1, localhost). */
export function isLoopbackAddress(host: string): boolean {
    const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
    return bare === "localhost" || bare === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/**
 * The Host header values a server answers for. An entry is `name` (any port) or `name:port`
 * (IPv6 in brackets: `[::1]:8000`), compared case-insensitively; `*` allows any host. A page on
 * another site can make a browser send requests to a loopback server through DNS rebinding (its own
 * name resolving to 127.0.0.1), but the browser still sends that site's name as Host: checking it
 * refuses such requests.
 */
export class HostAllowList {
    private readonly any: boolean;
    private readonly entries: ReadonlyArray<{readonly name: string; readonly port: string | undefined}>;

    public constructor(public readonly patterns: readonly string[]) {
        this.any = patterns.includes("*");
        this.entries = patterns
            .filter((pattern) => pattern !== "*")
            .map((pattern, index) => {
                const parsed = splitHost(pattern.trim().toLowerCase());
                if (parsed === undefined || parsed.name === "")
                    throw new InvalidInputError(`"${pattern}" is not a host name, host:port, or *`, `allowedHosts[${index}]`);
                return parsed;
            });
    }

    /** The default for a server bound to a loopback address: its loopback names, on its port. */
    public static loopback(port: number): HostAllowList {
        return new HostAllowList(loopbackHostnames.map((name) => `${name}:${port}`));
    }

    /** Throws HostNotAllowedError unless `host` (the Host header) is allowed. */
    public check(host: string | undefined): void {
        if (this.any) return;
        const parsed = host === undefined ? undefined : splitHost(host.trim().toLowerCase());
        const allowed =
            parsed !== undefined &&
            this.entries.some((entry) => entry.name === parsed.name && (entry.port === undefined || entry.port === parsed.port));
        if (!allowed)
            throw new HostNotAllowedError(
                `the Host header ${host === undefined ? "is missing" : `"${host.slice(0, 100)}" is not allowed`}; set --allowed-hosts to the names clients use`
            );
    }
}

function splitHost(host: string): {name: string; port: string | undefined} | undefined {
    const match = /^(\[[0-9a-f:.]+\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(host);
    return match === null ? undefined : {name: match[1], port: match[2]};
}

/**
 * A POST body must be declared `application/json`. Browsers send cross-origin `text/plain` (and
 * form) POSTs without asking the server first; refusing every other type means such a request is
 * never served, whatever CORS says.
 */
export function checkJsonContentType(contentType: string | undefined): void {
    const mediaType = contentType?.split(";")[0].trim().toLowerCase();
    if (mediaType !== "application/json")
        throw new UnsupportedMediaTypeError(
            `the body must be sent as Content-Type: application/json${contentType === undefined ? "" : `, not "${contentType.slice(0, 100)}"`}`
        );
}
