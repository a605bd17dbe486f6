/**
 * The local PostgreSQL the tests run against (`SESSIONFLOW_TEST_DATABASE_URL`,
 * else `postgres://postgres@127.0.0.1:5432/test`), and fresh schemas in it so
 * that tests never see each other's data (or fresh databases on its server,
 * for what a schema does not separate).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import type { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import type { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Context, Effect, Layer, Option, Queue, Redacted, Schedule, type Scope, Stream } from "effect"
import * as net from "node:net"

export const testUrl = process.env.SESSIONFLOW_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

/** A client of its own for the test's assertions and sabotage. */
export const clientLayer: Layer.Layer<PgClient.PgClient, SqlError.SqlError> = Layer.scopedContext(
  Effect.map(
    PgClient.make({ url: Redacted.make(testUrl), applicationName: "sessionflow-test" }),
    (client) => Context.make(PgClient.PgClient, client)
  )
).pipe(Layer.provide(Reactivity.layer))

/** Runs `f` on a short-lived client. */
export const withClient = <A, E>(
  f: (sql: PgClient.PgClient) => Effect.Effect<A, E>
): Effect.Effect<A, E | SqlError.SqlError> =>
  Effect.scoped(Effect.flatMap(PgClient.PgClient, f).pipe(Effect.provide(clientLayer)))

/** A schema name no other test uses. */
const uniqueSchema = (): string => `sf_test_${process.pid}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`

/** A fresh, empty schema, dropped (with everything in it) when the scope closes. */
export const freshSchema: Effect.Effect<string, SqlError.SqlError, Scope.Scope> = Effect.acquireRelease(
  Effect.gen(function*() {
    const schema = uniqueSchema()
    yield* withClient((sql) => sql`CREATE SCHEMA ${sql(schema)}`)
    return schema
  }),
  (schema) => Effect.orDie(withClient((sql) => sql`DROP SCHEMA ${sql(schema)} CASCADE`))
)

/** The URL of `database` on the test's server (the test's URL with another database). */
export const databaseUrl = (database: string): string => {
  const url = new URL(testUrl)
  url.pathname = `/${database}`
  return url.href
}

/**
 * A fresh, empty database on the test's server (its name), dropped when the
 * scope closes even if connections to it are left (`WITH (FORCE)`,
 * PostgreSQL 13 or later). For what is the database's, not a schema's:
 * PostgreSQL's advisory locks. The role of the test's URL must be allowed
 * to create databases.
 */
export const freshDatabase: Effect.Effect<string, SqlError.SqlError, Scope.Scope> = Effect.acquireRelease(
  Effect.gen(function*() {
    const database = uniqueSchema()
    yield* withClient((sql) => sql`CREATE DATABASE ${sql(database)}`)
    return database
  }),
  (database) => Effect.orDie(withClient((sql) => sql`DROP DATABASE ${sql(database)} WITH (FORCE)`))
)

/** The store on its own pool, in a fresh schema dropped after the test. */
export const storeLayer = (options: Omit<PgSessionStore.Options, "schema" | "url"> = {}) =>
  Layer.unwrapScoped(Effect.map(freshSchema, (schema) => PgSessionStore.layer({ url: testUrl, schema, ...options })))

/** A row written, as `noteWrites` noted it: its table, when its statement started, its transaction. */
export interface WrittenNote {
  readonly what: string
  readonly at: Date
  readonly xid: string
}

/**
 * Notes every row inserted or updated in `tables` (of `schema`) by a trigger:
 * the effect that takes the notes made since it last ran, ordered by table,
 * so that a test can tell how many statements (one statement time) and
 * transactions a write took.
 */
export const noteWrites = (sql: PgClient.PgClient, schema: string, tables: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const written = sql(`${schema}.written`)
    yield* sql.unsafe(`CREATE TABLE ${schema}.written (what TEXT, at TIMESTAMPTZ, xid BIGINT)`)
    yield* sql.unsafe(`CREATE FUNCTION ${schema}.note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ${schema}.written VALUES (TG_TABLE_NAME, statement_timestamp(), txid_current()); RETURN NEW; END $$`)
    for (const table of tables) {
      yield* sql.unsafe(`CREATE TRIGGER note AFTER INSERT OR UPDATE ON ${schema}.${table}
FOR EACH ROW EXECUTE FUNCTION ${schema}.note()`)
    }
    return Effect.flatMap(
      sql<WrittenNote>`SELECT what, at, xid FROM ${written} ORDER BY what`,
      (notes) => Effect.as(sql`DELETE FROM ${written}`, notes)
    )
  })

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
  signalLockWaiter(applicationName, "pg_terminate_backend")

/** Cancels the statement of `applicationName`'s connection that waits for a lock (`pg_cancel_backend`, once). */
export const cancelLockWaiter = (applicationName: string) => signalLockWaiter(applicationName, "pg_cancel_backend")

const signalLockWaiter = (applicationName: string, signal: "pg_terminate_backend" | "pg_cancel_backend") =>
  withClient((sql) =>
    Effect.gen(function*() {
      const blocked = sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
WHERE application_name = ${applicationName} AND wait_event_type = 'Lock'`
      const victim = yield* blocked.pipe(
        Effect.flatMap((rows) => Option.fromNullable(rows[0])),
        Effect.retry(Schedule.spaced("20 millis")),
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("no statement waited for the lock") })
      )
      yield* sql`SELECT ${sql.literal(signal)}(${victim.pid})`
    })
  )

/**
 * A TCP proxy on 127.0.0.1 that forwards every connection to the test's
 * PostgreSQL: `url` is the test database through it. `cut` destroys every
 * connection through it and stops listening (new connections are refused
 * until `restore`, which listens again on the same port). Closed with the
 * scope.
 */
export interface TcpProxy {
  readonly url: string
  readonly cut: Effect.Effect<void>
  readonly restore: Effect.Effect<void>
}

/** @see TcpProxy */
export const tcpProxy: Effect.Effect<TcpProxy, never, Scope.Scope> = Effect.gen(function*() {
  const target = new URL(testUrl)
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || "5432"), target.hostname)
    const end = () => {
      for (const socket of [client, upstream]) {
        socket.destroy()
        sockets.delete(socket)
      }
    }
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on("error", end)
      socket.on("close", end)
    }
    client.pipe(upstream)
    upstream.pipe(client)
  })
  const listen = (port: number) =>
    Effect.async<number>((resume) => {
      server.listen(port, "127.0.0.1", () => resume(Effect.succeed((server.address() as net.AddressInfo).port)))
    })
  const close = Effect.async<void>((resume) => {
    if (!server.listening) return resume(Effect.void)
    server.close(() => resume(Effect.void))
    for (const socket of sockets) socket.destroy()
    sockets.clear()
  })
  const port = yield* Effect.acquireRelease(listen(0), () => close)
  const url = new URL(testUrl)
  url.hostname = "127.0.0.1"
  url.port = String(port)
  return { url: url.href, cut: close, restore: Effect.asVoid(listen(port)) }
})

/**
 * Waits until the pool named `applicationName` has a connection that
 * listens (`LISTEN`), failing after 10 seconds without one.
 */
export const listening = (applicationName: string) =>
  withClient((sql) =>
    sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
WHERE application_name = ${applicationName} AND query LIKE 'LISTEN %'`.pipe(
      Effect.flatMap((rows) => Option.fromNullable(rows[0])),
      Effect.retry(Schedule.spaced("20 millis")),
      Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no LISTEN connection") })
    )
  )
