#!/usr/bin/env node
// The npm registry this project installs from lacks some other-platform binaries of optional
// dependencies (e.g. @node-llama-cpp/mac-x64@3.22.1, @rollup/rollup-darwin-x64 at rollup's latest).
// `npm install` then leaves them out of package-lock.json and `npm ci` refuses the lock as "out of sync".
// This script adds a placeholder entry {version, optional} for every optional dependency the lock
// lacks; `npm ci` treats a failure to fetch an optional package as non-fatal, and on Linux x64 these
// are never needed. Run it after every `npm install` that changes the lock: node scripts/completeLockfile.mjs
import {readFileSync, writeFileSync} from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;
let added = 0;
for (const [key, entry] of Object.entries(packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
        // Resolution as npm does it: nested node_modules first, then the top level.
        const nested = `${key === "" ? "" : `${key}/`}node_modules/${name}`;
        if (packages[nested] != null || packages[`node_modules/${name}`] != null) continue;
        packages[`node_modules/${name}`] = {version, optional: true, ...(entry.dev ? {dev: true} : {})};
        added++;
    }
}
writeFileSync(path, JSON.stringify(lock, null, 2) + "\n");
console.log(`completeLockfile: added ${added} optional placeholder entries`);
