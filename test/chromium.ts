/**
 * The browser the `*.browser.test.ts` files drive: a Chromium installed on the
 * machine (Debian's `chromium` package, or the executable named by
 * `SESSIONFLOW_CHROMIUM`), never one downloaded by a test tool, driven by
 * playwright-core. Without one these tests are skipped, with one line saying
 * so and how to enable them.
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { chromium } from "playwright-core"

const candidates = [process.env.SESSIONFLOW_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]

/** The Chromium executable, when the machine has one. */
const chromiumPath: string | undefined = candidates.find((file): file is string =>
  file !== undefined && file !== "" && fs.existsSync(file)
)

/** The flags a headless Chromium needs on a machine with no outside network. */
const flags: Array<string> = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]

/**
 * `describe` for tests that need Chromium: skipped, with one line on the
 * console, when there is none.
 */
export const describeBrowser = (name: string, body: () => void): void => {
  if (chromiumPath === undefined) {
    console.warn(
      `${name}: skipped, no Chromium found (apt-get install chromium, or set SESSIONFLOW_CHROMIUM to its executable)`
    )
  }
  describe.skipIf(chromiumPath === undefined)(name, body)
}

/**
 * A headless Chromium on a fresh profile (its page and context), closed and
 * the profile removed with the scope.
 */
export const launch = (options: { readonly viewport?: { readonly width: number; readonly height: number } } = {}) =>
  Effect.gen(function*() {
    if (chromiumPath === undefined) return yield* Effect.dieMessage("no Chromium (see test/chromium.ts)")
    const executablePath = chromiumPath
    const profile = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-chromium-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const context = yield* Effect.acquireRelease(
      Effect.promise(() =>
        // playwright passes the fresh profile as --user-data-dir
        chromium.launchPersistentContext(profile, {
          executablePath,
          headless: true,
          args: flags,
          ...(options.viewport === undefined ? {} : { viewport: { ...options.viewport } })
        })
      ),
      (context) => Effect.promise(() => context.close())
    )
    const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
    return { context, page }
  })

/**
 * Waits until `check` (reads of the page through locators) is true, every
 * 50 ms, at most `timeout` ms. Unlike `page.waitForFunction`, whose polling
 * evaluates its predicate with the page's own `eval`, which the server's
 * Content-Security-Policy (no 'unsafe-eval') refuses once the first check is
 * false, each read comes from outside the page.
 */
export const waitUntil = async (check: () => Promise<boolean>, timeout = 30_000): Promise<void> => {
  const end = Date.now() + timeout
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`the page did not get there within ${timeout} ms: ${check.toString()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
