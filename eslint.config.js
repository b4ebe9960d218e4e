// Flat config: typescript-eslint's recommended rules on top of ESLint's, plus the type-aware rules
// that catch promises nobody waits for — what matters in an async server.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
    {ignores: ["dist/**", "node_modules/**", "models/**", "coverage/**", ".tmp/**", ".specgate/**", "native/build/**", ".device/**"]},
    js.configs.recommended,
    ...tseslint.configs.recommended,
    {
        // Type-aware rules read the types of tsconfig.json's program (src, bench, test).
        files: ["**/*.ts"],
        ignores: ["examples/**"],
        languageOptions: {parserOptions: {projectService: true, tsconfigRootDir: import.meta.dirname}},
        rules: {
            "@typescript-eslint/no-floating-promises": "error",
            "@typescript-eslint/no-misused-promises": "error",
            "@typescript-eslint/await-thenable": "error",
            "@typescript-eslint/return-await": ["error", "error-handling-correctness-only"],
            "@typescript-eslint/only-throw-error": "error",
            // Passing on an AbortSignal's reason or a caught error is how a rejection should travel.
            "@typescript-eslint/prefer-promise-reject-errors": ["error", {allowThrowingAny: true, allowThrowingUnknown: true}]
        }
    },
    {
        // Plain Node scripts (TypeScript files get Node's globals from @types/node).
        files: ["scripts/**/*.mjs", "eslint.config.js"],
        languageOptions: {globals: {console: "readonly", process: "readonly", URL: "readonly"}}
    },
    {
        // A CLI command is parse (flags → typed options), run (the library call, no output) and render (text/JSON),
        // each a short function: no action, runner or option list grows back into one long one.
        files: ["src/cli/**/*.ts"],
        ignores: ["src/cli/**/*.test.ts"],
        rules: {"max-lines-per-function": ["error", {max: 60, skipBlankLines: true, skipComments: true}]}
    },
    {
        rules: {
            "@typescript-eslint/no-unused-vars": ["error", {argsIgnorePattern: "^_", varsIgnorePattern: "^_"}],
            "prefer-const": "error",
            eqeqeq: ["error", "always", {null: "ignore"}]
        }
    }
);
