/**
 * The SQL store on each database: its tables and migrations, what a commit
 * writes, and bad rows and bad input, which fail typed and lose nothing.
 * (The conformance suite runs on the driver packages' layers, in
 * test/store-sqlite and test/store-pg.)
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { SqlSessionStore } from "@sessionflow/store-sql"
import { type Duration, Effect, Layer, Option, Schema, Stream } from "effect"
import { type Database, dialects, run, type StoreOptions } from "./dialects.js"

/** the ids of the migrations after the ninth, by name */
const laterMigrations: Readonly<Record<string, number>> = {
  create_queue: 10,
  create_signals: 11,
  create_schedules: 12,
  create_versions: 13,
  lighter_commits: 14,
  first_commits: 15,
  pause_keys: 16
}

const storeOf = (layer: Layer.Layer<SessionStore.SessionStore, unknown>) =>
  Effect.map(
    Layer.build(layer),
    (context) => context.unsafeMap.get(SessionStore.SessionStore.key) as SessionStore.Service
  )

const commitFirst = (store: SessionStore.Service, sessionId: string, state: unknown) =>
  store.commit({ sessionId, workflowName: "wf", expectedVersion: 0, state, run: run(sessionId, `r-${sessionId}`) })

for (const dialect of dialects) {
  /** `body` on a fresh database, with the store on a client of its own and that client */
  const withStore = <A, E>(
    body: (on: {
      readonly db: Database
      readonly store: SessionStore.Service
      readonly sql: SqlClient.SqlClient
    }) => Effect.Effect<A, E, SessionStore.SessionStore>,
    options?: StoreOptions
  ) =>
    Effect.gen(function*() {
      const db = yield* dialect.fresh
      return yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        const sql = yield* SqlClient.SqlClient
        return yield* body({ db, store, sql })
      }).pipe(Effect.provide(db.withClient(options)))
    })

  describe(`SqlSessionStore on ${dialect.name}: tables and migrations`, () => {
    it.scoped(
      "uses sessionflow_sessions, its runs, unfinished-runs, changes, event, " +
        "queue, schedule, signal and version tables and its own migrations table",
      () =>
        withStore(({ db, sql }) =>
          Effect.gen(function*() {
            assert.deepStrictEqual(yield* db.tables(sql), [
              "sessionflow_sessions",
              "sessionflow_sessions_active",
              "sessionflow_sessions_changes",
              "sessionflow_sessions_events",
              "sessionflow_sessions_migrations",
              "sessionflow_sessions_queue",
              "sessionflow_sessions_runs",
              "sessionflow_sessions_schedules",
              "sessionflow_sessions_signals",
              "sessionflow_sessions_versions"
            ])
            const migrations = yield* sql<{ migration_id: number; name: string }>`
            SELECT migration_id, name FROM ${sql(db.table("sessionflow_sessions_migrations"))} ORDER BY migration_id`
            assert.deepStrictEqual(
              migrations,
              dialect.migrations.map((name, i) => ({ migration_id: i < 9 ? i + 1 : laterMigrations[name], name }))
            )
          })
        )
    )

    it.scoped("a custom table name (workflow_session) names all its tables", () =>
      withStore(({ db, store, sql }) =>
        Effect.gen(function*() {
          yield* commitFirst(store, "s1", { a: 1 })
          assert.deepStrictEqual(yield* db.tables(sql), [
            "workflow_session",
            "workflow_session_active",
            "workflow_session_changes",
            "workflow_session_events",
            "workflow_session_migrations",
            "workflow_session_queue",
            "workflow_session_runs",
            "workflow_session_schedules",
            "workflow_session_signals",
            "workflow_session_versions"
          ])
          const rows = yield* sql<{ session_id: string; state: string; version: number }>`
            SELECT session_id, state, version FROM ${sql(db.table("workflow_session"))}`
          assert.deepStrictEqual(rows, [{ session_id: "s1", state: "{\"a\":1}", version: 1 }])
          const runs = yield* sql<{ run_id: string }>`SELECT run_id FROM ${sql(db.table("workflow_session_runs"))}`
          assert.deepStrictEqual(runs, [{ run_id: "r-s1" }])
        }), { table: "workflow_session" }))

    it.scoped("two stores with different tables share one database without seeing each other", () =>
      Effect.gen(function*() {
        const db = yield* dialect.fresh
        const a = yield* storeOf(db.layer({ table: "app_a" }))
        const b = yield* storeOf(db.layer({ table: "app_b" }))
        yield* commitFirst(a, "s1", { from: "a" })
        assert.isTrue(Option.isNone(yield* b.load("s1")))
        assert.strictEqual(yield* commitFirst(b, "s1", { from: "b" }), 1)
        assert.deepStrictEqual(Option.map(yield* a.load("s1"), (s) => s.state), Option.some({ from: "a" }))
        assert.deepStrictEqual(Option.map(yield* b.load("s1"), (s) => s.state), Option.some({ from: "b" }))
      }))

    it.live(
      "migrations are idempotent: one database opened one after the other, and by four connections at once",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const db = yield* dialect.fresh
          yield* Effect.scoped(Effect.flatMap(storeOf(db.layer()), (store) => commitFirst(store, "s1", { n: 1 })))
          // reopened: same data, no migration ran twice
          const store = yield* storeOf(db.layer())
          assert.deepStrictEqual(
            Option.map(yield* store.load("s1"), (s) => [s.state, s.version]),
            Option.some([{ n: 1 }, 1])
          )
          // a second connection to the same database at the same time
          const other = yield* storeOf(db.layer())
          assert.strictEqual(
            yield* other.commit({
              sessionId: "s1",
              workflowName: "wf",
              expectedVersion: 1,
              state: { n: 2 },
              run: run("s1", "r2")
            }),
            2
          )
          assert.deepStrictEqual(Option.map(yield* store.load("s1"), (s) => s.state), Option.some({ n: 2 }))
          assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r-s1", "r2"])
          // four connections racing on a fresh table set: all open, every migration ran once
          yield* Effect.all(Array.from({ length: 4 }, () => storeOf(db.layer({ table: "race" }))), {
            concurrency: "unbounded"
          })
          const counts = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.all([
              sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${
                sql(db.table("sessionflow_sessions_migrations"))
              }`,
              sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(db.table("race_migrations"))}`
            ])).pipe(Effect.provide(db.client))
          assert.deepStrictEqual(counts.map(([row]) => Number(row!.n)), [
            dialect.migrations.length,
            dialect.migrations.length
          ])
        })),
      60_000
    )

    it.scoped(
      "migrate: false creates nothing and fails typed on missing tables, " +
        "names the migration of tables behind, and opens migrated ones",
      () =>
        Effect.gen(function*() {
          const db = yield* dialect.fresh
          const sql = yield* Effect.map(
            Layer.build(db.client),
            (context) => context.unsafeMap.get(SqlClient.SqlClient.key) as SqlClient.SqlClient
          )
          const missing = yield* Effect.flip(
            SqlSessionStore.make({ ...db.options, migrate: false }).pipe(
              Effect.provideService(SqlClient.SqlClient, sql)
            )
          )
          assert.instanceOf(missing, WorkflowError.SessionStoreError)
          assert.strictEqual(missing.method, "make")
          assert.include(missing.message, "there is no session table 'sessionflow_sessions'")
          assert.deepStrictEqual(yield* db.tables(sql), [])

          yield* Effect.scoped(Layer.build(db.layer()))
          const store = yield* storeOf(db.layer({ migrate: false }))
          assert.strictEqual(yield* commitFirst(store, "s1", { a: 1 }), 1)

          yield* sql`DELETE FROM ${sql(db.table("sessionflow_sessions_migrations"))} WHERE migration_id >= 3`
          const behind = yield* Effect.flip(
            SqlSessionStore.make({ ...db.options, migrate: false }).pipe(
              Effect.provideService(SqlClient.SqlClient, sql)
            )
          )
          assert.include(behind.message, "the tables of 'sessionflow_sessions'")
          assert.include(behind.message, "are at migration 2 of 16: open them once with migrations on")
        })
    )
  })

  describe(`SqlSessionStore on ${dialect.name}: what a commit writes`, () => {
    it.scoped(
      "a commit is one transaction: when the run row cannot be written, " +
        "the state is not written either, nor a new session created",
      () =>
        withStore(({ db, store, sql }) =>
          Effect.gen(function*() {
            yield* commitFirst(store, "s1", { n: 1 })
            yield* db.refuseBadRuns(sql, db.table("sessionflow_sessions_runs"))
            for (const changes of [undefined, [{ op: "set" as const, path: ["n"], value: 2 }]]) {
              const error = yield* Effect.flip(
                store.commit({
                  sessionId: "s1",
                  workflowName: "wf",
                  expectedVersion: 1,
                  state: { n: 2 },
                  changes,
                  run: run("s1", "bad")
                })
              )
              assert.instanceOf(error, WorkflowError.SessionStoreError)
              assert.strictEqual((error as WorkflowError.SessionStoreError).method, "commit")
              assert.include(error.message, "refused")
              assert.deepStrictEqual(
                Option.map(yield* store.load("s1"), (s) => [s.state, s.version]),
                Option.some([{ n: 1 }, 1])
              )
              assert.strictEqual((yield* store.runs("s1", {})).length, 1)
            }
            // a new session's first commit (one statement on both dialects) creates nothing: no row, no version
            const first = yield* Effect.flip(
              store.commit({
                sessionId: "s2",
                workflowName: "wf",
                expectedVersion: 0,
                state: { n: 1 },
                run: run("s2", "bad")
              })
            )
            assert.instanceOf(first, WorkflowError.SessionStoreError)
            assert.include(first.message, "refused")
            assert.isTrue(Option.isNone(yield* store.load("s2")))
            assert.deepStrictEqual(yield* store.versions("s2"), [])
            assert.deepStrictEqual(yield* store.runs("s2", {}), [])
            // and the store is usable afterwards
            assert.strictEqual(
              yield* store.commit({
                sessionId: "s1",
                workflowName: "wf",
                expectedVersion: 1,
                state: { n: 2 },
                run: run("s1", "r2")
              }),
              2
            )
            assert.strictEqual(
              yield* store.commit({
                sessionId: "s2",
                workflowName: "wf",
                expectedVersion: 0,
                state: { n: 1 },
                run: run("s2", "r1")
              }),
              1
            )
            assert.deepStrictEqual(Option.map(yield* store.load("s2"), (s) => s.state), Option.some({ n: 1 }))
          })
        )
    )

    it.scoped("works on a client that transforms column and table names", () =>
      Effect.gen(function*() {
        const db = yield* dialect.fresh
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          yield* store.commit({
            sessionId: "s1",
            workflowName: "wf",
            userId: "u",
            expectedVersion: 0,
            state: { a: 1 },
            run: run("s1", "r1")
          })
          yield* store.setName("s1", "named")
          assert.deepStrictEqual(
            Option.map(yield* store.load("s1"), (s) => [s.state, s.name, s.userId]),
            Option.some([{ a: 1 }, "named", "u"])
          )
          assert.deepStrictEqual(
            (yield* store.list({ workflowName: "wf", userId: "u" })).sessions.map((s) => s.sessionId),
            ["s1"]
          )
          assert.deepStrictEqual(yield* store.runs("s1", { limit: 1 }), [run("s1", "r1")])
          assert.isTrue(yield* store.remove("s1"))
        }).pipe(
          Effect.provide(
            SqlSessionStore.layer(db.options).pipe(
              Layer.provide(db.transformingClient)
            )
          )
        )
      }))

    it.scoped("a state that is not JSON-serialisable fails with SessionStoreError and writes nothing", () =>
      Effect.gen(function*() {
        const db = yield* dialect.fresh
        const store = yield* storeOf(db.layer())
        for (const state of [{ big: 1n }, () => 1]) {
          const error = yield* Effect.flip(
            store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state })
          )
          assert.instanceOf(error, WorkflowError.SessionStoreError)
        }
        assert.isTrue(Option.isNone(yield* store.load("s1")))
      }))

    it.scoped(
      "run history is one row per run: 2,000 runs never grow the session row, and the records stay bounded",
      () =>
        withStore(({ db, store, sql }) =>
          Effect.gen(function*() {
            const sessions = sql(db.table("sessionflow_sessions"))
            const runsTable = sql(db.table("sessionflow_sessions_runs"))
            yield* store.commit({ sessionId: "big", workflowName: "wf", expectedVersion: 0, state: { counter: 0 } })
            yield* store.commit({
              sessionId: "small",
              workflowName: "wf",
              expectedVersion: 0,
              state: {},
              run: run("small", "s-1")
            })
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
                : store.commit({
                  sessionId: "big",
                  workflowName: "wf",
                  expectedVersion: 0,
                  run: run("big", `run-${i}`)
                })
            }
            // the default bound (keepRuns 1,000): trimmed to the newest 1,000 at the session's 200th state
            // commit (run 1,990), and the 10 runs since
            const [count] = yield* sql<
              { n: number | string }
            >`SELECT COUNT(*) AS n FROM ${runsTable} WHERE session_id = 'big'`
            assert.strictEqual(Number(count!.n), 1010)
            const [row] = yield* sql<{ state: string; version: number; bytes: number | string }>`
            SELECT state, version,
              length(session_id) + length(workflow_name) + length(state) + coalesce(length(session_name), 0) AS bytes
            FROM ${sessions} WHERE session_id = 'big'`
            assert.deepStrictEqual([row!.state, row!.version], ["{\"counter\":2000}", 201])
            // no column of the session row holds the history
            assert.isBelow(Number(row!.bytes), 100)
            // runs are ordered by their sequence, and limit reads the newest
            assert.deepStrictEqual((yield* store.runs("big", { limit: 3 })).map((r) => r.runId), [
              "run-1998",
              "run-1999",
              "run-2000"
            ])
            const all = yield* store.runs("big", {})
            assert.strictEqual(all.length, 1010)
            assert.strictEqual(all[0]!.runId, "run-991")
            assert.deepStrictEqual((yield* store.runs("small", {})).map((r) => r.runId), ["s-1"])
            // removing the session removes its run rows
            assert.isTrue(yield* store.remove("big"))
            const [left] = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${runsTable}`
            assert.strictEqual(Number(left!.n), 1)
          })
        ),
      120_000
    )
  })

  describe(`SqlSessionStore on ${dialect.name}: bad rows and bad input lose nothing`, () => {
    class V1 extends SessionState.Tag("test/sql/V1")<V1>()({ items: Schema.Array(Schema.String) }) {}
    class V2Strict extends SessionState.Tag("test/sql/V2Strict")<V2Strict>()({
      items: Schema.Array(Schema.String),
      owner: Schema.String
    }) {}
    class V2Defaulted extends SessionState.Tag("test/sql/V2Defaulted")<V2Defaulted>()({
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
      "corrupt state text fails load with StateDecodeError naming the session; the row and the others are left alone",
      () =>
        withStore(({ db, store, sql }) =>
          Effect.gen(function*() {
            const sessions = sql(db.table("sessionflow_sessions"))
            yield* commitFirst(store, "good", { id: "good" })
            yield* commitFirst(store, "broken", { id: "broken" })
            yield* sql`UPDATE ${sessions} SET state = ${"{\"items\": [1, 2"} WHERE session_id = 'broken'`
            const error = yield* Effect.flip(store.load("broken"))
            assert.instanceOf(error, WorkflowError.StateDecodeError)
            assert.deepInclude(error, { sessionId: "broken", reason: "corrupt" })
            assert.include(error.message, "'broken'")
            // findSession the same; without the state, the corrupt text does not matter
            const found = yield* Effect.flip(store.findSession("broken"))
            assert.deepInclude(found, { _tag: "StateDecodeError", sessionId: "broken", reason: "corrupt" })
            const bare = yield* store.findSession("broken", { state: false })
            assert.deepInclude(bare, { _tag: "Stored" })
            assert.deepInclude(bare._tag === "Stored" ? bare.session : {}, {
              sessionId: "broken",
              version: 2,
              state: undefined
            })
            // the edit made a new version (2)
            const failed = yield* Effect.flip(
              store.commit({ sessionId: "broken", workflowName: "wf", expectedVersion: 1, state: { id: "x" } })
            )
            assert.instanceOf(failed, WorkflowError.SessionConflict)
            const [row] = yield* sql<
              { state: string; version: number }
            >`SELECT state, version FROM ${sessions} WHERE session_id = 'broken'`
            assert.deepStrictEqual(row, { state: "{\"items\": [1, 2", version: 2 })
            // other sessions, listing and history keep working
            assert.deepStrictEqual(Option.map(yield* store.load("good"), (s) => s.state), Option.some({ id: "good" }))
            assert.deepStrictEqual((yield* store.list({})).sessions.map((s) => s.sessionId).sort(), ["broken", "good"])
            assert.deepStrictEqual((yield* store.runs("broken", {})).map((r) => r.runId), ["r-broken"])
          })
        )
    )

    it.scoped(
      "a stored state that no longer fits the Schema fails typed and is left alone; Schema defaults decode it",
      () =>
        withStore(({ db, sql }) =>
          Effect.gen(function*() {
            const stored = sql<{ state: string; version: number }>`
            SELECT state, version FROM ${sql(db.table("sessionflow_sessions"))} WHERE session_id = 'old'`
            yield* Workflow.run(v1, "first", { sessionId: "old" })
            const before = yield* stored

            const error = yield* Effect.flip(Workflow.run(v2Strict, "second", { sessionId: "old" }))
            assert(error._tag === "StateDecodeError")
            assert.deepInclude(error, { sessionId: "old", reason: "schema" })
            assert.include(error.message, "owner")
            assert.deepStrictEqual(yield* stored, before)

            const out = yield* Workflow.run(v2Defaulted, "third", { sessionId: "old" })
            assert.deepStrictEqual(out.state, { items: ["new", "new"], owner: "nobody" })
            assert.deepStrictEqual(yield* Workflow.getSessionState(v1, "old"), { items: ["new", "new"] })
          })
        )
    )

    it.scoped(
      "a run on a session whose stored JSON is corrupt fails with StateDecodeError " +
        "and overwrites nothing; it can still be inspected, renamed and deleted",
      () =>
        withStore(({ db, sql }) =>
          Effect.gen(function*() {
            const sessions = sql(db.table("sessionflow_sessions"))
            yield* Workflow.run(v1, "first", { sessionId: "corrupt" })
            yield* Workflow.run(v1, "first", { sessionId: "fine" })
            yield* sql`UPDATE ${sessions} SET state = ${"{not json"} WHERE session_id = 'corrupt'`
            const error = yield* Effect.flip(Workflow.run(v1, "second", { sessionId: "corrupt" }))
            assert(error._tag === "StateDecodeError")
            assert.deepInclude(error, { sessionId: "corrupt", reason: "corrupt" })
            const [row] = yield* sql<{ state: string }>`SELECT state FROM ${sessions} WHERE session_id = 'corrupt'`
            assert.strictEqual(row!.state, "{not json")
            assert.deepStrictEqual((yield* Workflow.run(v1, "second", { sessionId: "fine" })).state, {
              items: ["new", "new"]
            })
            // what does not need the state still works on the corrupt session: history (with the failed
            // run recorded), naming, deletion
            const history = yield* Workflow.getRunHistory(v1, "corrupt")
            assert.deepStrictEqual(history.map((r) => [r.input, r.status]), [["first", "completed"], [
              "second",
              "error"
            ]])
            assert.match(history[1]!.error!, /^StateDecodeError: The stored state of session 'corrupt' is corrupt/)
            assert.strictEqual(yield* Workflow.setSessionName(v1, "corrupt", "broken one"), "broken one")
            assert.deepStrictEqual(yield* Workflow.getSessionName(v1, "corrupt"), Option.some("broken one"))
            yield* Workflow.deleteSession(v1, "corrupt")
            assert.strictEqual((yield* Effect.flip(Workflow.getSessionState(v1, "corrupt")))._tag, "SessionNotFound")
          })
        )
    )

    it.scoped(
      "a stored state written as null, [1,2] or 5 by raw SQL is a " +
        "StateDecodeError with or without a patch; nothing is overwritten",
      () =>
        withStore(({ db, sql }) =>
          Effect.gen(function*() {
            const sessions = sql(db.table("sessionflow_sessions"))
            for (const [i, raw] of ["null", "[1,2]", "5"].entries()) {
              const sessionId = `raw-${i}`
              yield* Workflow.run(untyped, "first", { sessionId })
              yield* sql`UPDATE ${sessions} SET state = ${raw} WHERE session_id = ${sessionId}`
              const patched = yield* Effect.flip(
                Workflow.run(untyped, "x", { sessionId, sessionState: { items: ["patched"] } })
              )
              assert.strictEqual(patched._tag, "StateDecodeError")
              const plain = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId }))
              assert.strictEqual(plain._tag, "StateDecodeError")
              const [row] = yield* sql<
                { state: string; version: number }
              >`SELECT state, version FROM ${sessions} WHERE session_id = ${sessionId}`
              // the edit made version 2; nothing was committed over it
              assert.deepStrictEqual(row, { state: raw, version: 2 })
              // both failed runs are recorded
              assert.deepStrictEqual((yield* Workflow.getRunHistory(untyped, sessionId)).map((r) => r.status), [
                "completed",
                "error",
                "error"
              ])
            }
          })
        )
    )

    it.scoped(
      "a raw edit of a state (an UPDATE that leaves the version alone) is a new version: a " +
        "process that cached the session runs on the edit, and a corrupt edit is a StateDecodeError",
      () =>
        withStore(({ db, sql }) =>
          Effect.gen(function*() {
            const sessions = sql(db.table("sessionflow_sessions"))
            const row = sql<
              { state: string; version: number | string }
            >`SELECT state, version FROM ${sessions} WHERE session_id = 'edited'`
            // the second run finds the session in this process's cache
            yield* Workflow.run(v1, "first", { sessionId: "edited" })
            yield* Workflow.run(v1, "second", { sessionId: "edited" })
            yield* sql`UPDATE ${sessions} SET state = ${
              JSON.stringify({ items: ["fixed"] })
            } WHERE session_id = 'edited'`
            assert.strictEqual(Number((yield* row)[0]!.version), 3)
            assert.deepStrictEqual((yield* Workflow.run(v1, "third", { sessionId: "edited" })).state, {
              items: ["fixed", "new"]
            })
            // an edit that does not fit the Schema fails the cached process's run as it would a fresh one's
            yield* sql`UPDATE ${sessions} SET state = ${JSON.stringify({ items: [1] })} WHERE session_id = 'edited'`
            const error = yield* Effect.flip(Workflow.run(v1, "fourth", { sessionId: "edited" }))
            assert(error._tag === "StateDecodeError")
            assert.deepInclude(error, { sessionId: "edited", reason: "schema" })
            const [after] = yield* row
            assert.deepStrictEqual([after!.state, Number(after!.version)], [JSON.stringify({ items: [1] }), 5])
          })
        )
    )

    it.scoped(
      "session and run ids a store could not give back exactly (a lone " +
        "surrogate, NUL, 300 characters) are refused before anything is stored",
      () =>
        withStore(({ db, sql }) =>
          Effect.gen(function*() {
            for (
              const [sessionId, reason] of [["bad-\ud800-x", "malformed"], ["a\u0000b", "control-character"], [
                "x".repeat(300),
                "too-long"
              ]] as const
            ) {
              const error = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId }))
              assert.deepInclude(error, { _tag: "InvalidSessionId", reason })
              const byRunId = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId: "fine", runId: sessionId }))
              assert.deepInclude(byRunId, { _tag: "InvalidRunId", runId: sessionId, reason })
            }
            const [count] = yield* sql<{ n: number | string }>`SELECT count(*) AS n FROM ${
              sql(db.table("sessionflow_sessions"))
            }`
            assert.strictEqual(Number(count!.n), 0)
            // a well-formed id with astral characters round-trips exactly
            yield* Workflow.run(untyped, "x", { sessionId: "emoji-😀" })
            assert.deepStrictEqual((yield* Workflow.listSessions(untyped)).sessions.map((s) => s.sessionId), [
              "emoji-😀"
            ])
          })
        )
    )

    it.scoped("watch fails with StateDecodeError naming the session when the stored state is not JSON", () =>
      withStore(({ db, store, sql }) =>
        Effect.gen(function*() {
          yield* store.commit({ sessionId: "broken", workflowName: "wf", expectedVersion: 0, state: { n: 1 } })
          yield* sql`UPDATE ${
            sql(db.table("sessionflow_sessions"))
          } SET state = ${"{not json"} WHERE session_id = 'broken'`
          const error = yield* Effect.flip(Stream.runDrain(store.watch("broken")))
          assert.instanceOf(error, WorkflowError.StateDecodeError)
          assert.deepInclude(error, { sessionId: "broken", reason: "corrupt" })
        })
      ))

    it.scoped(
      "watch with a pollInterval that is not a positive, finite duration fails with a SessionStoreError saying so",
      () =>
        Effect.gen(function*() {
          const db = yield* dialect.fresh
          const store = yield* storeOf(db.layer())
          yield* store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { n: 1 } })
          const invalid: ReadonlyArray<Duration.DurationInput> = [
            "0 millis",
            -5,
            Infinity,
            "soon" as Duration.DurationInput
          ]
          for (const pollInterval of invalid) {
            const error = yield* Effect.flip(Stream.runDrain(store.watch("s1", { pollInterval })))
            assert.instanceOf(error, WorkflowError.SessionStoreError)
            assert.strictEqual((error as WorkflowError.SessionStoreError).method, "watch")
            assert.include(error.message, "invalid pollInterval")
          }
        })
    )
  })
}

describe("SqlSessionStore.make", () => {
  it.effect("on a client of another database is a SessionStoreError saying so", () =>
    Effect.gen(function*() {
      const client = { onDialectOrElse: (options: { readonly orElse: () => unknown }) => options.orElse() }
      const error = yield* Effect.flip(
        SqlSessionStore.make().pipe(
          Effect.provideService(SqlClient.SqlClient, {
            withoutTransforms: () => client
          } as unknown as SqlClient.SqlClient)
        )
      )
      assert.instanceOf(error, WorkflowError.SessionStoreError)
      assert.include(error.message, "neither SQLite nor PostgreSQL")
    }))
})
