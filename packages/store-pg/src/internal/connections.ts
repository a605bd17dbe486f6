/**
 * The store's connections to PostgreSQL, where `@effect/sql-pg` 0.53's
 * `PgClient` falls short:
 *
 * - the pool: a query that fails because its backend ended (terminated,
 *   the server restarting) gives its client back to the pool as a healthy
 *   one, and the next query is sent on the dead connection ("Connection
 *   terminated unexpectedly"); here such a client is closed when it is given
 *   back, so the pool opens a new one;
 * - `LISTEN`: `PgClient.listen`'s shared connection is never made again once
 *   it is lost (its listeners go quiet, and a later `listen` fails); here a
 *   lost connection fails its listeners, so that they listen again, on a new
 *   connection;
 * - prepared statements: `PgClient` sends every statement unnamed, so
 *   PostgreSQL parses and plans it again at every call (a commit that keeps
 *   versions is 2–3 KB of SQL); here a client prepares the statements it
 *   sends again (see `prepareRepeated`).
 *
 * @internal
 */
import { SqlError } from "@effect/sql/SqlError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as RcRef from "effect/RcRef"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Pg from "pg"

/** What a connection is opened with (a URL or its parts). */
export interface ConnectionOptions {
  readonly url?: Redacted.Redacted | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly database?: string | undefined
  readonly username?: string | undefined
  readonly password?: Redacted.Redacted | undefined
  readonly ssl?: Pg.ClientConfig["ssl"] | undefined
  readonly connectTimeout?: Duration.DurationInput | undefined
  readonly applicationName?: string | undefined
}

const clientConfig = (options: ConnectionOptions): Pg.ClientConfig => ({
  ...(options.url === undefined ? {} : { connectionString: Redacted.value(options.url) }),
  ...(options.host === undefined ? {} : { host: options.host }),
  ...(options.port === undefined ? {} : { port: options.port }),
  ...(options.database === undefined ? {} : { database: options.database }),
  ...(options.username === undefined ? {} : { user: options.username }),
  ...(options.password === undefined ? {} : { password: Redacted.value(options.password) }),
  ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
  ...(options.connectTimeout === undefined
    ? {}
    : { connectionTimeoutMillis: Duration.toMillis(Duration.decode(options.connectTimeout)) }),
  ...(options.applicationName === undefined ? {} : { application_name: options.applicationName })
})

/**
 * Whether an error the server sent ends the connection: a `FATAL` or `PANIC`
 * one (e.g. 57P01, the backend terminated), or a connection exception (08).
 */
const endsConnection = (message: { readonly severity?: string | undefined; readonly code?: string | undefined }) =>
  message.severity === "FATAL" || message.severity === "PANIC" || message.code?.startsWith("57P") === true ||
  message.code?.startsWith("08") === true

/** The codes of node's socket errors that mean the server cannot be reached, or the connection broke. */
const socketCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND"
])

/**
 * Whether a query failed because its connection was lost: the server could
 * not be reached (a socket error), the connection ended under it
 * (node-postgres' "Connection terminated"), or the server ended it (see
 * `endsConnection`). What a watcher tries again for `relistenTimeout`.
 */
export const lostConnection = (error: SqlError): boolean => {
  const cause = error.cause
  if (typeof cause !== "object" || cause === null) return false
  const { code, message, severity } = cause as { code?: unknown; message?: unknown; severity?: unknown }
  if (typeof code === "string" && socketCodes.has(code)) return true
  if (typeof message === "string" && /^Connection terminated/.test(message)) return true
  return endsConnection({
    ...(typeof severity === "string" ? { severity } : {}),
    ...(typeof code === "string" ? { code } : {})
  })
}

/**
 * The most statements a connection keeps prepared: the store's statements
 * that run at every run are a few dozen; texts past this many are sent
 * unnamed, as they are without `prepare`.
 *
 * @internal
 */
const preparedLimit = 200

/** The PostgreSQL errors that say a prepared statement cannot be used as it is. */
const unpreparable = new Set([
  // cached plan must not change result type (a table changed under it)
  "0A000",
  // the statement does not exist (e.g. a connection pooler in front that switched server connections)
  "26000"
])

/**
 * Makes `client` send a parameterised statement as a named (prepared) one
 * from the second time it sends its text: PostgreSQL then parses it once per
 * connection, and plans it once when a generic plan serves (node-postgres
 * parses a named statement on its first use and binds it after). A text sent
 * once (a migration, a listing with a rare filter) is never prepared; at most
 * `limit` texts are. A statement without parameters is left alone: it goes
 * by the simple protocol, which allows several statements in one text. When
 * PostgreSQL refuses a prepared statement (a table changed under it, or it
 * is missing, as behind a pooler in transaction mode), that statement fails
 * as it would have anyway, and the client stops preparing.
 *
 * @internal
 */
const prepareRepeated = (client: Pg.ClientBase, limit: number = preparedLimit): void => {
  const original = client.query.bind(client) as (...args: ReadonlyArray<unknown>) => unknown
  const seen = new Map<string, string | undefined>()
  let prepared = 0
  let stopped = false
  const nameOf = (text: string): string | undefined => {
    if (stopped) return undefined
    if (!seen.has(text)) {
      if (seen.size < 4 * limit) seen.set(text, undefined)
      return undefined
    }
    const known = seen.get(text)
    if (known !== undefined || prepared >= limit) return known
    prepared += 1
    const name = `sessionflow_${prepared}`
    seen.set(text, name)
    return name
  }
  const query = (...args: Array<unknown>): unknown => {
    const [text, values, callback] = args
    if (typeof text !== "string" || !Array.isArray(values) || values.length === 0 || typeof callback !== "function") {
      return original(...args)
    }
    const name = nameOf(text)
    if (name === undefined) return original(...args)
    return original({ name, text, values }, (error: unknown, result: unknown) => {
      if (Predicate.hasProperty(error, "code") && typeof error.code === "string" && unpreparable.has(error.code)) {
        stopped = true
      }
      return (callback as (error: unknown, result: unknown) => unknown)(error, result)
    })
  }
  Object.assign(client, { query })
}

/**
 * A pool whose clients are closed, instead of kept, when they are given back
 * after the server ended their connection: `PgClient` gives a client back
 * without an error when only its query failed, and the pool would keep it
 * until its socket's end is processed, handing it out again meanwhile.
 */
export const makePool = (
  options: ConnectionOptions & {
    readonly maxConnections?: number | undefined
    readonly idleTimeout?: Duration.DurationInput | undefined
    readonly prepare?: boolean | undefined
  }
): Effect.Effect<Pg.Pool, SqlError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const pool = new Pg.Pool({
        ...clientConfig(options),
        ...(options.maxConnections === undefined ? {} : { max: options.maxConnections }),
        ...(options.idleTimeout === undefined
          ? {}
          : { idleTimeoutMillis: Duration.toMillis(Duration.decode(options.idleTimeout)) })
      })
      // an idle client's error is the pool's to handle (it drops the client)
      pool.on("error", () => {})
      const ended = new WeakSet<Pg.ClientBase>()
      pool.on("connect", (client) => {
        if (options.prepare !== false) prepareRepeated(client)
        // before the client's own handler, which answers the query (and may give the client back)
        clientConnection(client)?.prependListener("errorMessage", (message) => {
          if (endsConnection(message)) ended.add(client)
        })
      })
      pool.on("release", (error: Error | undefined, client: Pg.PoolClient) => {
        // `end` marks the client as ending, so the pool removes it instead of keeping it
        if (error === undefined && ended.has(client)) client.end().catch(() => {})
      })
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: options.connectTimeout ?? Duration.seconds(5),
          onTimeout: () =>
            new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        }),
        Effect.tapError(() => Effect.promise(() => pool.end().catch(() => {})))
      )
      return pool
    }),
    (pool) => Effect.promise(() => pool.end().catch(() => {})).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )

/** node-postgres's connection of a client (a public property its types do not declare). */
const clientConnection = (
  client: Pg.ClientBase
):
  | { prependListener(event: "errorMessage", f: (message: { severity?: string; code?: string }) => void): void }
  | undefined => (client as unknown as { readonly connection?: ReturnType<typeof clientConnection> }).connection

/** A listening connection: its client, the channels it listens on (with their listeners' count), whether it is lost. */
interface Listening {
  readonly client: Pg.Client
  readonly channels: Map<string, number>
  readonly onLost: Set<(cause: unknown) => void>
  lost: { readonly cause: unknown } | undefined
}

/**
 * `LISTEN` on one connection shared by the store's watchers, opened when the
 * first one listens and closed 30 seconds after the last one stopped (closed
 * at once, a storm of watchers coming and going — SSE clients reconnecting —
 * opened a new one each time while the last was still closing: tens of
 * connections beside a pool of four). The stream of a
 * channel emits an empty string once it listens (anything may have been
 * notified before), then each notification's payload; it fails when the
 * connection is lost, and the connection is made anew for the next listener.
 */
export const makeListen = (
  options: ConnectionOptions
): Effect.Effect<(channel: string) => Stream.Stream<string, SqlError>, never, Scope.Scope> =>
  Effect.gen(function*() {
    // eslint-disable-next-line prefer-const -- the connection's handlers need the ref it is made by
    let ref: RcRef.RcRef<Listening, SqlError> | undefined
    const open = Effect.tryPromise({
      try: async () => {
        const client = new Pg.Client(clientConfig(options))
        const listening: Listening = { client, channels: new Map(), onLost: new Set(), lost: undefined }
        const lose = (cause: unknown) => {
          if (listening.lost !== undefined) return
          listening.lost = { cause }
          if (ref !== undefined) Effect.runFork(RcRef.invalidate(ref))
          for (const f of listening.onLost) f(cause)
        }
        client.on("error", lose)
        client.on("end", () => lose(new Error("the listening connection ended")))
        await client.connect()
        return listening
      },
      catch: (cause) => new SqlError({ cause, message: "Failed to acquire connection for listen" })
    })
    ref = yield* RcRef.make({
      acquire: Effect.acquireRelease(open, (listening) =>
        Effect.promise(() => {
          listening.lost ??= { cause: new Error("closed") }
          return listening.client.end().catch(() => {})
        }).pipe(Effect.interruptible, Effect.timeoutOption(1000))),
      idleTimeToLive: "30 seconds"
    })
    const rc = ref
    return (channel: string) =>
      Stream.asyncPush<string, SqlError>((emit) =>
        Effect.gen(function*() {
          const listening = yield* RcRef.get(rc)
          const fail = (cause: unknown) =>
            emit.fail(new SqlError({ cause, message: "Lost the connection that listens" }))
          if (listening.lost !== undefined) {
            fail(listening.lost.cause)
            return
          }
          const onNotification = (message: Pg.Notification) => {
            if (message.channel === channel) emit.single(message.payload ?? "")
          }
          listening.onLost.add(fail)
          listening.client.on("notification", onNotification)
          listening.channels.set(channel, (listening.channels.get(channel) ?? 0) + 1)
          yield* Effect.addFinalizer(() =>
            Effect.promise(async () => {
              listening.onLost.delete(fail)
              listening.client.off("notification", onNotification)
              const left = (listening.channels.get(channel) ?? 1) - 1
              if (left > 0) return listening.channels.set(channel, left)
              listening.channels.delete(channel)
              if (listening.lost === undefined) {
                await listening.client.query(`UNLISTEN ${Pg.escapeIdentifier(channel)}`).catch(() => {})
              }
            })
          )
          yield* Effect.tryPromise({
            try: () => listening.client.query(`LISTEN ${Pg.escapeIdentifier(channel)}`),
            catch: (cause) => new SqlError({ cause, message: "Failed to listen" })
          })
          emit.single("")
        })
      )
  })
