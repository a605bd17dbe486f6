import { defaultClientConditions, defaultServerConditions } from "vite"
import { defineConfig } from "vitest/config"

/**
 * Tests run on the packages' sources: every @sessionflow package maps this
 * export condition to `src/*.ts` (what is published is `dist/`). Child
 * processes the tests spawn (node with tsx) get it through NODE_OPTIONS.
 */
const source = "@sessionflow/source"

export default defineConfig({
  resolve: { conditions: [source, ...defaultClientConditions] },
  ssr: { resolve: { conditions: [source, ...defaultServerConditions] } },
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["./vitest.setup.ts"],
    env: { NODE_OPTIONS: [process.env.NODE_OPTIONS, `--conditions=${source}`].filter(Boolean).join(" ") },
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
