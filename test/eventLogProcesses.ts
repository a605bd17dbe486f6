/**
 * A run's event log across real OS processes on one store (a SQLite file, or
 * a PostgreSQL schema): one process runs a workflow with its events stored,
 * another follows them with `Workflow.events` from before the run starts to
 * its end; it reads every event exactly once, in order.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { lastJsonLine, spawnFixture } from "./store-sqlite/processes.js"

const count = 200

export const eventLogProcessSuite = (name: string, store: Effect.Effect<string, unknown, Scope.Scope>) =>
  describe(`a run's events across OS processes (${name})`, () => {
    it.live(
      "one process runs, another follows its events from the start: every event once, in order",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const spec = yield* store
          // the store is created (migrated) once, before the two processes race for it
          const first = yield* spawnFixture("eventWorker.ts", [spec, "run", "warm-up", "1"])
          yield* first.ready
          yield* first.start
          yield* first.exit
          const reader = yield* spawnFixture("eventWorker.ts", [spec, "read", "logged"])
          const runner = yield* spawnFixture("eventWorker.ts", [spec, "run", "logged", String(count)])
          yield* Effect.all([reader.ready, runner.ready], { concurrency: "unbounded" })
          // the reader starts first: it waits for the run to be registered, then follows it
          yield* reader.start
          yield* runner.start
          const ran = lastJsonLine(yield* runner.exit) as { content: number }
          assert.strictEqual(ran.content, count)
          const { events } = lastJsonLine(yield* reader.exit) as { events: ReadonlyArray<readonly [number, string]> }
          assert.deepStrictEqual(events.map(([seq]) => seq), Array.from({ length: events.length }, (_, i) => i))
          assert.strictEqual(events.filter(([, tag]) => tag === "Log").length, count)
          assert.deepStrictEqual(events[0], [0, "RunStarted"])
          assert.deepStrictEqual(events.at(-1)?.[1], "RunCompleted")
        })),
      120_000
    )
  })
