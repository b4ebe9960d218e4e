// Flat config: typescript-eslint's recommended rules on top of ESLint's.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
    {ignores: ["dist/**", "node_modules/**", "models/**", "coverage/**", ".tmp/**", ".specgate/**", "native/build/**", ".device/**"]},
    js.configs.recommended,
    ...tseslint.configs.recommended,
    {
        // Plain Node scripts (TypeScript files get Node's globals from @types/node).
        files: ["scripts/**/*.mjs", "eslint.config.js"],
        languageOptions: {globals: {console: "readonly", process: "readonly", URL: "readonly"}}
    },
    {
        rules: {
            "@typescript-eslint/no-unused-vars": ["error", {argsIgnorePattern: "^_", varsIgnorePattern: "^_"}],
            "prefer-const": "error",
            eqeqeq: ["error", "always", {null: "ignore"}]
        }
    }
);
