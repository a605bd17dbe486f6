/**
 * How the SQL store keeps the changes of `persist: "changes"` commits, the
 * same on every database: in `<table>_changes`, the session's row taking only
 * the version and the sizes; the whole state moved there too (as a change that
 * sets it) once it is written with changes, and written again once the
 * changes outweigh it; loads and watchers fold them in; bad rows are typed
 * errors.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { SqlSessionStore } from "@sessionflow/store-sql"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { commitAppend, Items } from "../core/utils.js"
import { type Database, dialects, sessionRows } from "./dialects.js"

/** A store on a connection of its own (another process, for the test's client) and the test's client. */
const open = (db: Database) =>
  Effect.gen(function*() {
    const store = yield* Effect.map(Layer.build(db.layer()), Context.get(SessionStore.SessionStore))
    const sql = yield* Effect.map(Layer.build(db.client), Context.get(SqlClient.SqlClient))
    return { store, sql, changesTable: sql(db.table("sessionflow_sessions_changes")), ...sessionRows(sql, db.table) }
  })

/** The one change that sets the whole state, as the store writes it. */
const setsWhole = (state: unknown) => [{ op: "set", path: [], value: state }]

/** A commit with changes of `{ items }` at `version`: `item` appended (to the caller's `items` too, once committed). */
const append = (store: SessionStore.Service, sessionId: string, version: number, items: Array<string>, item: string) =>
  Effect.tap(commitAppend(store, sessionId, version, items, item), () => Effect.sync(() => items.push(item)))

const loaded = (store: SessionStore.Service, sessionId: string) =>
  Effect.map(store.load(sessionId), (session) => Option.getOrThrow(session).state)

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
    Step.make(
      "log",
      (input) => Log.update((s) => ({ counter: s.counter + 1, items: [...s.items, String(input.input)] }))
    )
  ]
})

/** appends each run's input to the session's items */
const itemsWorkflow = Workflow.make({
  name: "log",
  state: Items,
  persist: "changes",
  sessionState: { items: [] },
  steps: [Step.make("log", (input) => Items.update((s) => ({ items: [...s.items, String(input.input)] })))]
})

describe("SqlSessionStore.minPendingChanges", () => {
  it("is 65,536 characters, the same for every driver", () => {
    assert.strictEqual(SqlSessionStore.minPendingChanges, 65_536)
    assert.strictEqual(SqliteSessionStore.minPendingChanges, SqlSessionStore.minPendingChanges)
  })
})

for (const dialect of dialects) {
  describe(`SqlSessionStore on ${dialect.name}: commits with changes`, () => {
    it.scoped("keeps them beside the state, which it writes whole again once they outweigh it", () =>
      Effect.gen(function*() {
        const { keptChanges, rowOf, store } = yield* open(yield* dialect.fresh)
        yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
        assert.deepStrictEqual(yield* rowOf("s"), {
          state: "{\"items\":[]}",
          version: 1,
          state_size: 12,
          base_size: 12,
          changes_size: 0
        })

        const items: Array<string> = []
        const line = "y".repeat(20_000)
        for (let n = 1; n <= 3; n++) {
          yield* append(store, "s", n, items, `${n}${line}`)
          const row = yield* rowOf("s")
          // the state column is the one the session was created with; only the version moved
          assert.deepStrictEqual([row.state, row.version], ["{\"items\":[]}", n + 1])
          const kept = yield* keptChanges("s")
          assert.strictEqual(row.changes_size, kept.reduce((size, [, c]) => size + JSON.stringify(c).length, 0))
          assert.deepStrictEqual(kept.map(([version]) => version), Array.from({ length: n }, (_, i) => i + 2))
          assert.deepStrictEqual(yield* loaded(store, "s"), { items })
        }
        // the fourth takes the changes past 65,536 characters (and past the state): the whole state is
        // written instead, as the one change row, out of the session's row
        yield* append(store, "s", 4, items, `4${line}`)
        const [base] = yield* keptChanges("s")
        assert.deepStrictEqual(yield* keptChanges("s"), [[5, setsWhole({ items })]])
        const baseSize = JSON.stringify(base![1]).length
        assert.deepStrictEqual(yield* rowOf("s"), {
          state: "null",
          version: 5,
          state_size: 4,
          base_size: baseSize,
          changes_size: baseSize
        })
        // now the state outweighs the minimum: changes are kept until they outweigh it
        for (let n = 5; n <= 8; n++) yield* append(store, "s", n, items, `${n}`)
        assert.deepStrictEqual((yield* keptChanges("s")).map(([version]) => version), [5, 6, 7, 8, 9])
        assert.strictEqual((yield* rowOf("s")).state, "null")
        assert.deepStrictEqual(yield* loaded(store, "s"), { items })
        // a caller that has the version already is told so, and reads neither the state nor the changes
        const unchanged = Option.getOrThrow(yield* store.load("s", { knownVersion: 9 }))
        assert.deepStrictEqual([unchanged.unchanged, unchanged.state], [true, undefined])
        // a whole-state commit puts the state back in the row and drops the change rows
        yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 9, state: { items: ["whole"] } })
        assert.deepStrictEqual(yield* keptChanges("s"), [])
        assert.deepStrictEqual(yield* rowOf("s"), {
          state: "{\"items\":[\"whole\"]}",
          version: 10,
          state_size: 19,
          base_size: 19,
          changes_size: 0
        })
        assert.deepStrictEqual(yield* loaded(store, "s"), { items: ["whole"] })
      }))

    it.scoped("a large state in the session's row is moved out by the first commit with changes", () =>
      Effect.gen(function*() {
        const { keptChanges, rowOf, store } = yield* open(yield* dialect.fresh)
        const items = Array.from({ length: 5_000 }, (_, i) => `item-${String(i).padStart(15, "0")}`)
        yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items } })
        assert.isAbove((yield* rowOf("s")).state_size, 65_536)
        yield* append(store, "s", 1, items, "next")
        const row = yield* rowOf("s")
        assert.deepStrictEqual([row.state, row.state_size], ["null", 4])
        assert.deepStrictEqual(yield* keptChanges("s"), [[2, setsWhole({ items })]])
        yield* append(store, "s", 2, items, "after")
        assert.deepStrictEqual((yield* keptChanges("s")).map(([version]) => version), [2, 3])
        assert.deepStrictEqual(yield* loaded(store, "s"), { items })
      }))

    it.scoped("a whole-state commit drops the kept changes", () =>
      Effect.gen(function*() {
        const { keptChanges, rowOf, store } = yield* open(yield* dialect.fresh)
        yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
        yield* append(store, "s", 1, [], "a")
        yield* append(store, "s", 2, ["a"], "b")
        assert.strictEqual((yield* keptChanges("s")).length, 2)
        yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 3, state: { items: ["whole"] } })
        assert.deepStrictEqual(yield* keptChanges("s"), [])
        const row = yield* rowOf("s")
        assert.deepStrictEqual([row.state, row.version, row.changes_size], ["{\"items\":[\"whole\"]}", 4, 0])
        assert.deepStrictEqual(yield* loaded(store, "s"), { items: ["whole"] })
      }))

    it.scoped("changes that set the whole state (a run with nothing cached) are kept as the one change row", () =>
      Effect.gen(function*() {
        const { keptChanges, rowOf, store } = yield* open(yield* dialect.fresh)
        yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
        yield* append(store, "s", 1, [], "a")
        const whole = { items: ["a", "b"] }
        yield* store.commit({
          sessionId: "s",
          workflowName: "wf",
          expectedVersion: 2,
          state: whole,
          changes: [{ op: "set", path: [], value: whole }]
        })
        assert.deepStrictEqual(yield* keptChanges("s"), [[3, setsWhole(whole)]])
        const size = JSON.stringify(setsWhole(whole)).length
        assert.deepStrictEqual(yield* rowOf("s"), {
          state: "null",
          version: 3,
          state_size: 4,
          base_size: size,
          changes_size: size
        })
        assert.deepStrictEqual(yield* loaded(store, "s"), whole)
      }))

    it.scoped(
      "kept changes that are not JSON, or do not fit the state, are a StateDecodeError naming the session",
      () =>
        Effect.gen(function*() {
          const { changesTable, keptChanges, sql, store } = yield* open(yield* dialect.fresh)
          yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
          yield* store.commit({ sessionId: "other", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
          yield* append(store, "s", 1, [], "a")
          yield* append(store, "other", 1, [], "fine")
          yield* sql`UPDATE ${changesTable} SET changes = ${"[{not json"} WHERE session_id = 's'`
          const notJson = yield* Effect.flip(store.load("s"))
          assert.instanceOf(notJson, WorkflowError.StateDecodeError)
          assert.deepInclude(notJson, {
            sessionId: "s",
            reason: "corrupt",
            description: "the stored changes are not valid JSON"
          })

          const misfit = JSON.stringify([{ op: "append", path: ["items", "deeper", "still"], items: ["x"] }])
          yield* sql`UPDATE ${changesTable} SET changes = ${misfit} WHERE session_id = 's'`
          const notFitting = yield* Effect.flip(store.load("s"))
          assert.instanceOf(notFitting, WorkflowError.StateDecodeError)
          assert.deepInclude(notFitting, { sessionId: "s", reason: "corrupt" })
          assert.include(notFitting.description, "the stored changes do not fit the stored state")
          // the other session is fine; this one is still there to inspect, name or remove
          assert.deepStrictEqual(yield* loaded(store, "other"), { items: ["fine"] })
          // each edit of a kept change made a new version (2 + 2)
          assert.strictEqual(Option.getOrThrow(yield* store.info("s")).version, 4)
          assert.isTrue(yield* store.remove("s"))
          assert.deepStrictEqual(yield* keptChanges("s"), [])
          assert.strictEqual((yield* keptChanges("other")).length, 1)
        })
    )

    it.scoped("a raw edit of a kept change is a new version: a process that cached the session runs on the edit", () =>
      Effect.gen(function*() {
        const { changesTable, keptChanges, sql, store } = yield* open(yield* dialect.fresh)
        const runLog = (input: string) =>
          Workflow.run(logWorkflow, input, { sessionId: "edited" }).pipe(
            Effect.provideService(SessionStore.SessionStore, store)
          )
        yield* runLog("a")
        yield* runLog("b")
        assert.strictEqual((yield* keptChanges("edited")).length, 1)
        const fixed = JSON.stringify([{ op: "set", path: [], value: { counter: 100, items: ["fixed"] } }])
        yield* sql`UPDATE ${changesTable} SET changes = ${fixed} WHERE session_id = 'edited'`
        assert.strictEqual(Option.getOrThrow(yield* store.info("edited")).version, 3)
        assert.deepStrictEqual((yield* runLog("c")).state, { counter: 101, items: ["fixed", "c"] })
        assert.deepStrictEqual(yield* loaded(store, "edited"), { counter: 101, items: ["fixed", "c"] })
      }))

    it.scoped(
      "a workflow's runs commit their changes; another store (another process) loads the state and goes on",
      () =>
        Effect.gen(function*() {
          const db = yield* dialect.fresh
          const a = yield* open(db)
          const runOn = (store: SessionStore.Service, input: string) =>
            Workflow.run(logWorkflow, input, { sessionId: "log" }).pipe(
              Effect.provideService(SessionStore.SessionStore, store)
            )
          for (let n = 1; n <= 10; n++) yield* runOn(a.store, `a${n}`)
          // the first run created the session with its state; the second had nothing cached, so it set the
          // whole state (as a change row); the others committed their changes
          const kept = yield* a.keptChanges("log")
          assert.deepStrictEqual(kept.map(([version]) => version), [2, 3, 4, 5, 6, 7, 8, 9, 10])
          assert.deepStrictEqual(kept[0]![1], setsWhole({ counter: 2, items: ["a1", "a2"] }))
          assert.deepStrictEqual(kept[1]![1], [
            { op: "set", path: ["counter"], value: 3 },
            { op: "append", path: ["items"], items: ["a3"] }
          ])
          assert.strictEqual((yield* a.rowOf("log")).state, "null")

          const b = yield* open(db)
          const fromB = yield* runOn(b.store, "b1")
          const expected = [...Array.from({ length: 10 }, (_, i) => `a${i + 1}`), "b1"]
          assert.deepStrictEqual(fromB.state, { counter: 11, items: expected })
          // b had nothing cached: it set the whole state, which replaced the changes
          assert.deepStrictEqual(yield* b.keptChanges("log"), [[11, setsWhole({ counter: 11, items: expected })]])
          const next = yield* runOn(a.store, "a11")
          assert.deepStrictEqual(next.state, { counter: 12, items: [...expected, "a11"] })
          assert.deepStrictEqual(yield* loaded(b.store, "log"), next.state)
        })
    )

    it.live(
      "two processes running one session at once with retryOnConflict lose no item, across the whole-state writes",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const db = yield* dialect.fresh
          const a = yield* open(db)
          const b = yield* open(db)
          const line = "z".repeat(4_000)
          const perProcess = 20
          const runs = (store: SessionStore.Service, name: string) =>
            Effect.forEach(
              Array.from({ length: perProcess }, (_, i) => `${name}${i}:${line}`),
              (input) =>
                Workflow.run(itemsWorkflow, input, { sessionId: "log", retryOnConflict: true }).pipe(
                  Effect.provideService(SessionStore.SessionStore, store)
                ),
              { discard: true }
            )
          yield* Effect.all([runs(a.store, "a"), runs(b.store, "b")], { concurrency: "unbounded", discard: true })
          const state = (yield* loaded(a.store, "log")) as { items: ReadonlyArray<string> }
          assert.deepStrictEqual(yield* loaded(b.store, "log"), state)
          assert.strictEqual(state.items.length, 2 * perProcess)
          assert.strictEqual(new Set(state.items).size, 2 * perProcess)
          for (const name of ["a", "b"]) {
            // each process's items are all there, in the order it ran them
            const own = state.items.filter((item) => item.startsWith(name)).map((item) => item.split(":")[0])
            assert.deepStrictEqual(own, Array.from({ length: perProcess }, (_, i) => `${name}${i}`))
          }
          // what is stored is the state: the sizes agree with the state column and the change rows
          const row = yield* a.rowOf("log")
          const kept = yield* a.keptChanges("log")
          assert.strictEqual(row.version, 2 * perProcess)
          assert.strictEqual(row.state_size, row.state.length)
          assert.strictEqual(row.changes_size, kept.reduce((size, [, c]) => size + JSON.stringify(c).length, 0))
          const pending = row.changes_size - (row.base_size !== row.state_size ? row.base_size : 0)
          assert.isAtMost(pending, Math.max(row.base_size, SqlSessionStore.minPendingChanges))
        })),
      120_000
    )
  })
}
