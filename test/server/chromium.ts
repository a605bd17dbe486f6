/**
 * Debian's chromium for the browser tests, driven by playwright-core: a
 * headless persistent context on a fresh profile, closed (and the profile
 * removed) with the scope.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { chromium } from "playwright-core"

export const chromiumPath = "/usr/bin/chromium"

export const launch = Effect.gen(function*() {
  expect(fs.existsSync(chromiumPath), `${chromiumPath} (apt-get install chromium)`).toBe(true)
  const profile = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-chromium-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const context = yield* Effect.acquireRelease(
    Effect.promise(() =>
      chromium.launchPersistentContext(profile, {
        executablePath: chromiumPath,
        headless: true,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
      })
    ),
    (context) => Effect.promise(() => context.close())
  )
  const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
  return { context, page }
})
