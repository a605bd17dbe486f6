/**
 * How the SQLite store keeps the changes of `persist: "changes"` commits: in
 * `<table>_changes`, the state column left alone until the changes outweigh
 * the state (then the whole state is written and they are dropped); loads
 * fold them in; bad rows are typed errors.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { commitAppend } from "../core/utils.js"

const tempFile = Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-" })).pipe(
  Effect.map((dir) => `${dir}/sessions.db`),
  Effect.provide(NodeFileSystem.layer)
)

/** A store and the raw client, each on its own connection (another process, for the store). */
const open = (filename: string) =>
  Effect.gen(function*() {
    const store = yield* Effect.map(Layer.build(SqliteSessionStore.layer({ filename })), Context.get(SessionStore.SessionStore))
    const sql = yield* Effect.map(Layer.build(SqliteClient.layer({ filename })), Context.get(SqlClient.SqlClient))
    return { store, sql }
  })

interface Row {
  readonly state: string
  readonly version: number
  readonly state_size: number
  readonly base_size: number
  readonly changes_size: number
}

const rowOf = (sql: SqlClient.SqlClient, sessionId: string) =>
  Effect.map(
    sql<Row>`SELECT state, version, state_size, base_size, changes_size FROM sessionflow_sessions
      WHERE session_id = ${sessionId}`,
    (rows) => rows[0]!
  )

/** The one change that sets the whole state, as the store writes it. */
const setsWhole = (state: unknown) => [{ op: "set", path: [], value: state }]

const keptChanges = (sql: SqlClient.SqlClient, sessionId: string) =>
  Effect.map(
    sql<{ version: number; changes: string }>`SELECT version, changes FROM sessionflow_sessions_changes
      WHERE session_id = ${sessionId} ORDER BY version`,
    (rows) => rows.map((row) => [row.version, JSON.parse(row.changes)] as const)
  )

class Log extends SessionState.Tag("test/ChangesLog")<Log>()({
  counter: Schema.Number,
  items: Schema.Array(Schema.String)
}) {}

const logWorkflow = Workflow.make({
  name: "log",
  state: Log,
  persist: "changes",
  sessionState: { counter: 0, items: [] },
  steps: [
    Step.make("log", (input) =>
      Log.update((s) => ({ counter: s.counter + 1, items: [...s.items, String(input.input)] })))
  ]
})

describe("SqliteSessionStore: commits with changes", () => {
  it.scoped("keeps them beside the state, which it writes whole again once they outweigh it", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open(yield* tempFile)
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      const created = yield* rowOf(sql, "s")
      assert.deepStrictEqual(created, { state: "{\"items\":[]}", version: 1, state_size: 12, base_size: 12, changes_size: 0 })

      const items: Array<string> = []
      const line = "y".repeat(20_000)
      for (let n = 1; n <= 3; n++) {
        yield* commitAppend(store, "s", n, items, `${n}${line}`)
        items.push(`${n}${line}`)
        const row = yield* rowOf(sql, "s")
        // the state column is the one the session was created with; only the version moved
        assert.deepStrictEqual([row.state, row.version], ["{\"items\":[]}", n + 1])
        assert.strictEqual(row.changes_size, (yield* keptChanges(sql, "s")).reduce((size, [, c]) => size + JSON.stringify(c).length, 0))
        assert.deepStrictEqual((yield* keptChanges(sql, "s")).map(([version]) => version), Array.from({ length: n }, (_, i) => i + 2))
        assert.deepStrictEqual(Option.getOrThrow(yield* store.load("s")).state, { items })
      }
      // the fourth takes the changes past 65,536 characters (and past the state): the whole state is
      // written instead, as the one change row, out of the session's row
      yield* commitAppend(store, "s", 4, items, `4${line}`)
      items.push(`4${line}`)
      const compacted = yield* rowOf(sql, "s")
      const [base] = yield* keptChanges(sql, "s")
      assert.deepStrictEqual(yield* keptChanges(sql, "s"), [[5, setsWhole({ items })]])
      const baseSize = JSON.stringify(base![1]).length
      assert.deepStrictEqual(compacted, { state: "null", version: 5, state_size: 4, base_size: baseSize, changes_size: baseSize })
      // now the state outweighs the minimum: changes are kept until they outweigh it
      for (let n = 5; n <= 8; n++) {
        yield* commitAppend(store, "s", n, items, `${n}`)
        items.push(`${n}`)
      }
      assert.deepStrictEqual((yield* keptChanges(sql, "s")).map(([version]) => version), [5, 6, 7, 8, 9])
      assert.strictEqual((yield* rowOf(sql, "s")).state, "null")
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load("s")).state, { items })
      // a whole-state commit puts the state back in the row and drops the change rows
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 9, state: { items: ["whole"] } })
      assert.deepStrictEqual(yield* keptChanges(sql, "s"), [])
      assert.deepStrictEqual(yield* rowOf(sql, "s"), {
        state: "{\"items\":[\"whole\"]}",
        version: 10,
        state_size: 19,
        base_size: 19,
        changes_size: 0
      })
    }))

  it.scoped("a large state in the session's row is moved out by the first commit with changes", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open(yield* tempFile)
      const items = Array.from({ length: 5_000 }, (_, i) => `item-${String(i).padStart(15, "0")}`)
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items } })
      assert.isAbove((yield* rowOf(sql, "s")).state_size, 65_536)
      yield* commitAppend(store, "s", 1, items, "next")
      items.push("next")
      const row = yield* rowOf(sql, "s")
      assert.deepStrictEqual([row.state, row.state_size], ["null", 4])
      assert.deepStrictEqual(yield* keptChanges(sql, "s"), [[2, setsWhole({ items })]])
      yield* commitAppend(store, "s", 2, items, "after")
      items.push("after")
      assert.deepStrictEqual((yield* keptChanges(sql, "s")).map(([version]) => version), [2, 3])
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load("s")).state, { items })
    }))

  it.scoped("a whole-state commit drops the kept changes", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open(yield* tempFile)
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      yield* commitAppend(store, "s", 1, [], "a")
      assert.strictEqual((yield* keptChanges(sql, "s")).length, 1)
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 2, state: { items: ["whole"] } })
      assert.deepStrictEqual(yield* keptChanges(sql, "s"), [])
      const row = yield* rowOf(sql, "s")
      assert.deepStrictEqual([row.state, row.changes_size], ["{\"items\":[\"whole\"]}", 0])
    }))

  it.scoped("kept changes that are not JSON, or do not fit the state, are a StateDecodeError naming the session", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open(yield* tempFile)
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      yield* commitAppend(store, "s", 1, [], "a")
      yield* sql`UPDATE sessionflow_sessions_changes SET changes = ${"[{not json"} WHERE session_id = 's'`
      const notJson = yield* Effect.flip(store.load("s"))
      assert.instanceOf(notJson, WorkflowError.StateDecodeError)
      assert.deepInclude(notJson, { sessionId: "s", reason: "corrupt", description: "the stored changes are not valid JSON" })

      const misfit = JSON.stringify([{ op: "append", path: ["items", "deeper", "still"], items: ["x"] }])
      yield* sql`UPDATE sessionflow_sessions_changes SET changes = ${misfit} WHERE session_id = 's'`
      const notFitting = yield* Effect.flip(store.load("s"))
      assert.instanceOf(notFitting, WorkflowError.StateDecodeError)
      assert.include(notFitting.description, "the stored changes do not fit the stored state")
      // the session is still there to inspect, name or remove
      assert.strictEqual(Option.getOrThrow(yield* store.info("s")).version, 2)
      assert.isTrue(yield* store.remove("s"))
      assert.deepStrictEqual(yield* keptChanges(sql, "s"), [])
    }))

  it.scoped("a workflow's runs commit their changes; another store (another process) loads the state and goes on", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const a = yield* open(filename)
      const runOn = (store: SessionStore.Service, input: string) =>
        Workflow.run(logWorkflow, input, { sessionId: "log" }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      for (let n = 1; n <= 10; n++) yield* runOn(a.store, `a${n}`)
      // the first run created the session with its state; the second had nothing cached, so it set the
      // whole state (as a change row); the others committed their changes
      const kept = yield* keptChanges(a.sql, "log")
      assert.deepStrictEqual(kept.map(([version]) => version), [2, 3, 4, 5, 6, 7, 8, 9, 10])
      assert.deepStrictEqual(kept[0]![1], setsWhole({ counter: 2, items: ["a1", "a2"] }))
      assert.deepStrictEqual(kept[1]![1], [
        { op: "set", path: ["counter"], value: 3 },
        { op: "append", path: ["items"], items: ["a3"] }
      ])
      assert.strictEqual((yield* rowOf(a.sql, "log")).state, "null")

      const b = yield* open(filename)
      const fromB = yield* runOn(b.store, "b1")
      const expected = [...Array.from({ length: 10 }, (_, i) => `a${i + 1}`), "b1"]
      assert.deepStrictEqual(fromB.state, { counter: 11, items: expected })
      // b had nothing cached: it set the whole state, which replaced the changes
      assert.deepStrictEqual(yield* keptChanges(b.sql, "log"), [[11, setsWhole({ counter: 11, items: expected })]])
      const next = yield* runOn(a.store, "a11")
      assert.deepStrictEqual(next.state, { counter: 12, items: [...expected, "a11"] })
      assert.deepStrictEqual(Option.getOrThrow(yield* b.store.load("log")).state, next.state)
    }))
})
