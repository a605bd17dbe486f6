/**
 * What is PostgreSQL's own in keeping the changes of `persist: "changes"`
 * commits (the design, the same on every database, is tested in
 * test/store-sql/Changes.test.ts): the usual commit with changes is one
 * statement, watchers are notified of it, and tables from before the one
 * design (migration 4) migrate to it.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Context, Effect, Layer, Option } from "effect"
import { commitAppend } from "../core/utils.js"
import { pg, sessionRows } from "../store-sql/dialects.js"
import { clientLayer, freshSchema, noteWrites, notifiedWatcher, testUrl, withClient } from "./pg.js"

/** A store on a pool of its own (as an app server) in `schema`. */
const openStore = (schema: string, history?: SessionStore.HistoryOptions) =>
  Effect.map(
    Layer.build(PgSessionStore.layer({ url: testUrl, schema, history })),
    Context.get(SessionStore.SessionStore)
  )

/** A fresh schema, a store in it, and the test's own client for assertions in SQL. */
const open = Effect.gen(function*() {
  const schema = yield* freshSchema
  const store = yield* openStore(schema)
  const sql = yield* Effect.map(Layer.build(clientLayer), Context.get(PgClient.PgClient))
  return { schema, store, sql }
})

const inSchema = (sql: PgClient.PgClient, schema: string) => sessionRows(sql, (name) => `${schema}.${name}`)
const rowOf = (sql: PgClient.PgClient, schema: string, sessionId: string) => inSchema(sql, schema).rowOf(sessionId)
const keptChanges = (sql: PgClient.PgClient, schema: string, sessionId: string) =>
  inSchema(sql, schema).keptChanges(sessionId)

/** A commit with changes of `{ items }` at `version`: `item` appended (to the caller's `items` too, once committed). */
const append = (store: SessionStore.Service, sessionId: string, version: number, items: Array<string>, item: string) =>
  Effect.tap(commitAppend(store, sessionId, version, items, item), () => Effect.sync(() => items.push(item)))

const loaded = (store: SessionStore.Service, sessionId: string) =>
  Effect.map(store.load(sessionId), (session) => Option.getOrThrow(session).state)

describe("PgSessionStore: commits with changes", () => {
  it.scoped(
    "a commit with changes is one statement: the version, the " +
      "kept changes, the kept version, the record and the notification",
    () =>
      Effect.gen(function*() {
        const { schema, sql, store } = yield* open
        yield* store.commit({ sessionId: "s", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
        // every row written notes the statement that wrote it
        const notes = yield* noteWrites(sql, schema, [
          "sessionflow_sessions",
          "sessionflow_sessions_runs",
          "sessionflow_sessions_changes",
          "sessionflow_sessions_versions"
        ])
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
        assert.deepStrictEqual(one.map((r) => r.what), [
          "sessionflow_sessions",
          "sessionflow_sessions_changes",
          "sessionflow_sessions_runs",
          "sessionflow_sessions_versions"
        ])
        assert.strictEqual(new Set(one.map((r) => r.at.getTime())).size, 1)
        // the commit that outweighs the state is a transaction of more statements: after the version, the
        // whole state is written as the one change row
        yield* append(store, "s", 2, ["a"], "b".repeat(70_000))
        const compaction = yield* notes
        // (the version is kept whole too: its changes outweigh the last whole state kept)
        assert.deepStrictEqual(compaction.map((r) => r.what), [
          "sessionflow_sessions",
          "sessionflow_sessions",
          "sessionflow_sessions_changes",
          "sessionflow_sessions_versions"
        ])
        assert.isAbove(new Set(compaction.map((r) => r.at.getTime())).size, 1)
        assert.deepStrictEqual(yield* keptChanges(sql, schema, "s"), [[3, [{
          op: "set",
          path: [],
          value: { items: ["a", "b".repeat(70_000)] }
        }]]])
        assert.deepStrictEqual(yield* loaded(store, "s"), { items: ["a", "b".repeat(70_000)] })
        // a stale one writes nothing
        const stale = yield* Effect.flip(append(store, "s", 2, ["a"], "c"))
        assert.strictEqual(stale._tag, "SessionConflict")
        assert.deepStrictEqual(yield* notes, [])
      })
  )

  it.live(
    "a watcher is notified of commits with changes (and of the one that writes the whole state)",
    () =>
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
      })),
    60_000
  )
})

/** Back before migration 6: without its triggers (and their functions), nor migration 7's indexes. */
const dropTriggers = (sql: PgClient.PgClient, schema: string) =>
  Effect.gen(function*() {
    for (const table of ["sessionflow_sessions", "sessionflow_sessions_runs", "sessionflow_sessions_active"]) {
      yield* sql`DROP INDEX ${sql(`${schema}.${table}_listing_idx`)}`
    }
    yield* sql`DROP FUNCTION ${sql(`${schema}.sessionflow_sessions_state_edited`)}() CASCADE`
    yield* sql`DROP FUNCTION ${sql(`${schema}.sessionflow_sessions_changes_edited`)}() CASCADE`
  })

describe("PgSessionStore: migrations 4 (the changes table) and 5 (one design of kept changes)", () => {
  const record = (runId: string): SessionStore.RunRecord => ({
    runId,
    sessionId: "old",
    workflowName: "wf",
    status: "completed",
    input: "go",
    content: "done",
    startedAt: 1,
    completedAt: 2
  })

  it.scoped("tables at migration 3 migrate to the latest and keep their data; their sessions then keep changes", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const sessionsTable = `${schema}.sessionflow_sessions`
      const items = ["x".repeat(100_000)]
      // tables at migration 3, with a session and its run in them
      yield* Effect.flatMap(
        openStore(schema),
        (store) =>
          store.commit({
            sessionId: "old",
            workflowName: "wf",
            expectedVersion: 0,
            state: { items },
            run: record("r1")
          })
      ).pipe(
        Effect.scoped
      )
      yield* withClient((sql) =>
        Effect.gen(function*() {
          yield* dropTriggers(sql, schema)
          yield* sql`DROP TABLE ${sql(`${schema}.sessionflow_sessions_changes`)}`
          yield* sql`DROP TABLE ${sql(`${schema}.sessionflow_sessions_events`)}`
          yield* sql`DROP TABLE ${sql(`${schema}.sessionflow_sessions_versions`)}`
          yield* sql`DROP TABLE ${sql(`${schema}.sessionflow_sessions_queue`)}`
          yield* sql`ALTER TABLE ${
            sql(sessionsTable)
          } DROP COLUMN state_size, DROP COLUMN changes_size, DROP COLUMN base_size`
          yield* sql`DELETE FROM ${sql(`${schema}.sessionflow_sessions_migrations`)} WHERE migration_id >= 4`
        })
      )

      const behind = yield* Effect.flip(
        Effect.provide(Effect.void, PgSessionStore.layer({ url: testUrl, schema, migrate: false }))
      )
      assert.include(
        behind.message,
        `the tables of 'sessionflow_sessions' in schema '${schema}' are at migration 3 of 16`
      )

      const store = yield* openStore(schema)
      const sql = yield* Effect.map(Layer.build(clientLayer), Context.get(PgClient.PgClient))
      const migrations = yield* sql<{ name: string }>`SELECT name FROM ${
        sql(`${schema}.sessionflow_sessions_migrations`)
      }
        ORDER BY migration_id`
      assert.deepStrictEqual(migrations.map((m) => m.name), pg.migrations)
      // the data is there; the state's size is not known (0) until its next whole state
      assert.deepStrictEqual(yield* loaded(store, "old"), { items })
      assert.deepStrictEqual((yield* store.runs("old", {})).map((r) => r.runId), ["r1"])
      assert.deepStrictEqual(yield* rowOf(sql, schema, "old"), {
        state: JSON.stringify({ items }),
        version: 1,
        state_size: 0,
        base_size: 0,
        changes_size: 0
      })
      // its changes are kept, and the whole state written (as the one change row) once they pass the minimum
      yield* append(store, "old", 1, items, "a")
      assert.strictEqual((yield* keptChanges(sql, schema, "old")).length, 1)
      yield* append(store, "old", 2, items, "b".repeat(70_000))
      const compacted = yield* rowOf(sql, schema, "old")
      assert.deepStrictEqual([compacted.state, compacted.version, compacted.state_size], ["null", 3, 4])
      assert.deepStrictEqual(yield* keptChanges(sql, schema, "old"), [[3, [{ op: "set", path: [], value: { items } }]]])
      // from then on the whole state's own size counts: these are kept
      yield* append(store, "old", 3, items, "c".repeat(70_000))
      assert.strictEqual((yield* keptChanges(sql, schema, "old")).length, 2)
      assert.deepStrictEqual(yield* loaded(store, "old"), { items })
    }))

  it.scoped(
    "tables at migration 4, whose sessions keep changes after " +
      "the state column, migrate to the latest and read the same",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        const sessionsTable = `${schema}.sessionflow_sessions`
        const items = ["first"]
        // a session as migration 4 kept it: the whole state in its column, the changes after it in rows
        yield* Effect.gen(function*() {
          const store = yield* openStore(schema)
          yield* store.commit({
            sessionId: "old",
            workflowName: "wf",
            expectedVersion: 0,
            state: { items },
            run: record("r1")
          })
          yield* append(store, "old", 1, items, "second")
        }).pipe(Effect.scoped)
        yield* withClient((sql) =>
          Effect.gen(function*() {
            yield* dropTriggers(sql, schema)
            yield* sql`ALTER TABLE ${sql(sessionsTable)} DROP COLUMN base_size`
            yield* sql`DROP TABLE ${sql(`${schema}.sessionflow_sessions_events`)}`
            yield* sql`DROP TABLE ${sql(`${schema}.sessionflow_sessions_versions`)}`
            yield* sql`DROP TABLE ${sql(`${schema}.sessionflow_sessions_queue`)}`
            yield* sql`DELETE FROM ${sql(`${schema}.sessionflow_sessions_migrations`)} WHERE migration_id >= 5`
          })
        )
        const store = yield* openStore(schema)
        const sql = yield* Effect.map(Layer.build(clientLayer), Context.get(PgClient.PgClient))
        const stateSize = JSON.stringify({ items: ["first"] }).length
        const row = yield* rowOf(sql, schema, "old")
        assert.deepStrictEqual([row.version, row.state_size, row.base_size], [2, stateSize, stateSize])
        assert.deepStrictEqual(yield* loaded(store, "old"), { items })
        // it goes on keeping changes, then writes the whole state once they outweigh it
        yield* append(store, "old", 2, items, "third")
        assert.strictEqual((yield* keptChanges(sql, schema, "old")).length, 2)
        yield* append(store, "old", 3, items, "d".repeat(70_000))
        assert.deepStrictEqual(yield* keptChanges(sql, schema, "old"), [[4, [{
          op: "set",
          path: [],
          value: { items }
        }]]])
        assert.deepStrictEqual(yield* loaded(store, "old"), { items })
      })
  )
})
