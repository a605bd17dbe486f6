/**
 * A `SessionStore` on PostgreSQL: the SQL store (`@sessionflow/store-sql`) on
 * a connection pool of `@effect/sql-pg`, the store for several app servers
 * sharing their sessions.
 *
 * This module opens the pool (a URL or its parts), reads its options from
 * `Config` (`DATABASE_URL` or `PG*`), and hands the client to
 * `SqlSessionStore.make` with PostgreSQL's `LISTEN`, so that watchers hear of
 * every server's commits. The tables, the commit (one statement in the usual
 * case) and the kept changes of `persist: "changes"` are the SQL store's.
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { SessionStore, WorkflowError } from "@sessionflow/core"
import { SqlSessionStore } from "@sessionflow/store-sql"
import * as Config from "effect/Config"
import type { ConfigError } from "effect/ConfigError"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as connections from "./internal/connections.js"

/**
 * The session table used when no `table` option is given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTable: string = SqlSessionStore.defaultTable

/**
 * @since 0.1.0
 * @category models
 */
export interface StoreOptions {
  /**
   * The session table (default `sessionflow_sessions`). The runs table is
   * `<table>_runs`, the unfinished runs `<table>_active` and the migrations
   * table `<table>_migrations`. Lowercase letters, digits and underscores
   * only, not starting with a digit or `pg_`.
   */
  readonly table?: string | undefined
  /**
   * The schema the tables live in (default: none, so the connection's
   * `search_path` decides, usually `public`). Created with the tables when
   * migrations are on. Same characters as `table`.
   */
  readonly schema?: string | undefined
  /**
   * Whether to create the tables, or migrate them to this version of the
   * store, when they are missing or older (default `true`). With `false`
   * nothing is created or changed: tables that are missing or not fully
   * migrated are a `SessionStoreError`.
   */
  readonly migrate?: boolean | undefined
  /**
   * How long a watcher tries to listen again after its listening connection
   * was lost (the server restarted, the backend was terminated), before the
   * watch fails with a `SessionStoreError` (default 30 seconds). Until then
   * it neither fails nor falls back to polling; once it listens again, it
   * reads its session, so the versions committed meanwhile arrive.
   */
  readonly relistenTimeout?: Duration.DurationInput | undefined
  /**
   * The run records each session keeps: its most recent `keepRuns` (default
   * `SessionStore.defaultKeepRuns`, 1,000), the older ones removed with their
   * stored events at every 100th state commit of the session; `"all"` keeps
   * every record (prune them with `Workflow.prune`).
   */
  readonly keepRuns?: number | "all" | undefined
  /**
   * The versions kept of a session whose workflow does not say (see
   * `SessionStore.HistoryOptions`; default `SessionStore.defaultHistory`,
   * the last 20).
   */
  readonly history?: SessionStore.HistoryOptions | undefined
}

/**
 * Where the database is, for `layer`: a connection URL
 * (`postgres://user:password@host:5432/database`), or its parts.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends StoreOptions {
  readonly url?: string | Redacted.Redacted | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly database?: string | undefined
  readonly username?: string | undefined
  readonly password?: string | Redacted.Redacted | undefined
  readonly ssl?: boolean | undefined
  /** the most connections the store's pool opens (default 10) */
  readonly maxConnections?: number | undefined
  /** how long opening a connection may take (default 5 seconds) */
  readonly connectTimeout?: Duration.DurationInput | undefined
  /**
   * how long a pooled connection may stay idle before it is closed (default
   * 10 seconds, as node-postgres); a closed one is opened again when needed
   */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /** shown in `pg_stat_activity` (default `sessionflow`) */
  readonly applicationName?: string | undefined
  /**
   * Prepare the statements each connection sends again (default `true`):
   * PostgreSQL then parses and plans them once per connection instead of at
   * every call. Turn it off behind a connection pooler that does not keep a
   * connection's prepared statements (PgBouncer before 1.21 in transaction
   * mode).
   */
  readonly prepare?: boolean | undefined
}

/**
 * How often a watcher also reads its session when no `pollInterval` is given:
 * notifications wake it at once; this only bounds the wait for a notification
 * missed while its listening connection was being set up.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultWatchInterval: Duration.Duration = SqlSessionStore.defaultNotifiedPollInterval

/**
 * Builds a store on the `PgClient` in context, creating or migrating its
 * tables first (unless `migrate: false`). The store only reads and writes its
 * own tables and leaves the client's settings alone (its name transforms do
 * not apply to the store's queries); its watchers listen on the client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options?: StoreOptions
): Effect.Effect<SessionStore.Service, WorkflowError.SessionStoreError, PgClient.PgClient | Scope.Scope> =>
  Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    // watchers listen on a connection of the store's own, made anew when it is lost
    const listen = yield* connections.makeListen(pg.config)
    return yield* SqlSessionStore.make(options, { listen, lostConnection: connections.lostConnection }).pipe(
      Effect.provideService(SqlClient.SqlClient, pg)
    )
  })

// -----------------------------------------------------------------------------
// layers
// -----------------------------------------------------------------------------

/**
 * The store as a layer on your own `PgClient` (and its pool).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStore = (
  options?: StoreOptions
): Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError, PgClient.PgClient> =>
  Layer.scoped(SessionStore.SessionStore, make(options))

const redacted = (value: string | Redacted.Redacted | undefined) =>
  value === undefined ? undefined : Redacted.isRedacted(value) ? value : Redacted.make(value)

/** Where `options` point, for messages (never the password). */
const describeTarget = (options: Options): string => {
  if (options.url !== undefined) {
    try {
      const url = new URL(Redacted.isRedacted(options.url) ? Redacted.value(options.url) : options.url)
      url.password = ""
      return url.toString()
    } catch {
      return "the given URL (which is not a valid URL)"
    }
  }
  return `${options.host ?? "localhost"}:${options.port ?? 5432}${
    options.database === undefined ? "" : `/${options.database}`
  }`
}

/** The `PgClient` `layer` opens: a pool, checked with one query; failing to connect is a `SessionStoreError`. */
const layerClient = (options: Options): Layer.Layer<PgClient.PgClient, WorkflowError.SessionStoreError> =>
  Layer.scopedContext(
    PgClient.fromPool({
      acquire: connections.makePool({
        url: redacted(options.url),
        host: options.host,
        port: options.port,
        database: options.database,
        username: options.username,
        password: redacted(options.password),
        ssl: options.ssl,
        maxConnections: options.maxConnections,
        connectTimeout: options.connectTimeout,
        idleTimeout: options.idleTimeout,
        applicationName: options.applicationName ?? "sessionflow",
        prepare: options.prepare
      })
    }).pipe(
      Effect.map((client) => Context.make(PgClient.PgClient, client)),
      Effect.mapError((error: SqlError) =>
        new WorkflowError.SessionStoreError({
          method: "open",
          description: `cannot connect to PostgreSQL at ${describeTarget(options)}: ${
            Predicate.hasProperty(error.cause, "message") ? String(error.cause.message) : error.message
          }`,
          cause: error
        })
      )
    )
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * The store on its own connection pool to the database `options` point to.
 * A database that cannot be reached fails with a `SessionStoreError` naming
 * it (without its password).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError> =>
  layerStore(options).pipe(Layer.provide(layerClient(options)))

const optional = <A>(config: Config.Config<A>) => Config.map(Config.option(config), Option.getOrUndefined)

/**
 * The connection as PostgreSQL's own tools read it from the environment:
 * `DATABASE_URL`, else `PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER`,
 * `PGPASSWORD` (each optional).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Options> = Config.all({
  url: optional(Config.redacted("DATABASE_URL")),
  host: optional(Config.string("PGHOST")),
  port: optional(Config.port("PGPORT")),
  database: optional(Config.string("PGDATABASE")),
  username: optional(Config.string("PGUSER")),
  password: optional(Config.redacted("PGPASSWORD"))
})

/**
 * `layer`, with its options read from `Config` (by default {@link config}:
 * `DATABASE_URL` or `PG*`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  options: Config.Config.Wrap<Options> = config
): Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError | ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.unwrap(options), layer))
