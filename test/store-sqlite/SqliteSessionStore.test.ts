import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { Migrator, SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Config, ConfigError, ConfigProvider, Context, Deferred, type Duration, Effect, Fiber, Layer, Option, Schema, Stream } from "effect"
import { suite } from "../core/SessionStoreSuite.js"

/** A fresh database file in a temp directory that is deleted afterwards. */
const tempFile = Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-" })).pipe(
  Effect.map((dir) => `${dir}/sessions.db`),
  Effect.provide(NodeFileSystem.layer)
)

const tempFileLayer = (table?: string) =>
  Layer.unwrapScoped(Effect.map(tempFile, (filename) => SqliteSessionStore.layer({ filename, table })))

/** The store plus the raw client, for assertions in SQL. */
const storeWithClient = (filename: string, table?: string) =>
  SqliteSessionStore.layerStore({ table }).pipe(Layer.provideMerge(SqliteClient.layer({ filename })))

const tables = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
).pipe(Effect.map((rows) => rows.map((row) => row.name)))

const run = (sessionId: string, runId: string): SessionStore.RunRecord => ({
  runId,
  sessionId,
  workflowName: "wf",
  status: "completed",
  input: { message: runId },
  content: `done ${runId}`,
  startedAt: 1,
  completedAt: 2
})

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
suite("SqliteSessionStore.layer (:memory:)", SqliteSessionStore.layer({ filename: ":memory:" }))
suite("SqliteSessionStore.layer (synchronous NORMAL)", SqliteSessionStore.layer({ filename: ":memory:", synchronous: "NORMAL" }))
suite(
  "SqliteSessionStore.layerStore (table workflow_session)",
  SqliteSessionStore.layerStore({ table: "workflow_session" }).pipe(Layer.provide(SqliteClient.layer({ filename: ":memory:" }))),
  { twoStores: twoStores((filename) => storeWithClient(filename, "workflow_session")) }
)

describe("SqliteSessionStore", () => {
  it.scoped("uses sessionflow_sessions, its runs and unfinished-runs tables and its own migrations table by default", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        assert.deepStrictEqual(yield* tables, [
          "sessionflow_sessions",
          "sessionflow_sessions_active",
          "sessionflow_sessions_changes",
          "sessionflow_sessions_migrations",
          "sessionflow_sessions_runs"
        ])
        const sql = yield* SqlClient.SqlClient
        const [mode] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
        assert.strictEqual(mode.journal_mode, "wal")
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.scoped("a custom table name (workflow_session) names all five tables", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient.SqlClient
        yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { a: 1 }, run: run("s1", "r1") })
        assert.deepStrictEqual(yield* tables, [
          "workflow_session",
          "workflow_session_active",
          "workflow_session_changes",
          "workflow_session_migrations",
          "workflow_session_runs"
        ])
        const rows = yield* sql<{ session_id: string; state: string; version: number }>`
          SELECT session_id, state, version FROM workflow_session`
        assert.deepStrictEqual(rows, [{ session_id: "s1", state: "{\"a\":1}", version: 1 }])
        const runs = yield* sql<{ run_id: string }>`SELECT run_id FROM workflow_session_runs`
        assert.deepStrictEqual(runs, [{ run_id: "r1" }])
      }).pipe(Effect.provide(storeWithClient(filename, "workflow_session")))
    }))

  it.scoped("two stores with different tables share one file without seeing each other", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const client = SqliteClient.layer({ filename })
      const a = yield* Layer.build(SqliteSessionStore.layerStore({ table: "app_a" }).pipe(Layer.provide(client)))
      const b = yield* Layer.build(SqliteSessionStore.layerStore({ table: "app_b" }).pipe(Layer.provide(client)))
      const storeA = SessionStore.SessionStore.pipe(Effect.provide(a))
      const storeB = SessionStore.SessionStore.pipe(Effect.provide(b))
      yield* Effect.flatMap(storeA, (s) => s.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: "a" }))
      assert.isTrue(Option.isNone(yield* Effect.flatMap(storeB, (s) => s.load("s1"))))
      assert.strictEqual(
        yield* Effect.flatMap(storeB, (s) => s.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: "b" })),
        1
      )
    }))

  it.effect("an invalid table name fails with a SessionStoreError that says why, and creates nothing", () =>
    Effect.gen(function*() {
      for (const table of ["bad-name", "x; DROP TABLE y", "1starts_with_digit", "", "sqlite_master", "a".repeat(49), "naïve"]) {
        const error = yield* Effect.flip(SqliteSessionStore.make({ table }))
        assert.instanceOf(error, WorkflowError.SessionStoreError)
        const storeError = error as WorkflowError.SessionStoreError
        assert.strictEqual(storeError.method, "make")
        assert.include(storeError.message, JSON.stringify(table))
        assert.include(storeError.message, "invalid table name")
      }
      assert.deepStrictEqual(yield* tables, [])
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))))

  it.scoped("migrations are idempotent: the same file opened twice, one after the other and side by side", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.flatMap(SessionStore.SessionStore, (store) =>
        store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { n: 1 }, run: run("s1", "r1") })).pipe(
          Effect.provide(SqliteSessionStore.layer({ filename }))
        )
      // reopened: same data, no migration ran twice
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient.SqlClient
        const session = yield* store.load("s1")
        assert.deepStrictEqual(Option.map(session, (s) => [s.state, s.version]), Option.some([{ n: 1 }, 1]))
        const migrations = yield* sql<{ migration_id: number; name: string }>`
          SELECT migration_id, name FROM sessionflow_sessions_migrations ORDER BY migration_id`
        assert.deepStrictEqual(migrations, [
          { migration_id: 1, name: "create_sessions" },
          { migration_id: 2, name: "create_runs" },
          { migration_id: 3, name: "create_active" },
          { migration_id: 4, name: "add_last_run_id" },
          { migration_id: 5, name: "create_changes" }
        ])
        // a second connection to the same file at the same time
        const other = yield* Layer.build(SqliteSessionStore.layer({ filename }))
        const otherStore = Effect.provide(SessionStore.SessionStore, other)
        assert.strictEqual(
          yield* Effect.flatMap(otherStore, (s) =>
            s.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 1, state: { n: 2 }, run: run("s1", "r2") })),
          2
        )
        assert.deepStrictEqual(Option.map(yield* store.load("s1"), (s) => s.state), Option.some({ n: 2 }))
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r1", "r2"])
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.scopedLive("a store opened while another connection is still migrating the file waits for it to finish", () =>
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
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT COUNT(*) FROM sessionflow_sessions_migrations`).pipe(
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
      assert.strictEqual(yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { ok: 1 } }), 1)
      const migrations = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ migration_id: number }>`SELECT migration_id FROM sessionflow_sessions_migrations ORDER BY migration_id`).pipe(
          Effect.provide(b)
        )
      assert.deepStrictEqual(migrations, [
        { migration_id: 1 },
        { migration_id: 2 },
        { migration_id: 3 },
        { migration_id: 4 },
        { migration_id: 5 }
      ])
    }), 60_000)

  it.scoped("corrupt state JSON fails load with StateDecodeError naming the session; nothing else is affected", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient.SqlClient
        for (const id of ["good", "broken", "blob"]) {
          yield* store.commit({ sessionId: id, workflowName: "wf", expectedVersion: 0, state: { id }, run: run(id, `r-${id}`) })
        }
        yield* sql`UPDATE sessionflow_sessions SET state = ${"{\"items\": [1, 2"} WHERE session_id = 'broken'`
        yield* sql`UPDATE sessionflow_sessions SET state = ${new Uint8Array([0xff, 0x00, 0x7b])} WHERE session_id = 'blob'`

        const error = yield* Effect.flip(store.load("broken"))
        assert.instanceOf(error, WorkflowError.StateDecodeError)
        assert.deepInclude(error, { sessionId: "broken", reason: "corrupt" })
        assert.include(error.message, "'broken'")
        const blobError = yield* Effect.flip(store.load("blob"))
        assert.instanceOf(blobError, WorkflowError.StateDecodeError)
        assert.deepInclude(blobError, { sessionId: "blob", reason: "corrupt" })

        // the row is left as it was
        const [row] = yield* sql<{ state: string; version: number }>`
          SELECT state, version FROM sessionflow_sessions WHERE session_id = 'broken'`
        assert.deepStrictEqual(row, { state: "{\"items\": [1, 2", version: 1 })

        // other sessions, listing and history keep working
        assert.deepStrictEqual(Option.map(yield* store.load("good"), (s) => s.state), Option.some({ id: "good" }))
        assert.deepStrictEqual((yield* store.list({})).sessions.map((s) => s.sessionId).sort(), ["blob", "broken", "good"])
        assert.deepStrictEqual((yield* store.runs("broken", {})).map((r) => r.runId), ["r-broken"])
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.scoped("a commit is one transaction: when the run row cannot be written, the state is not written either", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient.SqlClient
        yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { n: 1 }, run: run("s1", "r1") })
        // the run insert fails after the state update (a trigger refuses run 'bad')
        yield* sql`CREATE TRIGGER refuse_bad BEFORE INSERT ON sessionflow_sessions_runs
WHEN NEW.run_id = 'bad' BEGIN SELECT RAISE(ABORT, 'refused'); END`
        const error = yield* Effect.flip(
          store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 1, state: { n: 2 }, run: run("s1", "bad") })
        )
        assert.instanceOf(error, WorkflowError.SessionStoreError)
        assert.strictEqual((error as WorkflowError.SessionStoreError).method, "commit")
        const session = yield* store.load("s1")
        assert.deepStrictEqual(Option.map(session, (s) => [s.state, s.version]), Option.some([{ n: 1 }, 1]))
        assert.strictEqual((yield* store.runs("s1", {})).length, 1)
        // and the store is usable afterwards
        assert.strictEqual(
          yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 1, state: { n: 2 }, run: run("s1", "r2") }),
          2
        )
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.effect("works on a client that transforms column and table names", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      yield* store.commit({ sessionId: "s1", workflowName: "wf", userId: "u", expectedVersion: 0, state: { a: 1 }, run: run("s1", "r1") })
      yield* store.setName("s1", "named")
      assert.deepStrictEqual(
        Option.map(yield* store.load("s1"), (s) => [s.state, s.name, s.userId]),
        Option.some([{ a: 1 }, "named", "u"])
      )
      assert.deepStrictEqual((yield* store.list({ workflowName: "wf", userId: "u" })).sessions.map((s) => s.sessionId), ["s1"])
      assert.deepStrictEqual(yield* store.runs("s1", { limit: 1 }), [run("s1", "r1")])
      assert.isTrue(yield* store.remove("s1"))
    }).pipe(
      Effect.provide(
        SqliteSessionStore.layerStore().pipe(
          Layer.provide(SqliteClient.layer({
            filename: ":memory:",
            transformQueryNames: (name) => `renamed_${name}`,
            transformResultNames: (name) => `renamed_${name}`
          }))
        )
      )
    ))

  it.effect("a state that is not JSON-serialisable fails with SessionStoreError and writes nothing", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      for (const state of [{ big: 1n }, () => 1]) {
        const error = yield* Effect.flip(store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state }))
        assert.instanceOf(error, WorkflowError.SessionStoreError)
      }
      assert.isTrue(Option.isNone(yield* store.load("s1")))
    }).pipe(Effect.provide(SqliteSessionStore.layer({ filename: ":memory:" }))))

  it.scoped("run history is one row per run: 2,000 runs never grow the session row", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient.SqlClient
        yield* store.commit({ sessionId: "big", workflowName: "wf", expectedVersion: 0, state: { counter: 0 } })
        yield* store.commit({ sessionId: "small", workflowName: "wf", expectedVersion: 0, state: {}, run: run("small", "s-1") })
        for (let i = 1; i <= 2000; i++) {
          // every tenth run also changes the state
          yield* i % 10 === 0
            ? store.commit({
              sessionId: "big",
              workflowName: "wf",
              expectedVersion: i / 10,
              state: { counter: i },
              run: run("big", `run-${i}`)
            })
            : store.commit({ sessionId: "big", workflowName: "wf", expectedVersion: 0, run: run("big", `run-${i}`) })
        }
        const [count] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM sessionflow_sessions_runs WHERE session_id = 'big'`
        assert.strictEqual(count.n, 2000)
        const [row] = yield* sql<{ state: string; version: number }>`
          SELECT state, version FROM sessionflow_sessions WHERE session_id = 'big'`
        assert.strictEqual(row.state, "{\"counter\":2000}")
        assert.strictEqual(row.version, 201)
        assert.notInclude(row.state, "run-")
        // no column of the session row holds the history
        const [width] = yield* sql<{ bytes: number }>`
          SELECT length(session_id) + length(workflow_name) + length(state) + ifnull(length(session_name), 0) AS bytes
          FROM sessionflow_sessions WHERE session_id = 'big'`
        assert.isBelow(width.bytes, 100)
        // runs are ordered by their sequence, and limit reads the newest
        assert.deepStrictEqual((yield* store.runs("big", { limit: 3 })).map((r) => r.runId), ["run-1998", "run-1999", "run-2000"])
        const all = yield* store.runs("big", {})
        assert.strictEqual(all.length, 2000)
        assert.strictEqual(all[0].runId, "run-1")
        assert.deepStrictEqual((yield* store.runs("small", {})).map((r) => r.runId), ["s-1"])
        // removing the session removes its 2,000 run rows
        assert.isTrue(yield* store.remove("big"))
        const [left] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM sessionflow_sessions_runs`
        assert.strictEqual(left.n, 1)
      }).pipe(Effect.provide(storeWithClient(filename)))
    }), 120_000)

  it.scoped("layerConfig reads the file name and table from Config", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const config = ConfigProvider.fromMap(new Map([["SESSIONS_DB", filename], ["SESSIONS_TABLE", "workflow_session"]]))
      yield* Effect.flatMap(SessionStore.SessionStore, (store) =>
        store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { from: "config" } })).pipe(
          Effect.provide(
            SqliteSessionStore.layerConfig({
              filename: Config.string("SESSIONS_DB"),
              table: Config.string("SESSIONS_TABLE")
            }).pipe(Layer.provide(Layer.setConfigProvider(config)))
          )
        )
      const rows = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ session_id: string; state: string }>`SELECT session_id, state FROM workflow_session`).pipe(
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

describe("SqliteSessionStore under a workflow", () => {
  class V1 extends SessionState.Tag("test/sqlite/V1")<V1>()({ items: Schema.Array(Schema.String) }) {}
  class V2Strict extends SessionState.Tag("test/sqlite/V2Strict")<V2Strict>()({
    items: Schema.Array(Schema.String),
    owner: Schema.String
  }) {}
  class V2Defaulted extends SessionState.Tag("test/sqlite/V2Defaulted")<V2Defaulted>()({
    items: Schema.Array(Schema.String),
    owner: Schema.optionalWith(Schema.String, { default: () => "nobody" })
  }) {}
  const v1 = Workflow.make({
    name: "versioned",
    state: V1,
    sessionState: { items: [] },
    steps: [Step.make("add", () => V1.update((s) => ({ ...s, items: [...s.items, "new"] })))]
  })
  const v2Strict = Workflow.make({
    name: "versioned",
    state: V2Strict,
    sessionState: { items: [], owner: "new" },
    steps: [Step.make("add", () => V2Strict.update((s) => ({ ...s, items: [...s.items, "new"] })))]
  })
  const v2Defaulted = Workflow.make({
    name: "versioned",
    state: V2Defaulted,
    sessionState: { items: [] },
    steps: [Step.make("add", () => V2Defaulted.update((s) => ({ ...s, items: [...s.items, "new"] })))]
  })

  it.scoped("a stored state that no longer fits the Schema fails typed and is left alone; Schema defaults decode it", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Workflow.run(v1, "first", { sessionId: "old" })
        const before = yield* sql<{ state: string; version: number }>`
          SELECT state, version FROM sessionflow_sessions WHERE session_id = 'old'`

        const error = yield* Effect.flip(Workflow.run(v2Strict, "second", { sessionId: "old" }))
        assert(error._tag === "StateDecodeError")
        assert.deepInclude(error, { sessionId: "old", reason: "schema" })
        assert.include(error.message, "owner")
        const after = yield* sql<{ state: string; version: number }>`
          SELECT state, version FROM sessionflow_sessions WHERE session_id = 'old'`
        assert.deepStrictEqual(after, before)

        const out = yield* Workflow.run(v2Defaulted, "third", { sessionId: "old" })
        assert.deepStrictEqual(out.state, { items: ["new", "new"], owner: "nobody" })
        assert.deepStrictEqual(yield* Workflow.getSessionState(v1, "old"), { items: ["new", "new"] })
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.scoped("a run on a session whose stored JSON is corrupt fails with StateDecodeError and overwrites nothing; it can still be inspected, renamed and deleted", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Workflow.run(v1, "first", { sessionId: "corrupt" })
        yield* Workflow.run(v1, "first", { sessionId: "fine" })
        yield* sql`UPDATE sessionflow_sessions SET state = ${"{not json"} WHERE session_id = 'corrupt'`
        const error = yield* Effect.flip(Workflow.run(v1, "second", { sessionId: "corrupt" }))
        assert(error._tag === "StateDecodeError")
        assert.deepInclude(error, { sessionId: "corrupt", reason: "corrupt" })
        const [row] = yield* sql<{ state: string }>`SELECT state FROM sessionflow_sessions WHERE session_id = 'corrupt'`
        assert.strictEqual(row!.state, "{not json")
        assert.deepStrictEqual((yield* Workflow.run(v1, "second", { sessionId: "fine" })).state, { items: ["new", "new"] })
        // what does not need the state still works on the corrupt session: history (with the failed
        // run recorded), naming, deletion
        assert.deepStrictEqual(
          (yield* Workflow.getRunHistory(v1, "corrupt")).map((r) => [r.input, r.status]),
          [["first", "completed"], ["second", "error"]]
        )
        assert.match((yield* Workflow.getRunHistory(v1, "corrupt"))[1]!.error!, /^StateDecodeError: The stored state of session 'corrupt' is corrupt/)
        assert.strictEqual(yield* Workflow.setSessionName(v1, "corrupt", "broken one"), "broken one")
        assert.deepStrictEqual(yield* Workflow.getSessionName(v1, "corrupt"), Option.some("broken one"))
        yield* Workflow.deleteSession(v1, "corrupt")
        assert.strictEqual((yield* Effect.flip(Workflow.getSessionState(v1, "corrupt")))._tag, "SessionNotFound")
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))
})

describe("SqliteSessionStore: bad input loses nothing", () => {
  const untyped = Workflow.make({
    name: "raw",
    sessionState: { items: [] },
    steps: [Step.make("add", (input) => SessionState.update((s) => ({ ...s, items: [...(s.items as Array<unknown>), input.input] })))]
  })

  it.scoped("a stored state written as null, [1,2] or 5 by raw SQL is a StateDecodeError with or without a patch; nothing is overwritten", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        for (const [i, raw] of ["null", "[1,2]", "5"].entries()) {
          const sessionId = `raw-${i}`
          yield* Workflow.run(untyped, "first", { sessionId })
          yield* sql`UPDATE sessionflow_sessions SET state = ${raw} WHERE session_id = ${sessionId}`
          const patched = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId, sessionState: { items: ["patched"] } }))
          assert.strictEqual(patched._tag, "StateDecodeError")
          const plain = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId }))
          assert.strictEqual(plain._tag, "StateDecodeError")
          const [row] = yield* sql<{ state: string; version: number }>`SELECT state, version FROM sessionflow_sessions WHERE session_id = ${sessionId}`
          assert.deepStrictEqual(row, { state: raw, version: 1 })
          // both failed runs are recorded
          assert.deepStrictEqual((yield* Workflow.getRunHistory(untyped, sessionId)).map((r) => r.status), ["completed", "error", "error"])
        }
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.scoped("a row with a corrupt version does not hide the others from listSessions: it is reported apart, typed", () =>
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
    }))

  it.scoped("session ids that are not well-formed Unicode are refused before anything is stored", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const error = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId: "bad-\ud800-x" }))
        assert.strictEqual(error._tag, "InvalidSessionId")
        const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM sessionflow_sessions`
        assert.strictEqual(rows[0]!.n, 0)
        // a well-formed id with astral characters round-trips exactly
        yield* Workflow.run(untyped, "x", { sessionId: "emoji-😀" })
        assert.deepStrictEqual((yield* Workflow.listSessions(untyped)).sessions.map((s) => s.sessionId), ["emoji-😀"])
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.scoped("a database at migration 3 (before last_run_id and the changes table) migrates to 5 and keeps its data; its sessions watch without a runId until their next commit", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        yield* store.commit({ sessionId: "old", workflowName: "wf", expectedVersion: 0, state: { n: 1 }, run: run("old", "r1") })
        yield* store.setName("old", "an old session")
        // back to the tables exactly as migration 3 left them
        const sql = yield* SqlClient.SqlClient
        yield* sql`ALTER TABLE sessionflow_sessions DROP COLUMN last_run_id`
        yield* sql`ALTER TABLE sessionflow_sessions DROP COLUMN state_size`
        yield* sql`ALTER TABLE sessionflow_sessions DROP COLUMN base_size`
        yield* sql`ALTER TABLE sessionflow_sessions DROP COLUMN changes_size`
        yield* sql`DROP TABLE sessionflow_sessions_changes`
        yield* sql`DELETE FROM sessionflow_sessions_migrations WHERE migration_id >= 4`
      }).pipe(Effect.provide(storeWithClient(filename)))
      // read-only, it is not migrated: an error that says what to do
      const readonlyError = yield* Effect.flip(Layer.build(SqliteSessionStore.layer({ filename, readonly: true })))
      assert.include(readonlyError.description, "are at migration 3 of 5")
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient.SqlClient
        const migrations = yield* sql<{ migration_id: number }>`SELECT migration_id FROM sessionflow_sessions_migrations ORDER BY migration_id`
        assert.deepStrictEqual(migrations.map((m) => m.migration_id), [1, 2, 3, 4, 5])
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
        yield* store.commit({ sessionId: "old", workflowName: "wf", expectedVersion: 1, state: { n: 2 }, run: run("old", "r2") })
        const [after] = yield* Stream.runCollect(Stream.take(changes, 1))
        assert.deepStrictEqual([after!.version, after!.state, after!.runId], [2, { n: 2 }, "r2"])
        const rows = yield* sql<{ last_run_id: string | null }>`SELECT last_run_id FROM sessionflow_sessions WHERE session_id = 'old'`
        assert.deepStrictEqual(rows, [{ last_run_id: "r2" }])
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.scoped("watch fails with StateDecodeError naming the session when the stored state is not JSON", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient.SqlClient
        yield* store.commit({ sessionId: "broken", workflowName: "wf", expectedVersion: 0, state: { n: 1 } })
        yield* sql`UPDATE sessionflow_sessions SET state = ${"{not json"} WHERE session_id = 'broken'`
        const error = yield* Effect.flip(Stream.runDrain(store.watch("broken")))
        assert.instanceOf(error, WorkflowError.StateDecodeError)
        assert.deepInclude(error, { sessionId: "broken", reason: "corrupt" })
      }).pipe(Effect.provide(storeWithClient(filename)))
    }))

  it.effect("watch with a pollInterval that is not a positive, finite duration fails with a SessionStoreError saying so", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { n: 1 } })
      const invalid: ReadonlyArray<Duration.DurationInput> = ["0 millis", -5, Infinity, "soon" as Duration.DurationInput]
      for (const pollInterval of invalid) {
        const error = yield* Effect.flip(Stream.runDrain(store.watch("s1", { pollInterval })))
        assert.instanceOf(error, WorkflowError.SessionStoreError)
        assert.strictEqual((error as WorkflowError.SessionStoreError).method, "watch")
        assert.include(error.message, "invalid pollInterval")
      }
    }).pipe(Effect.provide(SqliteSessionStore.layer({ filename: ":memory:" }))))
})
