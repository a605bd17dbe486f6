import { defaultClientConditions, defaultServerConditions } from "vite"
import { configDefaults, defineConfig } from "vitest/config"

/**
 * Tests run on the packages' sources: every @sessionflow package maps this
 * export condition to `src/*.ts` (what is published is `dist/`). Child
 * processes the tests spawn (node with tsx) get it through NODE_OPTIONS.
 */
const source = "@sessionflow/source"

/**
 * Two tiers. `npm test` runs the in-process tests (mode `fast`, the default);
 * the tests that start processes (`*.process.test.ts`), drive a browser
 * (`*.browser.test.ts`) or pack and install the packages (`test/packaging`)
 * run with `--mode slow` (`npm run test:slow`), and `--mode all` runs both
 * (`npm run test:all`).
 */
const slow = ["test/**/*.process.test.ts", "test/**/*.browser.test.ts", "test/packaging/**/*.test.ts"]

export default defineConfig(({ mode }) => ({
  resolve: { conditions: [source, ...defaultClientConditions] },
  // without "module": vitest passes these conditions on to Node, and the ESM build that
  // condition picks in @opentelemetry/api 1.9 imports its files without extensions
  ssr: { resolve: { conditions: [source, ...defaultServerConditions.filter((c) => c !== "module")] } },
  test: {
    include: mode === "slow" ? slow : ["test/**/*.test.ts"],
    exclude: mode === "slow" || mode === "all" ? configDefaults.exclude : [...configDefaults.exclude, ...slow],
    globalSetup: ["./test/globalSetup.ts"],
    setupFiles: ["./vitest.setup.ts"],
    env: { NODE_OPTIONS: [process.env.NODE_OPTIONS, `--conditions=${source}`].filter(Boolean).join(" ") },
    // the in-process tier's files share their workers' module cache (each still builds its own
    // layers and stores): a third of the time; the tier that starts processes keeps isolation
    isolate: mode === "slow" || mode === "all",
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
}))
