/**
 * The seeded chaos run (see `README.md` beside this file) on SQLite and on
 * PostgreSQL, bounded: a fixed seed, real worker processes, faults, then the
 * check of the history. Any violation fails the test, with the checker's
 * report (each violation's shortest history and the command that replays
 * it). Run it alone with
 *
 *   npx vitest run --mode slow test/chaos/Chaos.process.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { execTypeScript } from "../process.js"

const main = fileURLToPath(new URL("./main.ts", import.meta.url))

/** How long the faults and operations go on; settling and the check follow. */
const seconds = 75
const seed = 1

describe("the chaos run", () => {
  for (const store of ["sqlite", "pg"] as const) {
    it.live(
      `${store}: seed ${seed}, ${seconds} seconds of operations and faults, then no violation`,
      () =>
        Effect.gen(function*() {
          const result = yield* execTypeScript(main, [
            "--store",
            store,
            "--seed",
            String(seed),
            "--seconds",
            String(seconds)
          ])
          const summary = result.stdout.split("\n").filter((line) => line.startsWith("violations:")).join("\n")
          assert.strictEqual(
            result.code,
            0,
            `${summary}\n${result.stdout.slice(-30_000)}\n${result.stderr.slice(-5_000)}`
          )
        }),
      420_000
    )
  }
})
