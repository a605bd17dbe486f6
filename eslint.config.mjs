// The lint gate (`npm run lint`, `npm run format` to fix): eslint's and typescript-eslint's
// recommended rules and dprint's formatting at 120 columns, as the Effect 3 monorepo runs them.
// No type information (no parserOptions.project): each file is linted on its own, which is fast.
import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import { defineConfig } from "eslint/config"
import tseslint from "typescript-eslint"

export default defineConfig(
  {
    ignores: ["**/node_modules/", "**/dist/", "**/build/", "tmp/", "packs/", "bench/results*", "**/*.md"]
  },
  {
    files: ["**/*.{ts,mts,cts,js,mjs,cjs}"]
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  effectEslint.configs.dprint,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module"
    },
    linterOptions: {
      reportUnusedDisableDirectives: "error"
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      "sort-imports": "off",
      "no-unused-vars": "off",
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "@typescript-eslint/array-type": ["warn", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@typescript-eslint/no-wrapper-object-types": "off",
      "@typescript-eslint/consistent-type-imports": ["warn", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/no-array-constructor": "off",
      "@typescript-eslint/no-use-before-define": "off",
      "@typescript-eslint/no-namespace": "off",
      // the Effect monorepo's dprint settings
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      // dprint wraps code but not comments or strings
      "max-len": ["error", { code: 120, tabWidth: 2, ignoreUrls: true }]
    }
  },
  {
    // type tests declare values for their `typeof` alone (tsc's noUnusedLocals still reports unused ones)
    files: ["test/**/*types.test.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": "off"
    }
  },
  {
    // plain JavaScript run by Node (scripts, bins, workers)
    files: ["**/*.{js,mjs,cjs}"],
    languageOptions: {
      globals: {
        console: "readonly",
        process: "readonly",
        URL: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly"
      }
    }
  }
)
