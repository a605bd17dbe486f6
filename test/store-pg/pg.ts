/**
 * The local PostgreSQL the tests run against (`SESSIONFLOW_TEST_DATABASE_URL`,
 * else `postgres://postgres@127.0.0.1:5432/test`), and fresh schemas in it so
 * that tests never see each other's data.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import type { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import type { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Context, Effect, Layer, Option, Queue, Redacted, Schedule, type Scope, Stream } from "effect"

export const testUrl = process.env.SESSIONFLOW_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

/** A client of its own for the test's assertions and sabotage. */
export const clientLayer: Layer.Layer<PgClient.PgClient, SqlError.SqlError> = Layer.scopedContext(
  Effect.map(PgClient.make({ url: Redacted.make(testUrl), applicationName: "sessionflow-test" }), (client) =>
    Context.make(PgClient.PgClient, client))
).pipe(Layer.provide(Reactivity.layer))

/** Runs `f` on a short-lived client. */
export const withClient = <A, E>(f: (sql: PgClient.PgClient) => Effect.Effect<A, E>): Effect.Effect<A, E | SqlError.SqlError> =>
  Effect.scoped(Effect.flatMap(PgClient.PgClient, f).pipe(Effect.provide(clientLayer)))

/** A schema name no other test uses. */
export const uniqueSchema = (): string => `sf_test_${process.pid}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`

/** A fresh, empty schema, dropped (with everything in it) when the scope closes. */
export const freshSchema: Effect.Effect<string, SqlError.SqlError, Scope.Scope> = Effect.acquireRelease(
  Effect.gen(function*() {
    const schema = uniqueSchema()
    yield* withClient((sql) => sql`CREATE SCHEMA ${sql(schema)}`)
    return schema
  }),
  (schema) => Effect.orDie(withClient((sql) => sql`DROP SCHEMA ${sql(schema)} CASCADE`))
)

/** The store on its own pool, in a fresh schema dropped after the test. */
export const storeLayer = (options: Omit<PgSessionStore.Options, "schema" | "url"> = {}) =>
  Layer.unwrapScoped(Effect.map(freshSchema, (schema) => PgSessionStore.layer({ url: testUrl, schema, ...options })))

/**
 * Watches `sessionId` on `store` for the scope, reading only at the start and
 * when notified (its poll interval is an hour): the effect that takes its
 * next change (failing after 30 seconds without one).
 */
export const notifiedWatcher = (store: SessionStore.Service, sessionId: string) =>
  Effect.gen(function*() {
    const changes = yield* Queue.unbounded<SessionStore.SessionChange>()
    yield* Effect.forkScoped(
      Stream.runForEach(store.watch(sessionId, { pollInterval: "1 hour" }), (change) => Queue.offer(changes, change))
    )
    return Queue.take(changes).pipe(
      Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("no change arrived") })
    )
  })

/**
 * Terminates (`pg_terminate_backend`) the backend of the pool named
 * `applicationName` that waits for a lock, once one does (failing after 20
 * seconds without one): a connection lost mid-statement.
 */
export const terminateLockWaiter = (applicationName: string) =>
  withClient((sql) =>
    Effect.gen(function*() {
      const blocked = sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
WHERE application_name = ${applicationName} AND wait_event_type = 'Lock'`
      const victim = yield* blocked.pipe(
        Effect.flatMap((rows) => Option.fromNullable(rows[0])),
        Effect.retry(Schedule.spaced("20 millis")),
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("no statement waited for the lock") })
      )
      yield* sql`SELECT pg_terminate_backend(${victim.pid})`
    })
  )
