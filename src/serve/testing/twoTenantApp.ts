import {BigramBackend} from "../../engine/testing/BigramBackend.js";
import {createServeApp, type ServeAppOptions} from "../createServeApp.js";

/** A bigram target (V = 28) and a noisy copy of it as the draft, shared by the multi-tenant tests. */
export const tenantTarget = BigramBackend.random(3, 28, {eosBias: -30});
export const tenantDraft = tenantTarget.noisyCopy(4, 0.5);
/** The two API keys the app accepts: two tenants. */
export const tenantKeys = {a: "key-of-tenant-a", b: "key-of-tenant-b"};

// Replies are read field by field; their shape is what the assertions check.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Reply = Record<string, any>;

/** The serve app on the bigram pair with the two tenants' keys. */
export function twoTenantApp(options: Partial<ServeAppOptions> = {}): ReturnType<typeof createServeApp> {
    return createServeApp({
        target: tenantTarget,
        draft: tenantDraft,
        modelName: "bigram",
        apiKeys: [tenantKeys.a, tenantKeys.b],
        ...options
    });
}

/** POST /v1/completions with `key`'s bearer token, in process. */
export async function postCompletion(
    app: ReturnType<typeof twoTenantApp>["app"],
    key: string,
    body: Record<string, unknown>
): Promise<{status: number; body: Reply}> {
    const response = await app.request("/v1/completions", {
        method: "POST",
        headers: {"content-type": "application/json", authorization: `Bearer ${key}`},
        body: JSON.stringify(body)
    });
    return {status: response.status, body: (await response.json()) as Reply};
}
