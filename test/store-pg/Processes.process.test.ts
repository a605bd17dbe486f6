/**
 * Many app servers, one session: OS processes sharing one PostgreSQL schema.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Effect, Layer, Option } from "effect"
import { lastJsonLine, spawnFixture } from "../store-sqlite/processes.js"
import { clientLayer, freshSchema } from "./pg.js"

const workers = ["A", "B", "C", "D"]
const perWorker = 50

/** Four processes, started together on a fresh schema (so they also race on the migrations), each run 50 appends. */
const appendFromFourProcesses = (schema: string, mode: "workflow" | "once") =>
  Effect.gen(function*() {
    const spawned = yield* Effect.forEach(
      workers,
      (name) => spawnFixture("appendWorker.ts", [`pg:${schema}`, "shared", name, String(perWorker), mode])
    )
    yield* Effect.forEach(spawned, (worker) => worker.ready, { concurrency: "unbounded", discard: true })
    yield* Effect.forEach(spawned, (worker) => worker.start, { discard: true })
    const outputs = yield* Effect.forEach(spawned, (worker) => worker.exit, { concurrency: "unbounded" })
    return outputs.map(lastJsonLine) as Array<{ worker: string; conflicts: number; completed?: number }>
  })

/** What the database holds of the shared session, read in this process. */
const readBack = (schema: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const sql = yield* PgClient.PgClient
    const session = Option.getOrThrow(yield* store.load("shared"))
    const items = (session.state as { items: ReadonlyArray<string> }).items
    const [counts] = yield* sql<{ runs: string; completed: string; distinct_ids: string }>`
      SELECT COUNT(*) AS runs, COUNT(*) FILTER (WHERE status = 'completed') AS completed,
        COUNT(DISTINCT run_id) AS distinct_ids
      FROM ${sql(`${schema}.sessionflow_sessions_runs`)} WHERE session_id = 'shared'`
    const runs = yield* store.runs("shared", { status: "completed" })
    return {
      items,
      version: session.version,
      runs: Number(counts!.runs),
      completed: Number(counts!.completed),
      distinct: Number(counts!.distinct_ids),
      runInputs: runs.map((run) => run.input)
    }
  }).pipe(Effect.provide(PgSessionStore.layerStore({ schema }).pipe(Layer.provideMerge(clientLayer))))

describe("PgSessionStore across OS processes", () => {
  it.scopedLive(
    "4 processes × 50 runs on one session with retryOnConflict: 200 items, no duplicates, version 200",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        const results = yield* appendFromFourProcesses(schema, "workflow")
        assert.deepStrictEqual(results.map((r) => r.worker), workers)
        const read = yield* readBack(schema)
        const total = workers.length * perWorker
        assert.strictEqual(read.items.length, total)
        assert.strictEqual(new Set(read.items).size, total)
        for (const worker of workers) {
          // each worker's items are all there, in the order it appended them
          assert.deepStrictEqual(
            read.items.filter((item) => item.startsWith(`${worker}-`)),
            Array.from({ length: perWorker }, (_, i) => `${worker}-${i}`)
          )
        }
        // one state change per run: the version counts them
        assert.strictEqual(read.version, total)
        assert.deepStrictEqual([read.runs, read.completed, read.distinct], [total, total, total])
        // the history holds one run per item, in the order the items were appended
        assert.deepStrictEqual(read.runInputs, [...read.items])
      }),
    300_000
  )

  it.scopedLive(
    "without retryOnConflict, runs that lose the race fail with SessionConflict and the items equal the completed runs",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        const results = yield* appendFromFourProcesses(schema, "once")
        // every run either completed or failed with SessionConflict (a worker ends with an error on anything else)
        assert.isAbove(results.reduce((sum, r) => sum + r.conflicts, 0), 0, "four processes at once never conflicted")
        for (const result of results) assert.strictEqual(result.completed! + result.conflicts, perWorker)
        const completed = results.reduce((sum, r) => sum + r.completed!, 0)
        const read = yield* readBack(schema)
        assert.strictEqual(read.items.length, completed)
        assert.strictEqual(new Set(read.items).size, completed)
        assert.strictEqual(read.version, completed)
        assert.strictEqual(read.completed, completed)
        assert.deepStrictEqual(read.runInputs, [...read.items])
      }),
    300_000
  )

  it.scopedLive(
    "a session watched in one process follows the commits another process makes, through notifications",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        const count = 20
        yield* Effect.flatMap(
          SessionStore.SessionStore,
          (store) =>
            store.commit({ sessionId: "shared", workflowName: "append", expectedVersion: 0, state: { items: [] } })
        ).pipe(Effect.provide(PgSessionStore.layerStore({ schema }).pipe(Layer.provide(clientLayer))))
        // the watcher reads only when notified (and once an hour)
        const watcher = yield* spawnFixture("watchWorker.ts", [
          `pg:${schema}`,
          "shared",
          String(count + 1),
          "3600000 millis"
        ])
        yield* watcher.ready
        const writer = yield* spawnFixture("appendWorker.ts", [
          `pg:${schema}`,
          "shared",
          "W",
          String(count),
          "workflow"
        ])
        yield* writer.ready
        yield* writer.start
        yield* writer.exit
        const seen = (yield* watcher.exit).trim().split("\n").filter((line) => line.startsWith("{")).map((line) =>
          JSON.parse(line) as { version: number; state: { items: Array<string> }; runId: string | null }
        )
        const versions = seen.map((change) => change.version)
        assert.strictEqual(versions[0], 1)
        assert.isTrue(
          versions.every((v, i) => i === 0 || v > versions[i - 1]!),
          `not increasing: ${versions.join(", ")}`
        )
        const last = seen.at(-1)!
        assert.strictEqual(last.version, count + 1)
        assert.deepStrictEqual(last.state.items, Array.from({ length: count }, (_, i) => `W-${i}`))
        assert.isString(last.runId)
      }),
    120_000
  )
})
