/**
 * The browser the `*.browser.test.ts` files drive: a Chromium installed on the
 * machine (Debian's `chromium` package, or the executable named by
 * `SESSIONFLOW_CHROMIUM`), never one downloaded by a test tool. Without one
 * these tests are skipped, with one line saying so and how to enable them.
 */
import { describe } from "@effect/vitest"
import * as fs from "node:fs"

const candidates = [process.env.SESSIONFLOW_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]

/** The Chromium executable, when the machine has one. */
export const chromiumPath: string | undefined = candidates.find((file): file is string =>
  file !== undefined && file !== "" && fs.existsSync(file)
)

/** The flags a headless Chromium needs on a machine with no outside network. */
export const chromiumFlags: ReadonlyArray<string> = [
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
