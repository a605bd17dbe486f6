/**
 * The `SessionStore` on SQL, through `@effect/sql`'s `SqlClient`: one
 * implementation for SQLite and PostgreSQL, which chooses its SQL by the
 * client's dialect only where the statements really differ. The driver
 * packages (`@sessionflow/store-sqlite`, `@sessionflow/store-pg`) open the
 * client and call {@link make}; use it directly with a client of your own.
 *
 * Sessions live in one table (default `sessionflow_sessions`), their runs in a
 * second one (`<table>_runs`, one row per run), unfinished runs in a third
 * (`<table>_active`), the changes of `persist: "changes"` commits in a fourth
 * (`<table>_changes`), and the store keeps its own migrations table
 * (`<table>_migrations`). A commit's first write checks the session's
 * version in its `WHERE` clause: two processes can never both win, and the
 * loser fails with `SessionConflict` having written nothing.
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { SessionStore, type WorkflowError } from "@sessionflow/core"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import * as rows from "./internal/rows.js"
import * as internal from "./internal/store.js"

/**
 * The session table used when no `table` option is given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTable: string = rows.defaultTable

/**
 * How many characters of changes the store keeps after a session's whole
 * state at least, before it writes the whole state again: the changes are
 * kept until they outweigh the state or reach this size, whichever is
 * larger. (So a load reads at most about twice the state, and a commit's cost
 * does not grow with the state: the whole state is written once per as many
 * characters of changes as it has.) A state column larger than this is moved
 * out of the session's row by the first commit with changes.
 *
 * @since 0.1.0
 * @category constants
 */
export const minPendingChanges: number = rows.minPendingChanges

/**
 * How long a SQLite store's operation waits in all for another connection's
 * write lock, when no `lockTimeout` option is given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLockTimeout: Duration.Duration = internal.defaultLockTimeout

/**
 * How often a watcher that is told of commits (a driver's `listen`) also
 * reads its session when no `pollInterval` is given: notifications wake it
 * at once; this only bounds the wait for a notification missed while its
 * listening connection was being set up.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultNotifiedPollInterval: Duration.Duration = internal.defaultNotifiedPollInterval

/**
 * The names of the tables a store with a given `table` option uses.
 *
 * @since 0.1.0
 * @category models
 */
export interface TableNames {
  readonly sessions: string
  readonly runs: string
  /** unfinished (running or paused) runs */
  readonly active: string
  /** the changes kept after a session's last whole state */
  readonly changes: string
  /** the event logs of runs stored with `events: "stored"` */
  readonly events: string
  /** the queues of runs given `onBusy: "enqueue"` */
  readonly queue: string
  /** the kept versions of sessions (see `SessionStore.HistoryOptions`) */
  readonly versions: string
  /** the signals sent to unfinished runs */
  readonly signals: string
  /** the workflows' schedules (see `Schedules`) */
  readonly schedules: string
  readonly migrations: string
}

/**
 * Validates a `table` option for a dialect (see {@link Options}) and derives
 * the names of the other tables from it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const tableNames = (
  table: string = defaultTable,
  dialect: "sqlite" | "pg" = "sqlite"
): Effect.Effect<TableNames, WorkflowError.SessionStoreError> =>
  Effect.map(internal.resolveTables(dialect, { table }), ({ schema: _, ...names }) => names)

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The session table (default `sessionflow_sessions`). The runs table is
   * `<table>_runs`, the unfinished runs `<table>_active`, the kept changes
   * `<table>_changes`, the runs' event logs `<table>_events`, the queued runs
   * `<table>_queue`, the kept versions `<table>_versions`, the signals sent to
   * unfinished runs `<table>_signals`, the schedules `<table>_schedules` and the migrations table
   * `<table>_migrations`. 1 to 48
   * letters, digits and underscores, not starting with a digit or with the
   * database's reserved prefix (`sqlite_`, `pg_`); on PostgreSQL lowercase
   * letters only.
   */
  readonly table?: string | undefined
  /**
   * PostgreSQL: the schema the tables live in (default: none, so the
   * connection's `search_path` decides, usually `public`). Created with the
   * tables when migrations are on. Same characters as `table`.
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
   * SQLite: how long an operation waits in all while another connection
   * (another process) holds the database's write lock, before it fails with
   * a `SessionStoreError` saying the database stayed locked (default 5
   * seconds). The wait is asynchronous and interruptible: the process keeps
   * running, and an interrupted wait has written nothing.
   */
  readonly lockTimeout?: Duration.DurationInput | undefined
  /**
   * PostgreSQL: how long a watcher tries to listen again after its listening
   * connection was lost (retrying with a backoff), before the watch fails
   * with a `SessionStoreError` (default 30 seconds). Until then it neither
   * fails nor falls back to polling; once it listens again, it reads its
   * session, so the versions committed meanwhile arrive.
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
 * What a driver package tells the store about the client it opened.
 *
 * @since 0.1.0
 * @category models
 */
export interface Driver {
  /** Where the database is, for messages (e.g. a SQLite file's name). */
  readonly location?: string | undefined
  /**
   * SQLite: the connection is the store's alone (the driver opened it), so
   * the store may keep a short busy timeout on it for good, instead of
   * setting and restoring it around each write.
   */
  readonly exclusiveConnection?: boolean | undefined
  /**
   * PostgreSQL: the payloads of notifications on a channel. Commits notify a
   * channel of their store's with the session id; with `listen`, watchers
   * read their session when notified and poll only as a safety net, else
   * they poll. The stream emits an empty string each time it starts
   * listening (watchers then read their session: anything may have been
   * committed before), and fails when its connection is lost (watchers then
   * listen again). `@sessionflow/store-pg` gives one that does; `PgClient`'s
   * own `listen` goes quiet when its connection is lost.
   */
  readonly listen?: ((channel: string) => Stream.Stream<string, SqlError>) | undefined
  /**
   * PostgreSQL: whether a query failed because its connection was lost (the
   * server cannot be reached, or ended the connection). A watcher's read
   * that fails so is tried again, like its listening, for `relistenTimeout`
   * at most, instead of failing the watch at once; any other error fails it.
   */
  readonly lostConnection?: ((error: SqlError) => boolean) | undefined
}

/**
 * Builds a store on the `SqlClient` in context (SQLite or PostgreSQL),
 * creating or migrating its tables first (unless `migrate: false`).
 *
 * The store only reads and writes its own tables, and the client's name
 * transforms do not apply to its queries. On SQLite, its write transactions
 * lower the connection's busy timeout to a few milliseconds while they run
 * and restore it before they end (so a write never blocks the process while
 * another connection holds the lock: it sleeps and tries again, see
 * `lockTimeout`); otherwise the connection's settings are left alone.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options?: Options,
  driver?: Driver
) => Effect.Effect<SessionStore.Service, WorkflowError.SessionStoreError, SqlClient.SqlClient> = internal.make

/**
 * The store as a layer on the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: Options,
  driver?: Driver
): Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError, SqlClient.SqlClient> =>
  Layer.effect(SessionStore.SessionStore, make(options, driver))
