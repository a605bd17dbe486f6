/**
 * Durability rules across real OS processes, on a SQLite file and a
 * PostgreSQL schema: a run paused by one process is not continued by another
 * whose workflow changed shape (`WorkflowChanged`, the run stays paused),
 * unless that workflow declares the change compatible; and the step after the
 * pause receives exactly the value the step before it produced in the first
 * process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { freshSchema } from "../store-pg/pg.js"
import { lastJsonLine, spawnFixture, tempFile } from "./processes.js"

const run = (store: string, mode: string, runId = "-") =>
  Effect.flatMap(
    spawnFixture("shapeWorker.ts", [store, mode, runId]),
    (worker) => Effect.map(worker.exit, lastJsonLine)
  )

const suite = (name: string, location: Effect.Effect<string, unknown, Scope.Scope>) =>
  describe(`durability rules across OS processes (${name})`, () => {
    it.live(
      "a run paused in one process is not continued in another by a changed " +
        "workflow; a compatible one continues it with the value the paused step produced",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* location
          const { runId } = (yield* run(store, "pause")) as { runId: string }
          const refused = (yield* run(store, "renamed", runId)) as { error: string; difference: string }
          assert.deepStrictEqual(refused, {
            error: "WorkflowChanged",
            difference: "step 5 was 's5 step', now 't5 step'"
          })
          const continued = yield* run(store, "compatible", runId)
          assert.deepStrictEqual(continued, { equal: true, items: ["s2", "s3", "t5", "s6"] })
        })),
      90_000
    )

    it.live(
      "the step after a pause receives in another process exactly what the step before it produced",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* location
          const { runId } = (yield* run(store, "pause")) as { runId: string }
          assert.deepStrictEqual(yield* run(store, "continue", runId), { equal: true, items: ["s2", "s3", "s5", "s6"] })
        })),
      90_000
    )
  })

suite("SQLite", tempFile)
suite("PostgreSQL", Effect.map(freshSchema, (schema) => `pg:${schema}`))
