import {describe, expect, it} from "vitest";
import {nativeBackendAvailable} from "./nativeAddon.js";
import {NativeBackend} from "./NativeBackend.js";
import {describeBackendContract} from "./testing/describeBackendContract.js";

describe("native addon", () => {
    // `npm ci` builds it (scripts/buildNativeBackend.mjs); a machine without a compiler fails here, not silently.
    it("is built and loads", () => {
        expect(nativeBackendAvailable()).toBe(true);
    });
});

describeBackendContract("NativeBackend", (path, options) => NativeBackend.load(path, options));
