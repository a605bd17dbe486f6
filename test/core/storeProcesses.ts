/**
 * "Processes" over one store, in one test process: stores over one memory
 * backend, or over one SQLite file, each with its own owner (as two
 * processes over one database are).
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { SessionStore } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Context, type Duration, Effect, Layer, Option, type Scope, TestClock } from "effect"
import { processes } from "./utils.js"

type Store = SessionStore.Service

/** Makes the store of one more "process". */
export type Processes = Effect.Effect<() => Effect.Effect<Store, unknown, Scope.Scope>, unknown, Scope.Scope>

export const memoryProcesses: Processes = Effect.map(processes, ({ make }) => () => Effect.sync(make))

export const sqliteProcesses: Processes = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "sessionflow-processes-" })
  const filename = `${dir}/runs.db`
  return () =>
    Effect.map(
      Layer.build(SqliteSessionStore.layer({ filename })),
      (context) => Context.get(context, SessionStore.SessionStore)
    )
}).pipe(Effect.provide(NodeFileSystem.layer))

/** Lets forked fibers (supervisors, the runs they resume or wake) run. */
export const flush = Effect.repeatN(Effect.yieldNow(), 200)

/** The run's record once it has one, moving the test clock by `step` between looks (at most `times`). */
export const recorded = (store: Store, runId: string, step: Duration.DurationInput, times = 50) =>
  Effect.gen(function*() {
    for (let i = 0; i < times; i++) {
      yield* flush
      const found = yield* store.getRun(runId)
      if (Option.isSome(found) && found.value._tag === "Recorded") return found.value.record
      yield* TestClock.adjust(step)
    }
    return yield* Effect.dieMessage(`run ${runId} was never recorded`)
  })
