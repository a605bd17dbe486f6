import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import {
  Cause,
  Clock,
  Config,
  ConfigProvider,
  Deferred,
  type Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  Option,
  Queue,
  Schedule,
  Stream
} from "effect"
import { run } from "../store-sql/dialects.js"
import {
  cancelLockWaiter,
  clientLayer,
  freshSchema,
  listening,
  noteWrites,
  notifiedWatcher,
  tcpProxy,
  terminateLockWaiter,
  testUrl,
  withClient
} from "./pg.js"

/** The store on the test's own client (for assertions in SQL), in `schema`. */
const storeWithClient = (schema: string, options: PgSessionStore.StoreOptions = {}) =>
  PgSessionStore.layerStore({ schema, ...options }).pipe(Layer.provideMerge(clientLayer))

const tablesIn = (schema: string) =>
  withClient((sql) =>
    sql<
      { table_name: string }
    >`SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema} ORDER BY table_name`
  ).pipe(Effect.map((rows) => rows.map((row) => row.table_name)))

const commitFirst = (store: SessionStore.Service, sessionId: string, state: unknown) =>
  store.commit({ sessionId, workflowName: "wf", expectedVersion: 0, state, run: run(sessionId, `r-${sessionId}`) })

/**
 * Another connection locks one row (`column = value` of `table`) until `release` completes; the
 * fiber that holds it is `holder`.
 */
const holdRow = (table: string, column: string, value: string) =>
  Effect.gen(function*() {
    const locked = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const holder = yield* withClient((sql) =>
      Effect.gen(function*() {
        yield* sql`SELECT 1 FROM ${sql(table)} WHERE ${sql(column)} = ${value} FOR UPDATE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      }).pipe(sql.withTransaction)
    ).pipe(Effect.fork)
    yield* Deferred.await(locked)
    return { holder, release }
  })

describe("PgSessionStore", () => {
  it.scoped("a schema that does not exist yet is created with the tables", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const inner = `${schema}_inner`
      yield* Effect.addFinalizer(() =>
        Effect.orDie(withClient((sql) => sql`DROP SCHEMA IF EXISTS ${sql(inner)} CASCADE`))
      )
      yield* Effect.provide(
        Effect.void,
        PgSessionStore.layer({ url: testUrl, schema: inner, table: "workflow_session" })
      )
      assert.deepStrictEqual(yield* tablesIn(inner), [
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
    }))

  it.scoped("invalid table or schema names fail with a SessionStoreError that says why, and create nothing", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      for (
        const options of [{ table: "Sessions" }, { table: "pg_sessions" }, { table: "drop table x;" }, {
          table: "x".repeat(49)
        }]
      ) {
        const error = yield* Effect.flip(
          Effect.provide(Effect.void, PgSessionStore.layer({ url: testUrl, schema, ...options }))
        )
        assert.instanceOf(error, WorkflowError.SessionStoreError)
        assert.include(error.message, "invalid table name")
      }
      const error = yield* Effect.flip(
        Effect.provide(Effect.void, PgSessionStore.layer({ url: testUrl, schema: "Bad-Schema" }))
      )
      assert.include(error.message, "invalid schema name")
      assert.deepStrictEqual(yield* tablesIn(schema), [])
    }))

  it.effect("a database that cannot be reached fails with a SessionStoreError naming it, without its password", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.provide(
          Effect.void,
          PgSessionStore.layer({ url: "postgres://someone:s3cret@127.0.0.1:1/nowhere", connectTimeout: "2 seconds" })
        )
      )
      assert.instanceOf(error, WorkflowError.SessionStoreError)
      assert.include(error.message, "cannot connect to PostgreSQL at postgres://someone@127.0.0.1:1/nowhere")
      assert.notInclude(error.message, "s3cret")
    }))

  it.scoped("layerConfig reads DATABASE_URL, or PGHOST, PGPORT, PGDATABASE and PGUSER", () =>
    Effect.gen(function*() {
      const url = new URL(testUrl)
      const providers = [
        ConfigProvider.fromMap(new Map([["DATABASE_URL", testUrl]])),
        ConfigProvider.fromMap(
          new Map([
            ["PGHOST", url.hostname],
            ["PGPORT", url.port || "5432"],
            ["PGDATABASE", url.pathname.slice(1)],
            ["PGUSER", decodeURIComponent(url.username)],
            ...(url.password === "" ? [] : [["PGPASSWORD", decodeURIComponent(url.password)] as const])
          ])
        )
      ]
      for (const provider of providers) {
        const current = yield* Effect.flatMap(PgClient.PgClient, (sql) =>
          sql<{ db: string }>`SELECT current_database() AS db`).pipe(
            Effect.provide(clientLayer)
          )
        const schema = yield* freshSchema
        const session = yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          yield* commitFirst(store, "configured", { ok: true })
          return yield* store.load("configured")
        }).pipe(
          Effect.provide(
            PgSessionStore.layerConfig(Config.map(PgSessionStore.config, (options) => ({ ...options, schema })))
          ),
          Effect.withConfigProvider(provider)
        )
        assert.deepStrictEqual(
          Option.map(session, (s) =>
            s.state),
          Option.some({ ok: true })
        )
        assert.strictEqual(current[0]!.db, url.pathname.slice(1))
      }
    }))

  // a store that keeps versions commits a whole state in a transaction (it reads the version before)
  it.scoped(
    "a run's commit that keeps no versions is one statement: its " +
      "state (a new session's too), its record and the notification",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const sql = yield* PgClient.PgClient
          yield* commitFirst(store, "s1", { n: 1 })
          // every row written notes the statement that wrote it
          const notes = yield* noteWrites(sql, schema, ["sessionflow_sessions", "sessionflow_sessions_runs"])
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
          const rows = yield* notes
          assert.deepStrictEqual(rows.map((r) => r.what), ["sessionflow_sessions", "sessionflow_sessions_runs"])
          assert.strictEqual(rows[0]!.at.getTime(), rows[1]!.at.getTime())
          // a new session's first commit too
          assert.strictEqual(yield* commitFirst(store, "s2", { n: 1 }), 1)
          const created = yield* notes
          assert.deepStrictEqual(created.map((r) => r.what), ["sessionflow_sessions", "sessionflow_sessions_runs"])
          assert.strictEqual(created[0]!.at.getTime(), created[1]!.at.getTime())
          // a commit that fails a check writes nothing and says which check failed
          const stale = yield* Effect.flip(
            store.commit({
              sessionId: "s1",
              workflowName: "wf",
              expectedVersion: 1,
              state: { n: 3 },
              run: run("s1", "r3")
            })
          )
          assert.strictEqual(stale._tag, "SessionConflict")
          const again = yield* Effect.flip(commitFirst(store, "s2", { n: 9 }))
          assert.strictEqual(again._tag, "SessionConflict")
          assert.deepStrictEqual(yield* notes, [])
        }).pipe(Effect.provide(storeWithClient(schema, { history: { keep: "none" } })))
      })
  )

  it.scoped(
    "a new session's first commit that keeps versions is one statement: " +
      "its state, version 1 kept whole, its record and the notification",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.SessionStore
          const sql = yield* PgClient.PgClient
          yield* commitFirst(store, "s0", { n: 0 })
          const notes = yield* noteWrites(sql, schema, [
            "sessionflow_sessions",
            "sessionflow_sessions_runs",
            "sessionflow_sessions_versions"
          ])
          assert.strictEqual(
            yield* store.commit({
              sessionId: "s1",
              workflowName: "wf",
              expectedVersion: 0,
              state: { n: 1, items: ["a"] },
              run: run("s1", "r1")
            }),
            1
          )
          const rows = yield* notes
          assert.deepStrictEqual(rows.map((r) => r.what), [
            "sessionflow_sessions",
            "sessionflow_sessions_runs",
            "sessionflow_sessions_versions"
          ])
          // one statement: one statement time, one transaction
          assert.strictEqual(new Set(rows.map((r) => r.at.getTime())).size, 1)
          assert.strictEqual(new Set(rows.map((r) => r.xid)).size, 1)
          const kept = yield* store.versions("s1")
          assert.deepStrictEqual(kept.map((v) => [v.version, v.runId, v.changed]), [[1, "r1", ["n", "items"]]])
          assert.deepStrictEqual(yield* store.loadVersion("s1", 1), Option.some({ n: 1, items: ["a"] }))
          // the next commit builds its version on it
          assert.strictEqual(
            yield* store.commit({
              sessionId: "s1",
              workflowName: "wf",
              expectedVersion: 1,
              state: { n: 2, items: ["a"] },
              run: run("s1", "r2")
            }),
            2
          )
          assert.deepStrictEqual(yield* store.loadVersion("s1", 1), Option.some({ n: 1, items: ["a"] }))
          assert.deepStrictEqual((yield* store.versions("s1")).map((v) => [v.version, v.changed]), [
            [1, ["n", "items"]],
            [
              2,
              ["n"]
            ]
          ])
          // a taken id writes nothing and says so
          const again = yield* Effect.flip(commitFirst(store, "s1", { n: 9 }))
          assert.strictEqual(again._tag, "SessionConflict")
          assert.strictEqual((yield* store.versions("s1")).length, 2)
        }).pipe(Effect.provide(storeWithClient(schema, {})))
      })
  )

  it.live(
    "losing the connection mid-commit (its backend terminated) fails typed, writes nothing, and the next commit works",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        const applicationName = `sessionflow-${crypto.randomUUID()}`
        const context = yield* Layer.build(PgSessionStore.layer({ url: testUrl, schema, applicationName }))
        const store = context.unsafeMap.get(SessionStore.SessionStore.key) as SessionStore.Service
        yield* commitFirst(store, "s1", { n: 1 })
        const active: SessionStore.ActiveRun = {
          runId: "r2",
          sessionId: "s1",
          workflowName: "wf",
          status: "running",
          input: "go",
          owner: store.owner,
          leaseExpiresAt: Date.now() + 60_000,
          baseVersion: 1,
          durability: "run",
          startedAt: 1,
          updatedAt: 1
        }
        assert.isTrue(Option.isNone(yield* store.startRun(active)))
        const commitR2 = store.commit({
          sessionId: "s1",
          workflowName: "wf",
          expectedVersion: 1,
          state: { n: 2 },
          run: run("s1", "r2"),
          ends: { runId: "r2", owner: store.owner }
        })

        // another connection holds the unfinished run's row: the commit waits there (its first write)
        const { holder, release } = yield* holdRow(`${schema}.sessionflow_sessions_active`, "run_id", "r2")
        const committing = yield* Effect.fork(commitR2)
        yield* terminateLockWaiter(applicationName)
        const exit = yield* Fiber.await(committing)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        assert.isTrue(Exit.isFailure(exit))
        const error = yield* Effect.flip(exit)
        assert.instanceOf(error, WorkflowError.SessionStoreError)
        assert.strictEqual((error as WorkflowError.SessionStoreError).method, "commit")

        // nothing half-written: the state, the history and the unfinished run are as before
        assert.deepStrictEqual(
          Option.map(yield* store.load("s1"), (s) => [s.state, s.version]),
          Option.some([{ n: 1 }, 1])
        )
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r-s1"])
        assert.strictEqual((yield* store.activeRuns({ sessionId: "s1" })).length, 1)

        // and the same store commits the run now
        assert.strictEqual(yield* commitR2, 2)
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r-s1", "r2"])
        assert.deepStrictEqual(yield* store.activeRuns({ sessionId: "s1" }), [])
      })),
    60_000
  )
})

describe("PgSessionStore: a statement cancelled from outside", () => {
  // what @effect/sql-pg's cancel of another caller's interrupted query does when it reaches the
  // connection late: the statement it cancels is not the one it meant, and is run again
  it.live(
    "a commit whose statement is cancelled by pg_cancel_backend is run again and lands once",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        const applicationName = `sessionflow-${crypto.randomUUID()}`
        const context = yield* Layer.build(PgSessionStore.layer({ url: testUrl, schema, applicationName }))
        const store = context.unsafeMap.get(SessionStore.SessionStore.key) as SessionStore.Service
        yield* commitFirst(store, "s1", { n: 1 })
        const { holder, release } = yield* holdRow(`${schema}.sessionflow_sessions`, "session_id", "s1")
        const committing = yield* Effect.fork(
          store.commit({
            sessionId: "s1",
            workflowName: "wf",
            expectedVersion: 1,
            state: { n: 2 },
            run: run("s1", "r2")
          })
        )
        yield* cancelLockWaiter(applicationName)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        assert.strictEqual(yield* Fiber.join(committing), 2)
        assert.deepStrictEqual(
          Option.map(yield* store.load("s1"), (s) => [s.state, s.version]),
          Option.some([{ n: 2 }, 2])
        )
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["r-s1", "r2"])
      })),
    60_000
  )
})

describe("PgSessionStore: a lost connection", () => {
  const counter = Workflow.make({
    name: "counter",
    sessionState: { n: 0 },
    steps: [
      Step.make("count", () => SessionState.update((s) => ({ n: (s.n as number) + 1 })).pipe(Effect.as("counted")))
    ]
  })

  it.live(
    "the run whose connection is killed mid-commit fails typed; the next run succeeds",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        const applicationName = `sessionflow-${crypto.randomUUID()}`
        const context = yield* Layer.build(PgSessionStore.layer({ url: testUrl, schema, applicationName }))
        // untracked runs (no run id): the usual commit, one statement
        const runCounter = Workflow.run(counter, "go", { sessionId: "s1" }).pipe(Effect.provide(context))
        yield* runCounter
        for (let round = 1; round <= 3; round++) {
          // another connection holds the session's row: the run's commit waits for it
          const { holder, release } = yield* holdRow(`${schema}.sessionflow_sessions`, "session_id", "s1")
          // the killed run, and at once (on the same pool) the next one
          const runs = yield* Effect.fork(Effect.zip(Effect.flip(runCounter), runCounter))
          yield* terminateLockWaiter(applicationName)
          yield* Effect.sleep("50 millis")
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(holder)
          const [killed, next] = yield* Fiber.join(runs)
          assert.strictEqual(killed._tag, "SessionStoreError")
          assert.deepStrictEqual(next.state, { n: round + 1 })
        }
      })),
    60_000
  )
})

/**
 * A store whose every connection goes through a TCP proxy (`proxy`), with
 * `relistenTimeout`, watching session "w" once it is at version 1 (polling
 * once an hour: what arrives was notified or read on listening again); and
 * `commit(n)`, committing version `n` through another store that connects
 * directly. `take` takes the watch's next change (the promptly: 10 seconds),
 * `watchEnded` completes with the watch's exit.
 */
const proxiedWatcher = (relistenTimeout: Duration.DurationInput) =>
  Effect.gen(function*() {
    const schema = yield* freshSchema
    const proxy = yield* tcpProxy
    const applicationName = `sessionflow-${crypto.randomUUID()}`
    const open = (url: string, options: Partial<PgSessionStore.Options>) =>
      Effect.map(
        Layer.build(PgSessionStore.layer({ url, schema, ...options })),
        (context) => context.unsafeMap.get(SessionStore.SessionStore.key) as SessionStore.Service
      )
    const writing = yield* open(testUrl, { applicationName: "sessionflow-test-writer" })
    const watching = yield* open(proxy.url, { applicationName, relistenTimeout })
    const commit = (n: number) =>
      writing.commit({
        sessionId: "w",
        workflowName: "wf",
        expectedVersion: n - 1,
        state: { n },
        run: run("w", `r${n}`)
      })
    yield* commit(1)
    const changes = yield* Queue.unbounded<SessionStore.SessionChange>()
    const watchEnded = yield* Deferred.make<Exit.Exit<void, unknown>>()
    yield* Effect.forkScoped(
      Stream.runForEach(watching.watch("w", { pollInterval: "1 hour" }), (change) => Queue.offer(changes, change)).pipe(
        Effect.exit,
        Effect.flatMap((exit) => Deferred.succeed(watchEnded, exit))
      )
    )
    const take = Queue.take(changes).pipe(
      Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no change arrived within 10 seconds") })
    )
    yield* listening(applicationName)
    return { commit, proxy, take, watchEnded }
  })

describe("PgSessionStore.watch", () => {
  it.live(
    "hears of another pool's commits through LISTEN/NOTIFY, without polling",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        const open = Effect.map(
          Layer.build(PgSessionStore.layer({ url: testUrl, schema })),
          (context) => context.unsafeMap.get(SessionStore.SessionStore.key) as SessionStore.Service
        )
        const [watching, writing] = [yield* open, yield* open]
        yield* commitFirst(writing, "watched", { n: 1 })
        const take = yield* notifiedWatcher(watching, "watched")
        assert.strictEqual((yield* take).version, 1)
        // the watcher listens once its first read is done; commits are notified from then on
        for (let n = 2; n <= 4; n++) {
          yield* Effect.sleep("200 millis")
          yield* writing.commit({
            sessionId: "watched",
            workflowName: "wf",
            expectedVersion: n - 1,
            state: { n },
            run: run("watched", `r${n}`)
          })
          const change = yield* take
          assert.deepStrictEqual([change.version, change.state, change.runId], [n, { n }, `r${n}`])
        }
      })),
    60_000
  )

  it.live(
    "a watcher whose LISTEN connection is killed listens again: the versions " +
      "committed meanwhile and later ones arrive at once, and a new watch works",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        const applicationName = `sessionflow-${crypto.randomUUID()}`
        const open = (name: string) =>
          Effect.map(
            Layer.build(PgSessionStore.layer({ url: testUrl, schema, applicationName: name })),
            (context) => context.unsafeMap.get(SessionStore.SessionStore.key) as SessionStore.Service
          )
        const watching = yield* open(applicationName)
        const writing = yield* open("sessionflow-test-writer")
        const commit = (n: number) =>
          writing.commit({
            sessionId: "w",
            workflowName: "wf",
            expectedVersion: n - 1,
            state: { n },
            run: run("w", `r${n}`)
          })
        yield* commit(1)
        // the watchers poll once an hour: what arrives within seconds was notified
        const promptly = <A, E>(take: Effect.Effect<A, E>) =>
          take.pipe(Effect.timeoutFail({
            duration: "5 seconds",
            onTimeout: () => new Error("no change arrived within 5 seconds")
          }))
        const take = yield* notifiedWatcher(watching, "w")
        assert.strictEqual((yield* take).version, 1)
        const listener = yield* listening(applicationName)
        yield* withClient((sql) => sql`SELECT pg_terminate_backend(${listener.pid})`)
        // committed while the watcher has no connection: it arrives once it listens again
        yield* commit(2)
        const meanwhile = yield* promptly(take)
        assert.deepStrictEqual([meanwhile.version, meanwhile.skipped, meanwhile.state], [2, 0, { n: 2 }])
        for (let n = 3; n <= 4; n++) {
          yield* commit(n)
          assert.strictEqual((yield* promptly(take)).version, n)
        }
        // a new watch in the same process starts from the current version and hears of commits
        const again = yield* notifiedWatcher(watching, "w")
        assert.strictEqual((yield* promptly(again)).version, 4)
        yield* Effect.sleep("200 millis")
        yield* commit(5)
        assert.strictEqual((yield* promptly(again)).version, 5)
        assert.strictEqual((yield* promptly(take)).version, 5)
      })),
    60_000
  )

  it.live(
    "a watcher whose connection to the database is cut, and stays " +
      "cut, fails with a SessionStoreError once relistenTimeout has passed",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { proxy, take, watchEnded } = yield* proxiedWatcher("1500 millis")
        assert.strictEqual((yield* take).version, 1)
        const cutAt = yield* Clock.currentTimeMillis
        yield* proxy.cut
        const exit = yield* Deferred.await(watchEnded).pipe(
          Effect.timeoutFail({
            duration: "20 seconds",
            onTimeout: () => new Error("the watch neither failed nor ended")
          })
        )
        const failedAfter = (yield* Clock.currentTimeMillis) - cutAt
        const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        assert.isTrue(Option.isSome(error) && error.value instanceof WorkflowError.SessionStoreError, String(exit))
        const failure = (error as Option.Some<WorkflowError.SessionStoreError>).value
        assert.strictEqual(failure.method, "watch")
        // its listening connection, or a read under way when the connection was cut: tried again until the deadline
        assert.match(failure.description, /could not (listen|read) again within 1s 500ms/)
        // it kept trying until the deadline: not failed at the first refused connection
        assert.isAtLeast(failedAfter, 1500)
      })),
    60_000
  )

  it.live(
    "a watcher whose connection comes back before relistenTimeout gets the versions " +
      "committed meanwhile (coalesced ones counted in skipped), then hears of later commits",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { commit, proxy, take, watchEnded } = yield* proxiedWatcher("20 seconds")
        assert.strictEqual((yield* take).version, 1)
        yield* proxy.cut
        // committed while no connection of the watcher's store can reach the database
        yield* commit(2)
        yield* commit(3)
        yield* Effect.sleep("700 millis")
        assert.isFalse(yield* Deferred.isDone(watchEnded))
        yield* proxy.restore
        const versions: Array<number> = []
        let covered = 0
        while (versions.at(-1) !== 3) {
          const change = yield* take
          versions.push(change.version)
          covered += 1 + change.skipped
        }
        // every version after 1 is told of: delivered, or counted in a delivered change's skipped
        assert.strictEqual(covered, 2, String(versions))
        assert.deepStrictEqual(versions, [...versions].sort((a, b) => a - b))
        yield* Effect.sleep("200 millis")
        yield* commit(4)
        const later = yield* take
        assert.deepStrictEqual([later.version, later.skipped, later.state], [4, 0, { n: 4 }])
        assert.isFalse(yield* Deferred.isDone(watchEnded))
      })),
    60_000
  )

  it.live(
    "a watcher that cannot listen again within relistenTimeout fails " +
      "with a SessionStoreError: it neither hangs nor polls quietly",
    () =>
      Effect.scoped(Effect.gen(function*() {
        // a database of the test's own, which then refuses every connection
        const database = `sf_watch_${process.pid}_${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`
        yield* Effect.acquireRelease(
          withClient((sql) => sql.unsafe(`CREATE DATABASE ${database}`)),
          () =>
            Effect.orDie(withClient((sql) =>
              Effect.zipRight(
                sql.unsafe(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`),
                sql.unsafe(`DROP DATABASE ${database} WITH (FORCE)`)
              )
            ))
        )
        const url = new URL(testUrl)
        url.pathname = `/${database}`
        const store = yield* Effect.map(
          Layer.build(PgSessionStore.layer({ url: url.href, relistenTimeout: "1 second" })),
          (context) => context.unsafeMap.get(SessionStore.SessionStore.key) as SessionStore.Service
        )
        yield* commitFirst(store, "w", { n: 1 })
        const ended = yield* Deferred.make<Exit.Exit<void, unknown>>()
        const seen = yield* Queue.unbounded<number>()
        yield* Effect.forkScoped(
          Stream.runForEach(store.watch("w", { pollInterval: "1 hour" }), (change) => Queue.offer(seen, change.version))
            .pipe(
              Effect.exit,
              Effect.flatMap((exit) => Deferred.succeed(ended, exit))
            )
        )
        assert.strictEqual(yield* Queue.take(seen), 1)
        // wait until it listens, then shut the database: no connection comes back
        yield* withClient((sql) =>
          Effect.gen(function*() {
            yield* sql<
              { pid: number }
            >`SELECT pid FROM pg_stat_activity WHERE datname = ${database} AND query LIKE 'LISTEN %'`.pipe(
              Effect.flatMap((rows) => Option.fromNullable(rows[0])),
              Effect.retry(Schedule.spaced("20 millis")),
              Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no LISTEN connection") })
            )
            yield* sql.unsafe(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`)
            yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${database}`
          })
        )
        const exit = yield* Deferred.await(ended).pipe(
          Effect.timeoutFail({
            duration: "20 seconds",
            onTimeout: () => new Error("the watch neither failed nor ended")
          })
        )
        assert.isTrue(Exit.isFailure(exit), String(exit))
        const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        assert.isTrue(Option.isSome(error) && error.value instanceof WorkflowError.SessionStoreError, String(exit))
        const failure = (error as Option.Some<WorkflowError.SessionStoreError>).value
        assert.strictEqual(failure.method, "watch")
        assert.include(failure.description, "could not listen again within 1s")
        // nothing arrived after the starting point
        assert.strictEqual(yield* Queue.size(seen), 0)
      })),
    60_000
  )
})
