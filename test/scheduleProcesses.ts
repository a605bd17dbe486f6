/**
 * Scheduled runs across real OS processes on one store (a SQLite file, or a
 * PostgreSQL schema): three processes run `Schedules.layer` with a schedule
 * of every second for a few seconds; each tick is run exactly once, by one of
 * them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schedules } from "@sessionflow/core"
import { Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { spawnFixture } from "./store-sqlite/processes.js"

export const scheduleProcessSuite = (name: string, location: Effect.Effect<string, unknown, Scope.Scope>) =>
  describe(`scheduled runs across OS processes (${name})`, () => {
    it.live(
      "three processes on a schedule of every second: each tick runs exactly once",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* location
          const dir = yield* Effect.acquireRelease(
            Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-schedules-"))),
            (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
          )
          const effects = path.join(dir, "effects.txt")
          const workers = yield* Effect.all([1, 2, 3].map(() => spawnFixture("scheduleWorker.ts", [store, effects])))
          yield* Effect.forEach(workers, (worker) => worker.ready)
          yield* Effect.sleep("4500 millis")
          yield* Effect.forEach(workers, (worker) => worker.kill)
          const ended = Date.now()
          const lines = fs.readFileSync(effects, "utf8").trim().split("\n")
          const runIds = lines.map((line) => line.split(" ")[0]!)
          // no tick ran twice
          assert.strictEqual(new Set(runIds).size, runIds.length, lines.join("\n"))
          const ticks = runIds.map((runId) => Date.parse(runId.slice(runId.indexOf("@") + 1))).sort((a, b) => a - b)
          for (const [i, runId] of runIds.entries()) {
            assert.strictEqual(
              runId,
              Schedules.runIdOf("ticker", "every-second", Date.parse(runId.slice(runId.indexOf("@") + 1))),
              `line ${i}`
            )
          }
          // every tick while they ran, each on a whole second (a tick may be missed only when all three were too slow)
          assert.isAtLeast(ticks.length, 3, lines.join("\n"))
          assert.isTrue(ticks.every((tick) => tick % 1000 === 0 && tick <= ended), lines.join("\n"))
          for (let i = 1; i < ticks.length; i++) assert.strictEqual(ticks[i]! - ticks[i - 1]!, 1000, lines.join("\n"))
        })),
      60_000
    )
  })
