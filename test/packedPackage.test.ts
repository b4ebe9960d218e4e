// The package as a user gets it: `npm pack`, installed into a scratch TypeScript project, whose
// example (examples/library-quickstart.ts) type-checks against the published types and runs on the
// family pair. Offline: the scratch project's lockfile is this repository's, trimmed to the
// production dependencies, so `npm ci --offline` takes every package from npm's cache, laid out as
// npm lays out an app (node-llama-cpp hoisted beside specgate, not under it); the package's install
// script reuses this checkout's addon (SPECGATE_NATIVE_PREBUILT) instead of compiling llama.cpp
// again, and `specgate build --check` shows where a build would take llama.cpp's source from.
import {execFile} from "node:child_process";
import {
    cpSync,
    existsSync,
    mkdirSync,
    mkdtempSync,
    readFileSync,
    readdirSync,
    realpathSync,
    rmSync,
    symlinkSync,
    writeFileSync
} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {promisify} from "node:util";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {nativeAddonPath} from "../src/backend/nativeAddon.js";

vi.setConfig({testTimeout: 240_000, hookTimeout: 600_000});

const root = new URL("../", import.meta.url).pathname;
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    name: string;
    version: string;
    files: string[];
    license: string;
    dependencies: Record<string, string>;
    bin: Record<string, string>;
    engines: Record<string, string>;
};

const addonBuilt = existsSync(nativeAddonPath);
let directory: string;
let app: string;
let tarball: string;

interface Ran {
    status: number;
    stdout: string;
    stderr: string;
}

/**
 * Runs a command to its end, whatever its exit status. Asynchronously: a worker blocked for minutes
 * (npm ci, tsc) misses vitest's calls and fails the run with "Timeout calling onTaskUpdate".
 */
async function runStatus(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
    try {
        const {stdout, stderr} = await promisify(execFile)(command, [...args], {
            cwd,
            encoding: "utf8",
            env: {...process.env, ...env},
            maxBuffer: 64 * 2 ** 20
        });
        return {status: 0, stdout, stderr};
    } catch (error) {
        const failed = error as {code?: number | string; stdout?: string; stderr?: string};
        if (typeof failed.code !== "number") throw error;
        return {status: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? ""};
    }
}

/** Runs a command that must succeed; its stdout. */
async function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
    const result = await runStatus(command, args, cwd, env);
    if (result.status !== 0)
        throw new Error(`${command} ${args.join(" ")} exited with ${result.status}\n${result.stdout}\n${result.stderr}`);
    return result.stdout;
}

/**
 * The package built and packed in a staging copy (the sources, package.json and the files it ships,
 * with this checkout's node_modules linked in), so the shared dist/ is neither read nor written.
 */
async function packPackage(): Promise<string> {
    const staging = join(directory, "package");
    mkdirSync(staging);
    for (const path of ["package.json", "README.md", "tsconfig.json", "tsconfig.build.json", "src", ...manifest.files])
        if (path !== "dist" && existsSync(join(root, path))) cpSync(join(root, path), join(staging, path), {recursive: true});
    symlinkSync(join(root, "node_modules"), join(staging, "node_modules"));
    // What `npm run build` (the prepare script `npm pack` runs) does.
    await run(process.execPath, [tsc, "-p", "tsconfig.build.json"], staging);
    await run(npm, ["pack", "--ignore-scripts", "--pack-destination", directory], staging);
    return join(directory, `${manifest.name}-${manifest.version}.tgz`);
}

/** A project depending on the tarball alone, with a lockfile that pins specgate's production dependencies as this repository does. */
function writeScratchProject(): void {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
        packages: Record<string, {dev?: boolean; devOptional?: boolean}>;
    };
    const dependency = `file:${tarball}`;
    const packages: Record<string, unknown> = {
        "": {name: "scratch", dependencies: {[manifest.name]: dependency}},
        [`node_modules/${manifest.name}`]: {
            version: manifest.version,
            resolved: dependency,
            hasInstallScript: true,
            license: manifest.license,
            dependencies: manifest.dependencies,
            bin: manifest.bin,
            engines: manifest.engines
        }
    };
    for (const [path, entry] of Object.entries(lock.packages))
        if (path !== "" && entry.dev !== true && entry.devOptional !== true) packages[path] = entry;
    writeFileSync(
        join(app, "package.json"),
        JSON.stringify({name: "scratch", private: true, type: "module", dependencies: {[manifest.name]: dependency}})
    );
    writeFileSync(join(app, "package-lock.json"), JSON.stringify({name: "scratch", lockfileVersion: 3, requires: true, packages}));
    writeFileSync(
        join(app, "tsconfig.json"),
        JSON.stringify({
            compilerOptions: {
                target: "ES2022",
                module: "NodeNext",
                moduleResolution: "NodeNext",
                lib: ["ES2023"],
                strict: true,
                skipLibCheck: true,
                outDir: "out",
                rootDir: "src",
                // @types/node is a development dependency here, not something specgate installs.
                typeRoots: [join(root, "node_modules", "@types")],
                types: ["node"]
            },
            include: ["src"]
        })
    );
    mkdirSync(join(app, "src"));
    cpSync(join(root, "examples", "library-quickstart.ts"), join(app, "src", "library-quickstart.ts"));
}

beforeAll(async () => {
    // The real path: node's module resolution (which the build script uses) reports real paths.
    directory = realpathSync(mkdtempSync(join(tmpdir(), "specgate-pack-")));
    app = join(directory, "app");
    mkdirSync(app);
    tarball = await packPackage();
    writeScratchProject();
    await run(npm, ["ci", "--offline", "--no-audit", "--no-fund", "--ignore-scripts"], app);
    // specgate's own install script (the addon), with the addon this checkout built; where none is
    // built (no compiler), the package runs on node-llama-cpp, as it would for its user.
    await run(
        npm,
        ["rebuild", manifest.name, "--foreground-scripts"],
        app,
        addonBuilt ? {SPECGATE_NATIVE_PREBUILT: nativeAddonPath} : {SPECGATE_SKIP_NATIVE: "1"}
    );
});

afterAll(() => {
    if (directory !== undefined) rmSync(directory, {recursive: true, force: true});
});

describe("the packed package", () => {
    it("ships the entry package.json names, with its types, and no tests", async () => {
        const installed = join(app, "node_modules", manifest.name);
        expect(existsSync(join(installed, "dist", "index.js"))).toBe(true);
        expect(existsSync(join(installed, "dist", "index.d.ts"))).toBe(true);
        expect(existsSync(join(installed, "dist", "cli", "main.js"))).toBe(true);
        const shipped = readdirSync(join(installed, "dist"), {recursive: true}).map(String);
        expect(shipped.filter((path) => /\.test\.|(^|\/)testing\//.test(path))).toEqual([]);
    });

    it("type-checks the library example against the published types", async () => {
        await run(process.execPath, [tsc, "-p", "tsconfig.json"], app);
        expect(existsSync(join(app, "out", "library-quickstart.js"))).toBe(true);
    });

    it("imports by the package name, on the native backend its install script put in place (where one is built here)", async () => {
        const output = await run(
            process.execPath,
            [
                "--input-type=module",
                "-e",
                'const m = await import("specgate"); console.log(typeof m.generate, typeof m.createServeApp, m.nativeBackendAvailable());'
            ],
            app
        );
        expect(output.trim()).toBe(`function function ${addonBuilt}`);
    });

    it("refuses deep imports (only the entry is public)", async () => {
        await expect(
            run(process.execPath, ["--input-type=module", "-e", 'await import("specgate/dist/engine/generate.js");'], app)
        ).rejects.toThrow(/ERR_PACKAGE_PATH_NOT_EXPORTED/);
    });

    it("runs the example on the family pair", async () => {
        const output = await run(
            process.execPath,
            [
                join("out", "library-quickstart.js"),
                join(root, "models", "target", "model.gguf"),
                join(root, "models", "draft", "model.gguf")
            ],
            app
        );
        expect(output).toMatch(/^identical: true$/m);
        expect(output).toMatch(/^streamed the same text: true$/m);
        expect(output).toMatch(/^served: 200 /m);
        expect(output).toMatch(/^simulated acceptance 0\.\d+ \(analytic 0\.\d+\)$/m);
        expect(output).toMatch(/^TAIS: \S+/m);
        expect(output).toMatch(/^refused \(invalid_policy, policy.kind\): /m);
    });

    it("is installed as npm lays out an app: node-llama-cpp hoisted beside specgate, not under it", async () => {
        expect(existsSync(join(app, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle"))).toBe(true);
        expect(existsSync(join(app, "node_modules", manifest.name, "node_modules", "node-llama-cpp"))).toBe(false);
    });

    it("`npx specgate build --check` takes llama.cpp's source from the hoisted node-llama-cpp", async () => {
        const result = await runStatus(npm, ["exec", "--no", "--", "specgate", "build", "--check"], app);
        const bundle = join(app, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle");
        const addon = join(app, "node_modules", manifest.name, "native", "build", "specgate_native.node");
        expect(result.stderr).toContain(`specgate: llama.cpp source: ${bundle}\n`);
        expect(result.stderr).toContain(`specgate: CPU addon: ${addon} (${addonBuilt ? "built" : "not built"})\n`);
        expect(result.stdout).toBe("");
    });

    it("generates on the native backend its install script put in place (node-llama-cpp, saying so, where none is built)", async () => {
        const result = await runStatus(
            join(app, "node_modules", ".bin", "specgate"),
            [
                "generate",
                "--target",
                join(root, "models", "target", "model.gguf"),
                "--max-tokens",
                "8",
                "--temperature",
                "0",
                "--json",
                "-",
                "Once"
            ],
            app
        );
        expect(result.status, result.stderr).toBe(0);
        const report = JSON.parse(result.stdout) as {engine: {backend: string}; tokens: unknown[]};
        expect(report.tokens).toHaveLength(8);
        if (addonBuilt) {
            expect(report.engine).toEqual({backend: "native", build: "cpu", device: "CPU", tokenSelection: "host"});
            expect(result.stderr).not.toContain("running on node-llama-cpp");
        } else {
            expect(report.engine.backend).toBe("node-llama-cpp");
            expect(result.stderr).toMatch(/^specgate: running on node-llama-cpp .*`npx specgate build`/m);
        }
    });

    it("runs the CLI from the installed bin", async () => {
        const output = await run(join(app, "node_modules", ".bin", "specgate"), ["--version"], app);
        expect(output.trim()).toBe(manifest.version);
    });
});
