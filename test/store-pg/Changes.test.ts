/**
 * How the PostgreSQL store keeps the changes of `persist: "changes"` commits:
 * in `<table>_changes`, the state column left alone until the changes
 * outweigh the state (then the whole state is written and they are dropped);
 * loads and watchers fold them in; bad rows are typed errors; a database at
 * the previous migration migrates.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore, Step, StoreRows, Workflow, WorkflowError } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Context, Effect, Layer, Option } from "effect"
import { commitAppend, Items } from "../core/utils.js"
import { clientLayer, freshSchema, notifiedWatcher, testUrl, withClient } from "./pg.js"

/** A store on a pool of its own (as an app server) in `schema`. */
const openStore = (schema: string) =>
  Effect.map(Layer.build(PgSessionStore.layer({ url: testUrl, schema })), Context.get(SessionStore.SessionStore))

/** A fresh schema, a store in it, and the test's own client for assertions in SQL. */
const open = Effect.gen(function*() {
  const schema = yield* freshSchema
  const store = yield* openStore(schema)
  const sql = yield* Effect.map(Layer.build(clientLayer), Context.get(PgClient.PgClient))
  return { schema, store, sql }
})

interface Row {
  readonly state: string
  readonly version: number
  readonly state_size: number
  readonly changes_size: number
}

const rowOf = (sql: PgClient.PgClient, schema: string, sessionId: string) =>
  Effect.map(
    sql<{ state: string; version: number; state_size: string; changes_size: string }>`
      SELECT state, version, state_size, changes_size FROM ${sql(`${schema}.sessionflow_sessions`)}
      WHERE session_id = ${sessionId}`,
    (rows): Row => ({ ...rows[0]!, state_size: Number(rows[0]!.state_size), changes_size: Number(rows[0]!.changes_size) })
  )

const keptChanges = (sql: PgClient.PgClient, schema: string, sessionId: string) =>
  Effect.map(
    sql<{ version: number; changes: string }>`SELECT version, changes FROM ${sql(`${schema}.sessionflow_sessions_changes`)}
      WHERE session_id = ${sessionId} ORDER BY version`,
    (rows) => rows.map((row) => [row.version, JSON.parse(row.changes)] as const)
  )

/** A commit with changes of `{ items }` at `version`: `item` appended (to the caller's `items` too, once committed). */
const append = (store: SessionStore.Service, sessionId: string, version: number, items: Array<string>, item: string) =>
  Effect.tap(commitAppend(store, sessionId, version, items, item), () => Effect.sync(() => items.push(item)))

const loaded = (store: SessionStore.Service, sessionId: string) =>
  Effect.map(store.load(sessionId), (session) => Option.getOrThrow(session).state)

/** appends each run's input to the session's items, committing only its changes once the state is cached */
const logWorkflow = Workflow.make({
  name: "log",
  state: Items,
  persist: "changes",
  sessionState: { items: [] },
  steps: [Step.make("log", (input) => Items.update((s) => ({ items: [...s.items, String(input.input)] })))]
})

const runOn = (store: SessionStore.Service, input: string, options: { readonly retryOnConflict?: boolean } = {}) =>
  Workflow.run(logWorkflow, input, { sessionId: "log", ...options }).pipe(Effect.provideService(SessionStore.SessionStore, store))

describe("PgSessionStore: commits with changes", () => {
  it("shares the threshold with the SQLite store", () => {
    assert.strictEqual(StoreRows.minPendingChanges, 65_536)
    assert.strictEqual(SqliteSessionStore.minPendingChanges, StoreRows.minPendingChanges)
    assert.isFalse(StoreRows.changesOutweighState(100_000, 100_000))
    assert.isTrue(StoreRows.changesOutweighState(100_000, 100_001))
    assert.isFalse(StoreRows.changesOutweighState(10, 65_536))
    assert.isTrue(StoreRows.changesOutweighState(10, 65_537))
  })

  it.scoped("keeps them beside the state, which it writes whole again once they outweigh it", () =>
    Effect.gen(function*() {
      const { schema, sql, store } = yield* open
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      assert.deepStrictEqual(yield* rowOf(sql, schema, "s"), { state: "{\"items\":[]}", version: 1, state_size: 12, changes_size: 0 })

      const items: Array<string> = []
      const line = "y".repeat(20_000)
      for (let n = 1; n <= 3; n++) {
        yield* append(store, "s", n, items, `${n}${line}`)
        const row = yield* rowOf(sql, schema, "s")
        // the state column is the one the session was created with; only the version moved
        assert.deepStrictEqual([row.state, row.version], ["{\"items\":[]}", n + 1])
        const kept = yield* keptChanges(sql, schema, "s")
        assert.strictEqual(row.changes_size, kept.reduce((size, [, c]) => size + JSON.stringify(c).length, 0))
        assert.deepStrictEqual(kept.map(([version]) => version), Array.from({ length: n }, (_, i) => i + 2))
        assert.deepStrictEqual(yield* loaded(store, "s"), { items })
      }
      // the fourth takes the changes past 65,536 characters (and past the state): the whole state is written
      yield* append(store, "s", 4, items, `4${line}`)
      const compacted = yield* rowOf(sql, schema, "s")
      assert.deepStrictEqual(JSON.parse(compacted.state), { items })
      assert.deepStrictEqual([compacted.version, compacted.state_size, compacted.changes_size], [5, compacted.state.length, 0])
      assert.deepStrictEqual(yield* keptChanges(sql, schema, "s"), [])
      assert.deepStrictEqual(yield* loaded(store, "s"), { items })
      // now the state outweighs the minimum: changes are kept until they outweigh it
      for (let n = 5; n <= 8; n++) {
        yield* append(store, "s", n, items, `${n}`)
      }
      assert.deepStrictEqual((yield* keptChanges(sql, schema, "s")).map(([version]) => version), [6, 7, 8, 9])
      assert.strictEqual((yield* rowOf(sql, schema, "s")).state, compacted.state)
      assert.deepStrictEqual(yield* loaded(store, "s"), { items })
      // a caller that has the version already is told so, and reads neither the state nor the changes
      const unchanged = Option.getOrThrow(yield* store.load("s", { knownVersion: 9 }))
      assert.deepStrictEqual([unchanged.unchanged, unchanged.state], [true, undefined])
    }))

  it.scoped("a commit with changes is one statement: the version, the kept changes, the record and the notification", () =>
    Effect.gen(function*() {
      const { schema, sql, store } = yield* open
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      // every row written notes the statement that wrote it
      yield* sql.unsafe(`CREATE TABLE ${schema}.written (what TEXT, at TIMESTAMPTZ)`)
      yield* sql.unsafe(`CREATE FUNCTION ${schema}.note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ${schema}.written VALUES (TG_TABLE_NAME, statement_timestamp()); RETURN NEW; END $$`)
      for (const table of ["sessionflow_sessions", "sessionflow_sessions_runs", "sessionflow_sessions_changes"]) {
        yield* sql.unsafe(`CREATE TRIGGER note AFTER INSERT OR UPDATE ON ${schema}.${table}
FOR EACH ROW EXECUTE FUNCTION ${schema}.note()`)
      }
      const notes = Effect.flatMap(
        sql<{ what: string; at: Date }>`SELECT what, at FROM ${sql(`${schema}.written`)} ORDER BY what`,
        (rows) => Effect.as(sql`DELETE FROM ${sql(`${schema}.written`)}`, rows)
      )
      const version = yield* store.commit({
        sessionId: "s",
        workflowName: "wf",
        expectedVersion: 1,
        state: { items: ["a"] },
        changes: [{ op: "append", path: ["items"], items: ["a"] }],
        run: {
          runId: "r2",
          sessionId: "s",
          workflowName: "wf",
          status: "completed",
          input: "a",
          content: "done",
          startedAt: 1,
          completedAt: 2
        }
      })
      assert.strictEqual(version, 2)
      const one = yield* notes
      assert.deepStrictEqual(one.map((r) => r.what), ["sessionflow_sessions", "sessionflow_sessions_changes", "sessionflow_sessions_runs"])
      assert.strictEqual(new Set(one.map((r) => r.at.getTime())).size, 1)
      // the commit that outweighs the state is a transaction of more statements: the whole state is its second write
      yield* append(store, "s", 2, ["a"], "b".repeat(70_000))
      const compaction = yield* notes
      assert.deepStrictEqual(compaction.map((r) => r.what), ["sessionflow_sessions", "sessionflow_sessions"])
      assert.deepStrictEqual(yield* keptChanges(sql, schema, "s"), [])
      assert.deepStrictEqual(yield* loaded(store, "s"), { items: ["a", "b".repeat(70_000)] })
      // a stale one writes nothing
      const stale = yield* Effect.flip(append(store, "s", 2, ["a"], "c"))
      assert.strictEqual(stale._tag, "SessionConflict")
      assert.deepStrictEqual(yield* notes, [])
    }))

  it.scoped("a whole-state commit drops the kept changes", () =>
    Effect.gen(function*() {
      const { schema, sql, store } = yield* open
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      yield* append(store, "s", 1, [], "a")
      yield* append(store, "s", 2, ["a"], "b")
      assert.strictEqual((yield* keptChanges(sql, schema, "s")).length, 2)
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 3, state: { items: ["whole"] } })
      assert.deepStrictEqual(yield* keptChanges(sql, schema, "s"), [])
      const row = yield* rowOf(sql, schema, "s")
      assert.deepStrictEqual(row, { state: "{\"items\":[\"whole\"]}", version: 4, state_size: 19, changes_size: 0 })
      assert.deepStrictEqual(yield* loaded(store, "s"), { items: ["whole"] })
    }))

  it.scoped("changes that set the whole state (a run with nothing cached) are written as the state", () =>
    Effect.gen(function*() {
      const { schema, sql, store } = yield* open
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
      assert.deepStrictEqual(yield* keptChanges(sql, schema, "s"), [])
      const row = yield* rowOf(sql, schema, "s")
      assert.deepStrictEqual(row, { state: JSON.stringify(whole), version: 3, state_size: 19, changes_size: 0 })
      assert.deepStrictEqual(yield* loaded(store, "s"), whole)
    }))

  it.scoped("kept changes that are not JSON, or do not fit the state, are a StateDecodeError naming the session", () =>
    Effect.gen(function*() {
      const { schema, sql, store } = yield* open
      const changesTable = sql(`${schema}.sessionflow_sessions_changes`)
      yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      yield* store.commit({ sessionId: "other", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      yield* append(store, "s", 1, [], "a")
      yield* append(store, "other", 1, [], "fine")
      yield* sql`UPDATE ${changesTable} SET changes = ${"[{not json"} WHERE session_id = 's'`
      const notJson = yield* Effect.flip(store.load("s"))
      assert.instanceOf(notJson, WorkflowError.StateDecodeError)
      assert.deepInclude(notJson, { sessionId: "s", reason: "corrupt", description: "the stored changes are not valid JSON" })

      const misfit = JSON.stringify([{ op: "append", path: ["items", "deeper", "still"], items: ["x"] }])
      yield* sql`UPDATE ${changesTable} SET changes = ${misfit} WHERE session_id = 's'`
      const notFitting = yield* Effect.flip(store.load("s"))
      assert.instanceOf(notFitting, WorkflowError.StateDecodeError)
      assert.deepInclude(notFitting, { sessionId: "s", reason: "corrupt" })
      assert.include(notFitting.description, "the stored changes do not fit the stored state")
      // the other session is fine; this one is still there to inspect, name or remove
      assert.deepStrictEqual(yield* loaded(store, "other"), { items: ["fine"] })
      assert.strictEqual(Option.getOrThrow(yield* store.info("s")).version, 2)
      assert.isTrue(yield* store.remove("s"))
      assert.deepStrictEqual(yield* keptChanges(sql, schema, "s"), [])
      assert.strictEqual((yield* keptChanges(sql, schema, "other")).length, 1)
    }))

  it.live("a watcher is notified of commits with changes (and of the one that writes the whole state)", () =>
    Effect.scoped(Effect.gen(function*() {
      const schema = yield* freshSchema
      const [watching, writing] = [yield* openStore(schema), yield* openStore(schema)]
      yield* writing.commit({ sessionId: "w", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
      const take = yield* notifiedWatcher(watching, "w")
      assert.strictEqual((yield* take).version, 1)
      const items: Array<string> = []
      for (const item of ["a", "b", "c".repeat(70_000), "d"]) {
        // the watcher listens once its first read is done; commits are notified from then on
        yield* Effect.sleep("200 millis")
        yield* append(writing, "w", items.length + 1, items, item)
        const change = yield* take
        assert.deepStrictEqual([change.version, change.state], [items.length + 1, { items }])
      }
    })), 60_000)

  it.scoped("a workflow's runs commit their changes; another store (another server) loads the state and goes on", () =>
    Effect.gen(function*() {
      const { schema, sql, store: a } = yield* open
      for (let n = 1; n <= 10; n++) yield* runOn(a, `a${n}`)
      // the first two runs wrote whole states (a new session, then nothing cached); the others their changes
      const kept = yield* keptChanges(sql, schema, "log")
      assert.deepStrictEqual(kept.map(([version]) => version), [3, 4, 5, 6, 7, 8, 9, 10])
      assert.deepStrictEqual(kept.map(([, changes]) => changes), Array.from({ length: 8 }, (_, i) => [
        { op: "append", path: ["items"], items: [`a${i + 3}`] }
      ]))
      assert.deepStrictEqual(JSON.parse((yield* rowOf(sql, schema, "log")).state), { items: ["a1", "a2"] })

      const b = yield* openStore(schema)
      const fromB = yield* runOn(b, "b1")
      const expected = [...Array.from({ length: 10 }, (_, i) => `a${i + 1}`), "b1"]
      assert.deepStrictEqual(fromB.state, { items: expected })
      // b had nothing cached: it wrote the whole state, which replaced the changes
      assert.deepStrictEqual(yield* keptChanges(sql, schema, "log"), [])
      const next = yield* runOn(a, "a11")
      assert.deepStrictEqual(next.state, { items: [...expected, "a11"] })
      assert.deepStrictEqual(yield* loaded(b, "log"), next.state)
    }))

  it.live("two servers running one session at once with retryOnConflict lose no item, across the whole-state writes", () =>
    Effect.scoped(Effect.gen(function*() {
      const { schema, sql, store: a } = yield* open
      const b = yield* openStore(schema)
      const line = "z".repeat(4_000)
      const perServer = 20
      const runs = (store: SessionStore.Service, name: string) =>
        Effect.forEach(
          Array.from({ length: perServer }, (_, i) => `${name}${i}:${line}`),
          (input) => runOn(store, input, { retryOnConflict: true }),
          { discard: true }
        )
      yield* Effect.all([runs(a, "a"), runs(b, "b")], { concurrency: "unbounded", discard: true })
      const state = (yield* loaded(a, "log")) as { items: ReadonlyArray<string> }
      assert.deepStrictEqual(yield* loaded(b, "log"), state)
      assert.strictEqual(state.items.length, 2 * perServer)
      assert.strictEqual(new Set(state.items).size, 2 * perServer)
      for (const name of ["a", "b"]) {
        // each server's items are all there, in the order it ran them
        const own = state.items.filter((item) => item.startsWith(name)).map((item) => item.split(":")[0])
        assert.deepStrictEqual(own, Array.from({ length: perServer }, (_, i) => `${name}${i}`))
      }
      // what is stored is the state: the whole state column and the changes kept after it
      const row = yield* rowOf(sql, schema, "log")
      const kept = yield* keptChanges(sql, schema, "log")
      assert.strictEqual(row.version, 2 * perServer)
      assert.strictEqual(row.changes_size, kept.reduce((size, [, c]) => size + JSON.stringify(c).length, 0))
      assert.isAtMost(row.changes_size, Math.max(row.state_size, StoreRows.minPendingChanges))
    })), 120_000)
})

describe("PgSessionStore: migration 4 (the changes table)", () => {
  it.scoped("tables at migration 3 migrate to 4 and keep their data; their sessions then keep changes", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const sessionsTable = `${schema}.sessionflow_sessions`
      // tables at migration 3, with a session and its run in them
      yield* Effect.gen(function*() {
        const store = yield* openStore(schema)
        yield* store.commit({
          sessionId: "old",
          workflowName: "wf",
          expectedVersion: 0,
          state: { items: ["x".repeat(100_000)] },
          run: {
            runId: "r1",
            sessionId: "old",
            workflowName: "wf",
            status: "completed",
            input: "go",
            content: "done",
            startedAt: 1,
            completedAt: 2
          }
        })
      }).pipe(Effect.scoped)
      yield* withClient((sql) =>
        Effect.gen(function*() {
          yield* sql`DROP TABLE ${sql(`${schema}.sessionflow_sessions_changes`)}`
          yield* sql`ALTER TABLE ${sql(sessionsTable)} DROP COLUMN state_size, DROP COLUMN changes_size`
          yield* sql`DELETE FROM ${sql(`${schema}.sessionflow_sessions_migrations`)} WHERE migration_id = 4`
        })
      )

      const behind = yield* Effect.flip(Effect.provide(Effect.void, PgSessionStore.layer({ url: testUrl, schema, migrate: false })))
      assert.include(behind.message, `the tables of 'sessionflow_sessions' in schema '${schema}' are at migration 3 of 4`)

      const { sql, store } = yield* Effect.gen(function*() {
        const store = yield* openStore(schema)
        const sql = yield* Effect.map(Layer.build(clientLayer), Context.get(PgClient.PgClient))
        return { store, sql }
      })
      const migrations = yield* sql<{ name: string }>`SELECT name FROM ${sql(`${schema}.sessionflow_sessions_migrations`)}
        ORDER BY migration_id`
      assert.deepStrictEqual(migrations.map((m) => m.name), ["create_sessions", "create_runs", "create_active", "create_changes"])
      // the data is there; the state's size is not known (0) until its next whole state
      const items = ["x".repeat(100_000)]
      assert.deepStrictEqual(yield* loaded(store, "old"), { items })
      assert.deepStrictEqual((yield* store.runs("old", {})).map((r) => r.runId), ["r1"])
      const before = yield* rowOf(sql, schema, "old")
      assert.deepStrictEqual([before.version, before.state_size, before.changes_size], [1, 0, 0])
      // its changes are kept, and written into the whole state once they pass the minimum
      yield* append(store, "old", 1, items, "a")
      assert.strictEqual((yield* keptChanges(sql, schema, "old")).length, 1)
      yield* append(store, "old", 2, items, "b".repeat(70_000))
      const compacted = yield* rowOf(sql, schema, "old")
      assert.deepStrictEqual(JSON.parse(compacted.state), { items })
      assert.deepStrictEqual([compacted.version, compacted.state_size, compacted.changes_size], [3, compacted.state.length, 0])
      assert.deepStrictEqual(yield* keptChanges(sql, schema, "old"), [])
      // from then on the state's own size counts: these are kept
      yield* append(store, "old", 3, items, "c".repeat(70_000))
      assert.strictEqual((yield* keptChanges(sql, schema, "old")).length, 1)
      assert.deepStrictEqual(yield* loaded(store, "old"), { items })
    }))
})
