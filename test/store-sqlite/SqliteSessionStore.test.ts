import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { Migrator, SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Config, ConfigError, ConfigProvider, Context, Deferred, Effect, Fiber, Layer, Option, Stream } from "effect"
import { suite } from "../core/SessionStoreSuite.js"
import { run } from "../store-sql/dialects.js"

/** A fresh database file in a temp directory that is deleted afterwards. */
const tempFile = Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-" }))
  .pipe(
    Effect.map((dir) => `${dir}/sessions.db`),
    Effect.provide(NodeFileSystem.layer)
  )

const tempFileLayer = (table?: string) =>
  Layer.unwrapScoped(Effect.map(tempFile, (filename) => SqliteSessionStore.layer({ filename, table })))

/** The store plus the raw client, for assertions in SQL. */
const storeWithClient = (filename: string, table?: string) =>
  SqliteSessionStore.layerStore({ table }).pipe(Layer.provideMerge(SqliteClient.layer({ filename })))

const tables = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<
      { name: string }
    >`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
).pipe(Effect.map((rows) => rows.map((row) => row.name)))

/** The migrations recorded in the file, in order. */
const recordedMigrations = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<
      { migration_id: number; name: string }
    >`SELECT migration_id, name FROM sessionflow_sessions_migrations ORDER BY migration_id`
)

/** Two stores, each on its own connection to one fresh file (two processes). */
const twoStores = (open: (filename: string) => Layer.Layer<SessionStore.SessionStore, unknown>) =>
  Effect.gen(function*() {
    const filename = yield* tempFile
    const store = Effect.map(Layer.build(open(filename)), Context.get(SessionStore.SessionStore))
    return [yield* store, yield* store] as const
  })

suite("SqliteSessionStore.layer (temp file)", tempFileLayer(), {
  twoStores: twoStores((filename) => SqliteSessionStore.layer({ filename }))
})
suite("SqliteSessionStore.layer (:memory:)", SqliteSessionStore.layer({ filename: ":memory:" }), {
  keepingRuns: (keepRuns) => SqliteSessionStore.layer({ filename: ":memory:", keepRuns })
})
suite(
  "SqliteSessionStore.layer (synchronous FULL)",
  SqliteSessionStore.layer({ filename: ":memory:", synchronous: "FULL" })
)
suite(
  "SqliteSessionStore.layerStore (table workflow_session)",
  SqliteSessionStore.layerStore({ table: "workflow_session" }).pipe(
    Layer.provide(SqliteClient.layer({ filename: ":memory:" }))
  ),
  { twoStores: twoStores((filename) => storeWithClient(filename, "workflow_session")) }
)

describe("SqliteSessionStore", () => {
  it.effect("an invalid table name fails with a SessionStoreError that says why, and creates nothing", () =>
    Effect.gen(function*() {
      for (
        const table of [
          "bad-name",
          "x; DROP TABLE y",
          "1starts_with_digit",
          "",
          "sqlite_master",
          "a".repeat(49),
          "naïve"
        ]
      ) {
        const error = yield* Effect.flip(SqliteSessionStore.make({ table }))
        assert.instanceOf(error, WorkflowError.SessionStoreError)
        const storeError = error as WorkflowError.SessionStoreError
        assert.strictEqual(storeError.method, "make")
        assert.include(storeError.message, JSON.stringify(table))
        assert.include(storeError.message, "invalid table name")
      }
      assert.deepStrictEqual(yield* tables, [])
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))))

  it.scopedLive(
    "a store opened while another connection is still migrating the file waits for it to finish",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        const a = yield* Layer.build(SqliteClient.layer({ filename }))
        const b = yield* Layer.build(SqliteClient.layer({ filename }))
        // b never waits inside SQLite, so it meets the lock at once
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`PRAGMA busy_timeout = 0`).pipe(Effect.provide(b))
        // the migrations table exists (and b has seen it), the migrations have not run
        yield* Migrator.make({})({ loader: Migrator.fromRecord({}), table: "sessionflow_sessions_migrations" }).pipe(
          Effect.provide(a)
        )
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT COUNT(*) FROM sessionflow_sessions_migrations`)
          .pipe(
            Effect.provide(b)
          )
        // connection a migrates inside a transaction it keeps open
        const migrated = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const sqlA = Context.get(a, SqlClient.SqlClient)
        const holder = yield* Effect.fork(
          sqlA.withTransaction(Effect.gen(function*() {
            yield* SqliteSessionStore.make()
            yield* Deferred.succeed(migrated, undefined)
            yield* Deferred.await(release)
          })).pipe(Effect.provide(a))
        )
        yield* Deferred.await(migrated)

        const opening = yield* Effect.fork(SqliteSessionStore.make().pipe(Effect.provide(b)))
        yield* Effect.repeat(opening.status, { until: (status) => status._tag !== "Running" })
        // not done: it must not use tables that are not committed yet
        assert.strictEqual((yield* opening.status)._tag, "Suspended")

        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        const store = yield* Fiber.join(opening)
        assert.strictEqual(
          yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { ok: 1 } }),
          1
        )
        const migrations = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<
              { migration_id: number }
            >`SELECT migration_id FROM sessionflow_sessions_migrations ORDER BY migration_id`
        ).pipe(
          Effect.provide(b)
        )
        assert.deepStrictEqual(migrations, [
          { migration_id: 1 },
          { migration_id: 2 },
          { migration_id: 3 },
          { migration_id: 4 },
          { migration_id: 5 },
          { migration_id: 6 },
          { migration_id: 7 },
          { migration_id: 8 },
          { migration_id: 9 },
          { migration_id: 10 },
          { migration_id: 11 },
          { migration_id: 12 },
          { migration_id: 13 },
          { migration_id: 14 },
          { migration_id: 15 },
          { migration_id: 16 }
        ])
      }),
    60_000
  )

  it.scoped(
    "opens its file in WAL mode; a state stored as a BLOB is a " +
      "StateDecodeError naming the session, the others are unaffected",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const sql = yield* SqlClient.SqlClient
          const [mode] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
          assert.strictEqual(mode!.journal_mode, "wal")
          for (const id of ["good", "blob"]) {
            yield* store.commit({
              sessionId: id,
              workflowName: "wf",
              expectedVersion: 0,
              state: { id },
              run: run(id, `r-${id}`)
            })
          }
          yield* sql`UPDATE sessionflow_sessions SET state = ${new Uint8Array([
            0xff,
            0x00,
            0x7b
          ])} WHERE session_id = 'blob'`
          const blobError = yield* Effect.flip(store.load("blob"))
          assert.instanceOf(blobError, WorkflowError.StateDecodeError)
          assert.deepInclude(blobError, { sessionId: "blob", reason: "corrupt" })
          assert.deepStrictEqual(Option.map(yield* store.load("good"), (s) => s.state), Option.some({ id: "good" }))
          assert.deepStrictEqual((yield* store.list({})).sessions.map((s) => s.sessionId).sort(), ["blob", "good"])
          assert.deepStrictEqual((yield* store.runs("blob", {})).map((r) => r.runId), ["r-blob"])
        }).pipe(
          Effect.provide(SqliteSessionStore.layer({ filename }).pipe(Layer.merge(SqliteClient.layer({ filename }))))
        )
      })
  )

  it.scoped("layerConfig reads the file name and table from Config", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const config = ConfigProvider.fromMap(
        new Map([["SESSIONS_DB", filename], ["SESSIONS_TABLE", "workflow_session"]])
      )
      yield* Effect.flatMap(
        SessionStore.SessionStore,
        (store) => store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { from: "config" } })
      ).pipe(
        Effect.provide(
          SqliteSessionStore.layerConfig({
            filename: Config.string("SESSIONS_DB"),
            table: Config.string("SESSIONS_TABLE")
          }).pipe(Layer.provide(Layer.setConfigProvider(config)))
        )
      )
      const rows = yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ session_id: string; state: string }>`SELECT session_id, state FROM workflow_session`
      ).pipe(
        Effect.provide(SqliteClient.layer({ filename }))
      )
      assert.deepStrictEqual(rows, [{ session_id: "s1", state: "{\"from\":\"config\"}" }])
    }))

  it.effect("layerConfig fails with a ConfigError when the file name is missing", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.provide(
          SessionStore.SessionStore,
          SqliteSessionStore.layerConfig({ filename: Config.string("NOT_SET") }).pipe(
            Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map())))
          )
        )
      )
      assert.isTrue(ConfigError.isConfigError(error))
    }))
})

describe("SqliteSessionStore: bad input loses nothing", () => {
  const untyped = Workflow.make({
    name: "raw",
    sessionState: { items: [] },
    steps: [
      Step.make(
        "add",
        (input) => SessionState.update((s) => ({ ...s, items: [...(s.items as Array<unknown>), input.input] }))
      )
    ]
  })

  it.scoped(
    "a row with a corrupt version does not hide the others from listSessions: it is reported apart, typed",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* Workflow.run(untyped, "a", { sessionId: "healthy-1" })
          yield* Workflow.run(untyped, "b", { sessionId: "damaged" })
          yield* Workflow.run(untyped, "c", { sessionId: "healthy-2" })
          yield* sql`UPDATE sessionflow_sessions SET version = ${"not a number"} WHERE session_id = 'damaged'`
          const listing = yield* Workflow.listSessions(untyped)
          assert.deepStrictEqual(listing.sessions.map((s) => s.sessionId).sort(), ["healthy-1", "healthy-2"])
          assert.strictEqual(listing.broken.length, 1)
          const [broken] = listing.broken
          assert.strictEqual(broken!.sessionId, "damaged")
          assert.instanceOf(broken!.error, WorkflowError.SessionStoreError)
          assert.match(broken!.error.message, /session 'damaged' has an unreadable row/)
        }).pipe(Effect.provide(storeWithClient(filename)))
      })
  )

  it.scoped(
    "a database migrated to 13 without 12 (a migration numbered below one that shipped before it) gets 12 when opened",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          yield* store.commit({ sessionId: "kept", workflowName: "wf", expectedVersion: 0, state: { n: 1 } })
          // as a database migrated before migration 12 was written is: 13 recorded, no schedules table
          const sql = yield* SqlClient.SqlClient
          yield* sql`DROP TABLE sessionflow_sessions_schedules`
          yield* sql`DELETE FROM sessionflow_sessions_migrations WHERE migration_id = 12`
          assert.notInclude(yield* tables, "sessionflow_sessions_schedules")
        }).pipe(Effect.provide(storeWithClient(filename)))
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const migrations = yield* recordedMigrations
          assert.deepStrictEqual(migrations.map((m) => m.migration_id), [
            1,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            16
          ])
          assert.strictEqual(migrations[11]!.name, "create_schedules")
          assert.include(yield* tables, "sessionflow_sessions_schedules")
          const stored = yield* store.putSchedule({
            workflowName: "wf",
            name: "s",
            cron: "* * * * *",
            nextTick: 60_000,
            now: 0
          })
          assert.strictEqual(stored.nextTick, 60_000)
          assert.isTrue(Option.isSome(yield* store.load("kept")))
        }).pipe(Effect.provide(storeWithClient(filename)))
      })
  )

  it.scoped(
    "a database at migration 3 (before last_run_id and the changes table) migrates to the " +
      "latest and keeps its data; its sessions watch without a runId until their next commit",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          yield* store.commit({
            sessionId: "old",
            workflowName: "wf",
            expectedVersion: 0,
            state: { n: 1 },
            run: run("old", "r1")
          })
          yield* store.setName("old", "an old session")
          // back to the tables exactly as migration 3 left them
          const sql = yield* SqlClient.SqlClient
          yield* sql`DROP VIEW sessionflow_sessions_first_commits`
          yield* sql`DROP INDEX sessionflow_sessions_listing_idx`
          yield* sql`DROP INDEX sessionflow_sessions_runs_listing_idx`
          yield* sql`DROP INDEX sessionflow_sessions_active_listing_idx`
          yield* sql`DROP TRIGGER sessionflow_sessions_state_edited`
          yield* sql`ALTER TABLE sessionflow_sessions DROP COLUMN last_run_id`
          yield* sql`ALTER TABLE sessionflow_sessions DROP COLUMN state_size`
          yield* sql`ALTER TABLE sessionflow_sessions DROP COLUMN base_size`
          yield* sql`ALTER TABLE sessionflow_sessions DROP COLUMN changes_size`
          yield* sql`DROP TABLE sessionflow_sessions_changes`
          yield* sql`DROP TABLE sessionflow_sessions_events`
          yield* sql`DROP TABLE sessionflow_sessions_versions`
          yield* sql`DROP TABLE sessionflow_sessions_signals`
          yield* sql`DROP INDEX sessionflow_sessions_active_wake_idx`
          yield* sql`ALTER TABLE sessionflow_sessions_active DROP COLUMN wake_at`
          yield* sql`DROP TABLE sessionflow_sessions_queue`
          yield* sql`DELETE FROM sessionflow_sessions_migrations WHERE migration_id >= 4`
        }).pipe(Effect.provide(storeWithClient(filename)))
        // read-only, it is not migrated: an error that says what to do
        const readonlyError = yield* Effect.flip(Layer.build(SqliteSessionStore.layer({ filename, readonly: true })))
        assert.include(readonlyError.description, "are at migration 3 of 16")
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const sql = yield* SqlClient.SqlClient
          const migrations = yield* recordedMigrations
          assert.deepStrictEqual(migrations.map((m) => m.migration_id), [
            1,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            16
          ])
          // the sizes the store keeps changes by: the existing state's, no changes
          const sizes = yield* sql<{ state_size: number; base_size: number; changes_size: number }>`
          SELECT state_size, base_size, changes_size FROM sessionflow_sessions WHERE session_id = 'old'`
          const size = JSON.stringify({ n: 1 }).length
          assert.deepStrictEqual(sizes, [{ state_size: size, base_size: size, changes_size: 0 }])
          const session = Option.getOrThrow(yield* store.load("old"))
          assert.deepStrictEqual([session.state, session.version, session.name], [{ n: 1 }, 1, "an old session"])
          assert.deepStrictEqual((yield* store.runs("old", {})).map((r) => r.runId), ["r1"])
          const changes = store.watch("old", { pollInterval: "10 millis" })
          const [before] = yield* Stream.runCollect(Stream.take(changes, 1))
          assert.deepStrictEqual([before!.version, before!.runId], [1, undefined])
          yield* store.commit({
            sessionId: "old",
            workflowName: "wf",
            expectedVersion: 1,
            state: { n: 2 },
            run: run("old", "r2")
          })
          const [after] = yield* Stream.runCollect(Stream.take(changes, 1))
          assert.deepStrictEqual([after!.version, after!.state, after!.runId], [2, { n: 2 }, "r2"])
          const rows = yield* sql<
            { last_run_id: string | null }
          >`SELECT last_run_id FROM sessionflow_sessions WHERE session_id = 'old'`
          assert.deepStrictEqual(rows, [{ last_run_id: "r2" }])
        }).pipe(Effect.provide(storeWithClient(filename)))
      })
  )

  it.scoped(
    "a new session's first commit is one insert into the view " +
      "of first commits; a later commit writes its tables itself",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const sql = yield* SqlClient.SqlClient
          // the rows the connection's last INSERT, UPDATE or DELETE changed: none for an insert into a
          // view that its INSTEAD OF trigger carries out
          const lastChanges = Effect.map(sql<{ n: number }>`SELECT changes() AS n`, ([row]) => row!.n)
          yield* store.commit({
            sessionId: "s",
            workflowName: "wf",
            expectedVersion: 0,
            state: { n: 1 },
            run: run("s", "r1")
          })
          assert.strictEqual(yield* lastChanges, 0)
          assert.deepStrictEqual(
            Option.map(yield* store.load("s"), (s) => [s.state, s.version]),
            Option.some([{ n: 1 }, 1])
          )
          assert.deepStrictEqual((yield* store.runs("s", {})).map((record) => record.runId), ["r1"])
          assert.deepStrictEqual(yield* store.loadVersion("s", 1), Option.some({ n: 1 }))
          yield* store.commit({
            sessionId: "s",
            workflowName: "wf",
            expectedVersion: 1,
            state: { n: 2 },
            run: run("s", "r2")
          })
          assert.strictEqual(yield* lastChanges, 1)
          // refused by the view (the session exists), then told by the transaction which check refused it
          const conflict = yield* Effect.flip(
            store.commit({
              sessionId: "s",
              workflowName: "wf",
              expectedVersion: 0,
              state: { n: 9 },
              run: run("s", "r3")
            })
          )
          assert.deepInclude(conflict, { _tag: "SessionConflict", expectedVersion: 0, actualVersion: 2 })
          assert.deepStrictEqual((yield* store.runs("s", {})).map((record) => record.runId), ["r1", "r2"])
        }).pipe(Effect.provide(storeWithClient(filename)))
      })
  )

  it.scoped(
    "a database at migration 13 gets 14 (the tables a commit writes fewer pages of) " +
      "and 15 (the view of first commits) and reads back what it held, an operator's " +
      "column and index included; new records and sessions come after the old",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        /** everything the store reads of the sessions, their versions and records */
        const snapshot = Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const sessions = yield* Effect.forEach(["a", "b", "c"], (id) =>
            Effect.gen(function*() {
              const versions = yield* store.versions(id)
              return {
                session: Option.map(yield* store.load(id), ({ name, state, version }) => ({ name, state, version })),
                versions,
                states: yield* Effect.forEach(versions, (info) => store.loadVersion(id, info.version)),
                runs: (yield* store.runs(id, {})).map((record) => [record.runId, record.content])
              }
            }))
          const listing = (yield* store.list({ workflowName: "wf" })).sessions.map((info) => info.sessionId)
          const runs = (yield* store.listRuns({ workflowName: "wf" })).runs.map((found) =>
            found._tag === "Active" ? found.run.runId : found.record.runId
          )
          return { sessions, listing, runs }
        })
        const written = yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const commit = (sessionId: string, expectedVersion: number, state: unknown, runId: string) =>
            store.commit({ sessionId, workflowName: "wf", expectedVersion, state, run: run(sessionId, runId) })
          yield* commit("a", 0, { items: ["x"], n: 1 }, "a1")
          yield* commit("a", 1, { items: ["x", "y"], n: 1 }, "a2")
          yield* commit("a", 2, { items: ["x", "y"], n: 3, note: "é ✓ 😀" }, "a3")
          yield* commit("b", 0, { n: 1 }, "b1")
          yield* store.setName("b", "the b session")
          yield* store.fork({ sessionId: "a", version: 2, newSessionId: "c" })
          const taken = yield* snapshot
          // back to the tables exactly as migration 13 left them
          const sql = yield* SqlClient.SqlClient
          yield* sql`DROP VIEW sessionflow_sessions_first_commits`
          yield* sql`DROP INDEX sessionflow_sessions_updated_idx`
          yield* sql`CREATE INDEX sessionflow_sessions_updated_idx
  ON sessionflow_sessions (updated_at DESC, session_id)`
          yield* sql`DROP INDEX sessionflow_sessions_listing_idx`
          yield* sql`CREATE INDEX sessionflow_sessions_listing_idx
  ON sessionflow_sessions (workflow_name, user_id, updated_at DESC, session_id)`
          yield* sql`DROP INDEX sessionflow_sessions_active_listing_idx`
          yield* sql`CREATE INDEX sessionflow_sessions_active_listing_idx
  ON sessionflow_sessions_active (workflow_name, user_id, started_at DESC, run_id)`
          yield* sql`CREATE TABLE versions_13 (session_id TEXT NOT NULL, version INTEGER NOT NULL, run_id TEXT,
  committed_at INTEGER NOT NULL, changed TEXT, state TEXT, changes TEXT, listed INTEGER NOT NULL,
  PRIMARY KEY (session_id, version)) WITHOUT ROWID`
          yield* sql`INSERT INTO versions_13
  SELECT session_id, version, run_id, committed_at, changed, state, changes, listed FROM sessionflow_sessions_versions`
          yield* sql`DROP TABLE sessionflow_sessions_versions`
          yield* sql`ALTER TABLE versions_13 RENAME TO sessionflow_sessions_versions`
          yield* sql`CREATE TABLE runs_13 (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL REFERENCES sessionflow_sessions (session_id) ON DELETE CASCADE,
  workflow_name TEXT NOT NULL, user_id TEXT, status TEXT NOT NULL, input TEXT, content TEXT, error TEXT,
  started_at INTEGER NOT NULL, completed_at INTEGER NOT NULL, usage TEXT)`
          yield* sql`INSERT INTO runs_13 SELECT seq, run_id, session_id, workflow_name, user_id, status, input, content,
  error, started_at, completed_at, usage FROM sessionflow_sessions_runs`
          yield* sql`DROP TABLE sessionflow_sessions_runs`
          yield* sql`ALTER TABLE runs_13 RENAME TO sessionflow_sessions_runs`
          yield* sql`CREATE INDEX sessionflow_sessions_runs_session_idx ON sessionflow_sessions_runs (session_id, seq)`
          yield* sql`CREATE INDEX sessionflow_sessions_runs_listing_idx
  ON sessionflow_sessions_runs (workflow_name, user_id, started_at DESC, run_id)`
          // and what an operator may have added to them: a column and an index
          yield* sql`ALTER TABLE sessionflow_sessions_runs ADD COLUMN reviewed TEXT`
          yield* sql`UPDATE sessionflow_sessions_runs SET reviewed = 'yes' WHERE run_id = 'a2'`
          yield* sql`CREATE INDEX ops_runs_by_status ON sessionflow_sessions_runs (status)`
          yield* sql`DELETE FROM sessionflow_sessions_migrations WHERE migration_id >= 14`
          assert.deepStrictEqual(yield* snapshot, taken)
          return taken
        }).pipe(Effect.provide(storeWithClient(filename)))
        assert.deepStrictEqual(written.sessions.map((s) => s.versions.map((info) => info.version)), [[1, 2, 3], [1], [
          1,
          2
        ]])
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const sql = yield* SqlClient.SqlClient
          const migrations = yield* recordedMigrations
          assert.deepStrictEqual(migrations.map((m) => m.migration_id), [
            1,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            16
          ])
          assert.strictEqual(migrations[13]!.name, "lighter_commits")
          assert.deepStrictEqual(yield* snapshot, written)
          // the layout: no sqlite_sequence row for the records, the versions in a rowid table, the recency indexes
          // ascending by time (descending by id), and a page of a listing read from them with nothing to sort
          const plan = yield* sql<{ detail: string }>`EXPLAIN QUERY PLAN SELECT session_id FROM sessionflow_sessions
          WHERE workflow_name = 'wf' AND user_id IS NULL ORDER BY updated_at DESC, session_id LIMIT 2`
          assert.deepStrictEqual(plan.map((row) => row.detail), [
            "SEARCH sessionflow_sessions USING COVERING INDEX " +
            "sessionflow_sessions_listing_idx (workflow_name=? AND user_id=?)"
          ])
          const schema = new Map(
            (yield* sql<
              { name: string; sql: string | null }
            >`SELECT name, sql FROM sqlite_master WHERE tbl_name LIKE 'sessionflow_sessions%'`)
              .map((row) => [row.name, row.sql ?? ""])
          )
          assert.notInclude(schema.get("sessionflow_sessions_runs"), "AUTOINCREMENT")
          assert.notInclude(schema.get("sessionflow_sessions_versions"), "WITHOUT ROWID")
          for (const index of ["updated_idx", "listing_idx", "runs_listing_idx", "active_listing_idx"]) {
            const text = schema.get(`sessionflow_sessions_${index}`)
            assert.match(text ?? "", /(updated_at|started_at), (session_id|run_id) DESC\)$/, index)
          }
          assert.match(schema.get("sessionflow_sessions_runs_session_idx") ?? "", /\(session_id, seq\)$/)
          assert.isFalse(
            schema.has("versions_13") || schema.has("runs_13") || schema.has("sessionflow_sessions_runs_rebuilt")
          )
          // what the operator added is kept
          assert.include(schema.get("ops_runs_by_status"), "(status)")
          const reviewed = yield* sql<{ run_id: string; reviewed: string | null }>`
          SELECT run_id, reviewed FROM sessionflow_sessions_runs WHERE session_id = 'a' ORDER BY seq`
          assert.deepStrictEqual(reviewed, [{ run_id: "a1", reviewed: null }, { run_id: "a2", reviewed: "yes" }, {
            run_id: "a3",
            reviewed: null
          }])
          const sequences = yield* sql<{ name: string }>`SELECT name FROM sqlite_sequence`
          assert.notInclude(sequences.map((row) => row.name), "sessionflow_sessions_runs")
          // a new record comes after the old ones, in its session's records and in the table
          const [old] = yield* sql<{ seq: number }>`SELECT MAX(seq) AS seq FROM sessionflow_sessions_runs`
          yield* store.commit({
            sessionId: "b",
            workflowName: "wf",
            expectedVersion: 1,
            state: { n: 2 },
            run: run("b", "b2")
          })
          assert.deepStrictEqual((yield* store.runs("b", {})).map((record) => record.runId), ["b1", "b2"])
          const [added] = yield* sql<{ seq: number }>`SELECT seq FROM sessionflow_sessions_runs WHERE run_id = 'b2'`
          assert.isAbove(added!.seq, old!.seq)
          assert.deepStrictEqual((yield* store.versions("b")).map((info) => info.version), [1, 2])
          assert.deepStrictEqual(yield* store.loadVersion("b", 2), Option.some({ n: 2 }))
          // a new session's first commit goes through the view again
          assert.strictEqual(migrations[14]!.name, "first_commits")
          assert.isTrue(schema.has("sessionflow_sessions_first_commits_insert"))
          yield* store.commit({
            sessionId: "d",
            workflowName: "wf",
            expectedVersion: 0,
            state: { n: 1 },
            run: run("d", "d1")
          })
          assert.deepStrictEqual(
            Option.map(yield* store.load("d"), (s) => [s.state, s.version]),
            Option.some([{ n: 1 }, 1])
          )
          assert.deepStrictEqual((yield* store.runs("d", {})).map((record) => record.runId), ["d1"])
          const [newest] = yield* sql<{ seq: number }>`SELECT seq FROM sessionflow_sessions_runs WHERE run_id = 'd1'`
          assert.isAbove(newest!.seq, added!.seq)
          assert.deepStrictEqual(yield* store.loadVersion("d", 1), Option.some({ n: 1 }))
        }).pipe(Effect.provide(storeWithClient(filename)))
      })
  )
})
