// Flat config: typescript-eslint's recommended rules on top of ESLint's.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
    {ignores: ["dist/**", "node_modules/**", "models/**", "coverage/**"]},
    js.configs.recommended,
    ...tseslint.configs.recommended,
    {
        rules: {
            "@typescript-eslint/no-unused-vars": ["error", {argsIgnorePattern: "^_", varsIgnorePattern: "^_"}],
            "prefer-const": "error",
            "eqeqeq": ["error", "always", {null: "ignore"}]
        }
    }
);
