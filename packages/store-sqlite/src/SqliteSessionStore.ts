/**
 * A `SessionStore` on SQLite: the SQL store (`@sessionflow/store-sql`) on a
 * connection of `@effect/sql-sqlite-node`.
 *
 * This module opens the connection (the file, WAL, busy timeout,
 * `synchronous`), reads its options from `Config`, and hands it to
 * `SqlSessionStore.make`, which keeps sessions, runs and changes in their
 * tables (see `@sessionflow/store-sql`). While another connection holds the
 * database's write lock, the store waits for it without blocking the
 * process: each attempt gives SQLite only a few milliseconds, and between
 * attempts the fiber sleeps (interruptibly), up to `lockTimeout` in all.
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { SessionStore, WorkflowError } from "@sessionflow/core"
import { SqlSessionStore } from "@sessionflow/store-sql"
import * as Config from "effect/Config"
import type { ConfigError } from "effect/ConfigError"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The session table used when no `table` option is given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTable: string = SqlSessionStore.defaultTable

/**
 * The busy timeout `layer` and `layerConfig` set on their connection
 * (`PRAGMA busy_timeout`), in milliseconds, while the store opens (its
 * migrations). Once open, the store lowers it to a few milliseconds on that
 * connection (nobody else's): its reads and writes then wait for locks
 * themselves, asynchronously (see `lockTimeout`).
 *
 * @since 0.1.0
 * @category constants
 */
export const busyTimeoutMillis = 5000

/**
 * How long a store operation waits in all for another connection's write
 * lock, when no `lockTimeout` option is given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLockTimeout: Duration.Duration = SqlSessionStore.defaultLockTimeout

/**
 * How many characters of changes the store keeps after a session's whole
 * state at least, before it writes the whole state again (see
 * `SqlSessionStore.minPendingChanges`).
 *
 * @since 0.1.0
 * @category constants
 */
export const minPendingChanges: number = SqlSessionStore.minPendingChanges

/**
 * @since 0.1.0
 * @category models
 */
export interface StoreOptions {
  /**
   * The session table (default `sessionflow_sessions`). The runs table is
   * `<table>_runs` and the migrations table `<table>_migrations`. Letters,
   * digits and underscores only, not starting with a digit.
   */
  readonly table?: string | undefined
  /**
   * How long an operation waits in all while another connection (another
   * process) holds the database's write lock, before it fails with a
   * `SessionStoreError` saying the database stayed locked (default 5
   * seconds). The wait is asynchronous and interruptible: the process keeps
   * running, and an interrupted wait has written nothing.
   */
  readonly lockTimeout?: Duration.DurationInput | undefined
  /**
   * Whether to create the tables, or migrate them to this version of the
   * store, when they are missing or older (default `true`). With `false`
   * nothing is created or changed: tables that are missing or not fully
   * migrated are a `SessionStoreError`.
   */
  readonly migrate?: boolean | undefined
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
 * @since 0.1.0
 * @category models
 */
export interface Options extends StoreOptions {
  /**
   * The database file, or `":memory:"`. A missing file is created
   * (unless `readonly` or `migrate: false`); its folder must exist.
   */
  readonly filename: string
  /**
   * Open an existing database read-only, for inspection (default `false`):
   * the file must exist, nothing is migrated or created (as with
   * `migrate: false`), the journal mode is left as it is, and SQLite refuses
   * every write, so `commit`, `setName` and `remove` fail with
   * `SessionStoreError`.
   */
  readonly readonly?: boolean | undefined
  /**
   * The connection's `PRAGMA synchronous` (default `"NORMAL"`, what
   * better-sqlite3's SQLite does in WAL mode): `"NORMAL"` waits for the disk
   * at checkpoints only, so a commit survives the process crashing but may
   * be lost if the machine loses power; `"FULL"` makes every commit wait for
   * the disk, several times slower on most disks.
   */
  readonly synchronous?: "FULL" | "NORMAL" | undefined
}

/**
 * The names of the tables a store with the given `table` option uses.
 *
 * @since 0.1.0
 * @category models
 */
export type TableNames = SqlSessionStore.TableNames

/**
 * Validates a `table` option and derives the names of the runs, unfinished
 * runs and migrations tables from it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const tableNames = (table: string = defaultTable): Effect.Effect<TableNames, WorkflowError.SessionStoreError> =>
  SqlSessionStore.tableNames(table, "sqlite")

const sqliteCode = (cause: unknown): string | undefined =>
  Predicate.hasProperty(cause, "code") && typeof cause.code === "string" ? cause.code : undefined

/** Why `filename` could not be opened, in words (looking at the file system for the cause). */
const describeOpenFailure = (filename: string, readonly: boolean, mustExist: boolean, cause: unknown): string => {
  const detail = cause === undefined
    ? undefined
    : Predicate.hasProperty(cause, "message")
    ? String(cause.message)
    : String(cause)
  const what = (): string | undefined => {
    if (filename === ":memory:" || filename === "") return undefined
    if (sqliteCode(cause) === "SQLITE_NOTADB") return "it is not a SQLite database"
    try {
      if (fs.statSync(filename).isDirectory()) return "it is a directory"
    } catch {
      const folder = path.dirname(path.resolve(filename))
      if (!fs.existsSync(folder)) return `its folder '${folder}' does not exist`
      if (mustExist) return "there is no such file"
    }
    return undefined
  }
  const reason = what()
  const text = reason === undefined ? detail : detail === undefined ? reason : `${reason} (${detail})`
  return `cannot open the SQLite database '${filename}'${readonly ? " read-only" : ""}: ${text ?? "unknown reason"}`
}

/**
 * The connection `layer` uses: opened, read once (so that a file that is not
 * a database fails here), with its busy timeout. Every failure to open is a
 * `SessionStoreError` naming the file, and leaves the file as it was.
 */
const layerClient = (options: Options): Layer.Layer<SqlClient.SqlClient, WorkflowError.SessionStoreError> => {
  const readonly = options.readonly === true
  // without migrations nothing may be created, not even an empty file
  const mustExist = readonly || options.migrate === false
  const openError = (cause: unknown) =>
    new WorkflowError.SessionStoreError({
      method: "open",
      description: describeOpenFailure(options.filename, readonly, mustExist, cause),
      ...(cause === undefined ? {} : { cause })
    })
  return Layer.scopedContext(
    Effect.gen(function*() {
      if (mustExist && options.filename !== ":memory:" && options.filename !== "" && !fs.existsSync(options.filename)) {
        return yield* Effect.fail(openError(undefined))
      }
      // a read-only connection keeps the file's journal mode (switching to WAL is a write)
      const sql = yield* SqliteClient.make({ filename: options.filename, readonly, disableWAL: readonly })
      yield* sql`SELECT COUNT(*) FROM sqlite_master`.withoutTransform
      yield* sql.unsafe(`PRAGMA busy_timeout = ${busyTimeoutMillis}`)
      yield* sql.unsafe(`PRAGMA synchronous = ${options.synchronous === "FULL" ? "FULL" : "NORMAL"}`)
      return Context.make(SqlClient.SqlClient, sql)
    }).pipe(
      Effect.catchAllDefect((defect) => Effect.fail(openError(defect))),
      Effect.catchTag("SqlError", (error) => Effect.fail(openError(error.cause ?? error)))
    )
  ).pipe(Layer.provide(Reactivity.layer))
}

/**
 * Builds a store on the `SqlClient` in context (which must be SQLite),
 * creating or migrating its tables first (`SqlSessionStore.make`).
 *
 * Its write transactions lower the connection's busy timeout to a few
 * milliseconds while they run and restore it before they end (so a write
 * never blocks the process while another connection holds the lock: it
 * sleeps and tries again, see `lockTimeout`); otherwise the connection's
 * settings are left alone. Reads and the migrations use the connection's
 * busy timeout: `busyTimeoutMillis` with `layer`/`layerConfig`,
 * better-sqlite3's default (5 s) with your own client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options?: StoreOptions
): Effect.Effect<SessionStore.Service, WorkflowError.SessionStoreError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      sqlite: () => SqlSessionStore.make(options),
      orElse: () =>
        Effect.fail(
          new WorkflowError.SessionStoreError({ method: "make", description: "the SqlClient in context is not SQLite" })
        )
    }))

/**
 * The store as a layer on the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStore = (
  options?: StoreOptions
): Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError, SqlClient.SqlClient> =>
  Layer.effect(SessionStore.SessionStore, make(options))

/**
 * The store on its own SQLite connection to `filename` (WAL unless
 * `readonly`, busy timeout set). A file that cannot be opened — not a
 * database, a directory, a path whose folder does not exist, a missing file
 * with `readonly` — fails with a `SessionStoreError` naming it, and is left
 * untouched.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError> =>
  Layer.effect(
    SessionStore.SessionStore,
    SqlSessionStore.make(
      {
        table: options.table,
        lockTimeout: options.lockTimeout,
        keepRuns: options.keepRuns,
        migrate: options.readonly !== true && options.migrate !== false,
        history: options.history
      },
      // the connection is the store's own: nobody else waits on its busy timeout
      { location: options.filename, exclusiveConnection: true }
    )
  ).pipe(Layer.provide(layerClient(options)))

/**
 * `layer`, with its options read from `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError | ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))
