// The layers of src/ (ARCHITECTURE.md, "Layers"), checked by `npm run lint`: a module may import
// its own folder and the folders listed before its own, never one listed after it. Tests and test
// helpers (`*.test.ts`, `testing/`) may import anything; production code never imports them.

/** Bottom to top. Each entry is a folder of src/ or one of its top-level files. */
export const layers = [
    // Foundation: no models, no I/O beyond files.
    "errors.ts",
    "io",
    "plots",
    "random",
    "distributions",
    "divergences",
    "speedup",
    "statistics",
    // Verification: policies and their simulation.
    "policies",
    "simulate",
    // Models: files, backends, constraints on their output, chat formats.
    "gguf",
    "backend",
    "constraints",
    "chat",
    // Decoding: the speculative loop and what feeds it.
    "engine",
    "correctionMemory",
    "batteries",
    "decodePaths",
    "fingerprint",
    "foundry",
    // Tools and audits built on decoding.
    "benchRunner",
    "tune",
    "audits",
    "fairness",
    // Front ends.
    "serve",
    "cli",
    "index.ts"
];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** A path regex for the layer entries `names` under `root` (a folder's files, or the file itself). */
const under = (root, names) => `^${escape(root)}(${names.map((name) => escape(name) + (name.endsWith(".ts") ? "$" : "/")).join("|")})`;
const testCode = "(\\.test\\.ts$|/testing/)";

/** One forbidden rule per layer (its modules may not import any later layer's), and the rules around them. */
function layerRules(root = "src/", order = layers) {
    const upward = order.slice(0, -1).map((name, index) => ({
        name: `layer-${name.replace(/\.ts$/, "")}`,
        comment: `src/${name} is below ${order.slice(index + 1).join(", ")} (ARCHITECTURE.md, "Layers"): it may import only ${order.slice(0, index).join(", ") || "nothing in src"}`,
        severity: "error",
        from: {path: under(root, [name]), pathNot: testCode},
        to: {path: under(root, order.slice(index + 1))}
    }));
    return [
        ...upward,
        {
            name: "layer-unlisted",
            comment: "every folder of src/ has a place in the layers (.dependency-cruiser.mjs, ARCHITECTURE.md)",
            severity: "error",
            from: {path: `^${escape(root)}`},
            to: {path: `^${escape(root)}`, pathNot: [under(root, order), testCode]}
        },
        {
            name: "no-test-code-in-production",
            comment: "production code does not import tests or test helpers (testing/)",
            severity: "error",
            from: {path: `^${escape(root)}`, pathNot: testCode},
            to: {path: testCode}
        }
    ];
}

export default {
    forbidden: [
        ...layerRules(),
        {
            name: "no-scripts-in-src",
            comment: "src/ is the package: it does not import bench/, test/ or scripts/",
            severity: "error",
            from: {path: "^src/"},
            to: {path: "^(bench|test|scripts)/"}
        }
    ],
    options: {
        doNotFollow: {path: "node_modules"},
        exclude: {path: "^(dist|node_modules|native|models)/"},
        // Type-only imports are dependencies too.
        tsPreCompilationDeps: true,
        tsConfig: {fileName: "tsconfig.json"},
        enhancedResolveOptions: {extensions: [".ts", ".js", ".mjs", ".json"]}
    }
};
