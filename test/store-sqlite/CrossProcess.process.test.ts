import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Layer, Option } from "effect"
import { sampleName, sampleRuns, sampleState } from "./fixtures/samples.js"
import { lastJsonLine, spawnFixture, tempFile } from "./processes.js"

/** The store plus the raw client, opened in this process. */
const storeWithClient = (filename: string) =>
  SqliteSessionStore.layerStore().pipe(Layer.provideMerge(SqliteClient.layer({ filename })))

const perWorker = 50
const expectedItems = (worker: string) => Array.from({ length: perWorker }, (_, i) => `${worker}-${i}`)

/**
 * Two processes, started together on a fresh file (so they also race on the
 * migrations), each append 50 items to the same session's list.
 */
const appendFromTwoProcesses = (mode: "store" | "workflow" | "changes") =>
  Effect.gen(function*() {
    const filename = yield* tempFile
    const workers = yield* Effect.forEach(
      ["A", "B"],
      (name) => spawnFixture("appendWorker.ts", [filename, "shared", name, String(perWorker), mode])
    )
    yield* Effect.forEach(workers, (worker) => worker.ready, { concurrency: "unbounded", discard: true })
    yield* Effect.forEach(workers, (worker) => worker.start, { discard: true })
    const outputs = yield* Effect.forEach(workers, (worker) => worker.exit, { concurrency: "unbounded" })
    const results = outputs.map(lastJsonLine) as Array<{ worker: string; conflicts: number }>
    assert.deepStrictEqual(results.map((r) => r.worker), ["A", "B"])

    yield* Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const sql = yield* SqlClient.SqlClient
      const session = yield* store.load("shared")
      assert.isTrue(Option.isSome(session))
      const { state, version } = Option.getOrThrow(session)
      const items = (state as { items: ReadonlyArray<string> }).items
      assert.strictEqual(items.length, 2 * perWorker)
      assert.strictEqual(new Set(items).size, 2 * perWorker)
      // each worker's items are all there, in the order it appended them
      assert.deepStrictEqual(items.filter((item) => item.startsWith("A-")), expectedItems("A"))
      assert.deepStrictEqual(items.filter((item) => item.startsWith("B-")), expectedItems("B"))
      // one state change per append
      assert.strictEqual(version, 2 * perWorker)

      const [rows] = yield* sql<{ runs: number; completed: number; distinct_ids: number }>`
        SELECT COUNT(*) AS runs, SUM(status = 'completed') AS completed, COUNT(DISTINCT run_id) AS distinct_ids
        FROM sessionflow_sessions_runs WHERE session_id = 'shared'`
      assert.deepStrictEqual(rows, { runs: 2 * perWorker, completed: 2 * perWorker, distinct_ids: 2 * perWorker })
      // the run history holds one run per item, in the order the items were appended
      const runs = yield* store.runs("shared", {})
      assert.deepStrictEqual(runs.map((run) => run.input), [...items])
    }).pipe(Effect.provide(storeWithClient(filename)))
    return results
  })

describe("SqliteSessionStore across OS processes", () => {
  it.scopedLive("two processes appending to one session through the store lose nothing", () =>
    Effect.gen(function*() {
      const results = yield* appendFromTwoProcesses("store")
      yield* Effect.logDebug(`conflicts retried: ${results.map((r) => `${r.worker}=${r.conflicts}`).join(", ")}`)
    }), 180_000)

  it.scopedLive(
    "two processes running an appending workflow with retryOnConflict lose nothing",
    () => Effect.asVoid(appendFromTwoProcesses("workflow")),
    180_000
  )

  it.scopedLive(
    "two processes running it with persist: \"changes\" lose nothing either",
    () => Effect.asVoid(appendFromTwoProcesses("changes")),
    180_000
  )

  it.scopedLive("a session written by one process is read back by another", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const writer = yield* spawnFixture("sessionWorker.ts", [filename, "write", "persisted"])
      assert.include(yield* writer.exit, "written")

      const reader = yield* spawnFixture("sessionWorker.ts", [filename, "read", "persisted"])
      const read = lastJsonLine(yield* reader.exit) as { session: SessionStore.StoredSession; runs: unknown }
      const { createdAt, updatedAt, ...session } = read.session
      assert.deepStrictEqual(session, {
        sessionId: "persisted",
        workflowName: "trip",
        userId: "alice",
        name: sampleName,
        version: 2,
        state: sampleState
      })
      assert.isAtMost(createdAt, updatedAt)
      assert.deepStrictEqual(read.runs, sampleRuns("persisted"))

      // and this process sees the same
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        assert.deepStrictEqual(yield* store.load("persisted"), Option.some(read.session))
        assert.deepStrictEqual(yield* store.runs("persisted", {}), sampleRuns("persisted"))
        assert.deepStrictEqual((yield* store.list({ userId: "alice" })).sessions.map((s) => s.name), [sampleName])
      }).pipe(Effect.provide(SqliteSessionStore.layer({ filename })))
    }), 180_000)
})
