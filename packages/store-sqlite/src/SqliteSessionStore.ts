/**
 * A `SessionStore` on SQLite, through `@effect/sql`'s `SqlClient`.
 *
 * Sessions live in one table (default `sessionflow_sessions`), their runs in a
 * second one (`<table>_runs`, one row per run), and the store keeps its own
 * migrations table (`<table>_migrations`). A commit writes the state and the
 * run row in one short transaction whose first statement is the write itself,
 * with the version check in its `WHERE` clause: two processes on one file can
 * never both win, and the loser fails with `SessionConflict` having written
 * nothing.
 *
 * While another connection holds the database's write lock, the store waits
 * for it without blocking the process: each attempt gives SQLite only a few
 * milliseconds, and between attempts the fiber sleeps (interruptibly), up to
 * `lockTimeout` in all.
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { SessionStore, StoreRows, WorkflowError } from "@sessionflow/core"
import * as Config from "effect/Config"
import type { ConfigError } from "effect/ConfigError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The session table used when no `table` option is given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTable: string = StoreRows.defaultTable

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
export const defaultLockTimeout: Duration.Duration = Duration.seconds(5)

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
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Options extends StoreOptions {
  /** The database file, or `":memory:"`. A missing file is created (unless `readonly` or `migrate: false`); its folder must exist. */
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
   * The connection's `PRAGMA synchronous` (default SQLite's own, `"FULL"`:
   * every commit waits for the disk). `"NORMAL"`, common with WAL, waits for
   * the disk at checkpoints only: a commit then survives the process
   * crashing, but may be lost if the machine loses power; commits are several
   * times faster on most disks.
   */
  readonly synchronous?: "FULL" | "NORMAL" | undefined
}

/**
 * The names of the tables a store with the given `table` option uses.
 *
 * @since 0.1.0
 * @category models
 */
export type TableNames = StoreRows.TableNames

/**
 * Validates a `table` option and derives the names of the runs, unfinished
 * runs and migrations tables from it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const tableNames = (table: string = defaultTable): Effect.Effect<TableNames, WorkflowError.SessionStoreError> =>
  StoreRows.tableNames(table, { reservedPrefix: "sqlite_" })

// -----------------------------------------------------------------------------
// migrations (shipped migrations are never edited: add a new one instead)
// -----------------------------------------------------------------------------

const migrations = (sql: SqlClient.SqlClient, t: TableNames) =>
  Migrator.fromRecord({
    "0001_create_sessions": Effect.gen(function*() {
      yield* sql`CREATE TABLE ${sql(t.sessions)} (
  session_id TEXT PRIMARY KEY NOT NULL,
  workflow_name TEXT NOT NULL,
  user_id TEXT,
  session_name TEXT,
  state TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
)`.withoutTransform
      yield* sql`CREATE INDEX ${sql(`${t.sessions}_updated_idx`)} ON ${
        sql(t.sessions)
      } (updated_at DESC, session_id)`.withoutTransform
    }),
    "0002_create_runs": Effect.gen(function*() {
      yield* sql`CREATE TABLE ${sql(t.runs)} (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL REFERENCES ${sql(t.sessions)} (session_id) ON DELETE CASCADE,
  workflow_name TEXT NOT NULL,
  user_id TEXT,
  status TEXT NOT NULL,
  input TEXT,
  content TEXT,
  error TEXT,
  started_at INTEGER NOT NULL,
  completed_at INTEGER NOT NULL
)`.withoutTransform
      yield* sql`CREATE INDEX ${sql(`${t.runs}_session_idx`)} ON ${sql(t.runs)} (session_id, seq)`.withoutTransform
    }),
    // unfinished runs: running (with an owner and a lease) or paused; not tied
    // to a session row, which a new session's first run creates only when it ends
    "0003_create_active": Effect.gen(function*() {
      yield* sql`CREATE TABLE ${sql(t.active)} (
  run_id TEXT PRIMARY KEY NOT NULL,
  session_id TEXT NOT NULL,
  workflow_name TEXT NOT NULL,
  user_id TEXT,
  status TEXT NOT NULL,
  owner TEXT NOT NULL,
  lease_expires_at INTEGER NOT NULL,
  base_version INTEGER NOT NULL,
  durability TEXT NOT NULL,
  data TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
)`.withoutTransform
      yield* sql`CREATE INDEX ${sql(`${t.active}_session_idx`)} ON ${sql(t.active)} (session_id, status)`.withoutTransform
      yield* sql`CREATE INDEX ${sql(`${t.active}_workflow_idx`)} ON ${sql(t.active)} (workflow_name, started_at)`.withoutTransform
    }),
    // the run whose commit made the session's current version (NULL: a state change outside a run)
    "0004_add_last_run_id": Effect.gen(function*() {
      yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN last_run_id TEXT`.withoutTransform
    }),
    // the changes committed by `persist: "changes"` runs, with the sizes (in
    // characters) the store decides when to write the whole state from: of the
    // state column, of the last whole state written (there or as a change), of
    // the change rows
    "0005_create_changes": Effect.gen(function*() {
      yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN state_size INTEGER NOT NULL DEFAULT 0`.withoutTransform
      yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN base_size INTEGER NOT NULL DEFAULT 0`.withoutTransform
      yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN changes_size INTEGER NOT NULL DEFAULT 0`.withoutTransform
      yield* sql`UPDATE ${sql(t.sessions)} SET state_size = length(state), base_size = length(state)`.withoutTransform
      yield* sql`CREATE TABLE ${sql(t.changes)} (
  session_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  changes TEXT NOT NULL,
  PRIMARY KEY (session_id, version)
) WITHOUT ROWID`.withoutTransform
    })
  })

/** The id of the newest migration above. */
const latestMigrationId = 5

/**
 * How many characters of changes the store keeps after a session's whole
 * state at least, before it writes the whole state again: the changes are
 * kept until they outweigh the state or reach this size, whichever is
 * larger (`StoreRows.minPendingChanges`, which the PostgreSQL store uses too).
 * (So a load reads at most about twice the state, and a commit's cost does
 * not grow with the state: the whole state is written once per as many
 * characters of changes as it has.) A state column larger than this is moved
 * out of the session's row by the first commit with changes.
 *
 * @since 0.1.0
 * @category constants
 */
export const minPendingChanges = StoreRows.minPendingChanges

/** A change list that sets the whole state: the text of one change row holding `state` (JSON text). */
const wholeStateChange = (state: string): string => `[{"op":"set","path":[],"value":${state}}]`


// -----------------------------------------------------------------------------
// SQLITE_BUSY
// -----------------------------------------------------------------------------

const isBusy = (error: unknown): boolean =>
  Predicate.isTagged(error, "SqlError") &&
  Predicate.hasProperty(error, "cause") &&
  Predicate.hasProperty(error.cause, "code") &&
  typeof error.cause.code === "string" &&
  error.cause.code.startsWith("SQLITE_BUSY")

/**
 * The busy timeout of one write attempt, in milliseconds: how long SQLite
 * itself may wait (synchronously, blocking the process) for the write lock
 * before the attempt fails with SQLITE_BUSY and the store sleeps before the
 * next one.
 */
const attemptBusyTimeoutMillis = 5

/**
 * Retries an operation that failed with SQLITE_BUSY (another connection holds
 * the write lock), sleeping between attempts: from 5 ms, doubling up to
 * 100 ms, with jitter, for `lockTimeout` in all; then it fails with a
 * `SessionStoreError` saying the database stayed locked. The sleeps are
 * ordinary `Effect` sleeps: they block nothing and are interruptible where
 * the caller is. Every retried operation is one statement or one transaction
 * that was rolled back, so re-running it is safe.
 */
const waitForLock = (method: string, lockTimeout: Duration.Duration) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | WorkflowError.SessionStoreError, R> =>
  Effect.retry(self, {
    while: isBusy,
    schedule: Schedule.exponential("5 millis", 2).pipe(
      Schedule.union(Schedule.spaced("100 millis")),
      Schedule.jittered,
      Schedule.upTo(lockTimeout)
    )
  }).pipe(
    Effect.catchIf(isBusy, (cause) =>
      Effect.fail(
        new WorkflowError.SessionStoreError({
          method,
          description: `the database stayed locked by another connection for more than ${
            Duration.format(lockTimeout)
          } (SQLITE_BUSY)`,
          cause
        })
      ))
  )

// -----------------------------------------------------------------------------
// rows
// -----------------------------------------------------------------------------

const { ActiveRow, ChangeRow, OwnerRow, RunRow, SessionInfoRow, SessionRow, VersionRow } = StoreRows.rowSchemas(Schema.Number)

const describeError = (error: StoreRows.StoreFailure): string => StoreRows.describeFailure("SQLite", error)

const storeError = (method: string) => (error: StoreRows.StoreFailure) =>
  new WorkflowError.SessionStoreError({ method, description: describeError(error), cause: error })

// -----------------------------------------------------------------------------
// opening: the connection, and the tables migrated or checked
// -----------------------------------------------------------------------------

const inDatabase = (database: string | undefined) => (database === undefined ? "in the database" : `in '${database}'`)

const makeError = (description: string, cause?: unknown) =>
  new WorkflowError.SessionStoreError({ method: "make", description, ...(cause === undefined ? {} : { cause }) })

/**
 * Creates the tables or brings them to the latest migration. A migration that
 * fails (e.g. a table of that name already exists and is not ours) is a
 * typed error, not a defect.
 */
const migrateTables = (sql: SqlClient.SqlClient, t: TableNames, database: string | undefined) =>
  // Migrator swallows "migrations already running" (another process holds
  // the write lock) and returns at once, before that process has committed;
  // so check that the tables are there, and retry until they are.
  Migrator.make({})({ loader: migrations(sql, t), table: t.migrations }).pipe(
    Effect.catchAllDefect((defect) =>
      defect instanceof Migrator.MigrationError ? Effect.fail(defect) : Effect.die(defect)
    ),
    Effect.zipRight(sql<{ id: number | null }>`SELECT MAX(migration_id) AS id FROM ${sql(t.migrations)}`.withoutTransform),
    Effect.filterOrFail((rows) => (rows[0]?.id ?? 0) >= latestMigrationId, () => new StoreRows.MigrationsPending()),
    Effect.retry({
      while: (error) => isBusy(error) || Predicate.isTagged(error, "MigrationsPending"),
      schedule: Schedule.spaced("20 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(250)))
    }),
    Effect.mapError((error) =>
      makeError(
        `cannot create or migrate the tables of '${t.sessions}' ${inDatabase(database)}: ${
          error._tag === "MigrationError"
            ? `${error.message}${error.cause === undefined ? "" : `: ${StoreRows.innermostMessage(error.cause)}`}`
            : error._tag === "MigrationsPending"
            ? "another connection left their migrations unfinished"
            : describeError(error)
        }`,
        error
      )
    ),
    Effect.provideService(SqlClient.SqlClient, sql)
  )

/**
 * Checks, without creating or changing anything, that the store's tables
 * exist and are fully migrated.
 */
const checkTables = (sql: SqlClient.SqlClient, t: TableNames, database: string | undefined) =>
  Effect.gen(function*() {
    const rows = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.withoutTransform
    const names = new Set(rows.map((row) => row.name))
    if (!names.has(t.sessions) || !names.has(t.runs) || !names.has(t.migrations)) {
      const found = [...names].flatMap((name) => {
        const base = name.endsWith("_migrations") ? name.slice(0, -"_migrations".length) : undefined
        return base !== undefined && names.has(base) && names.has(`${base}_runs`) ? [base] : []
      }).sort()
      return yield* makeError(
        `there is no session table '${t.sessions}' ${inDatabase(database)} (${
          found.length === 0 ? "it has no session tables" : `its session tables: ${found.join(", ")}`
        })`
      )
    }
    const [latest] = yield* sql<{ id: number | null }>`SELECT MAX(migration_id) AS id FROM ${
      sql(t.migrations)
    }`.withoutTransform
    const id = latest?.id ?? 0
    if (id < latestMigrationId) {
      return yield* makeError(
        `the tables of '${t.sessions}' ${inDatabase(database)} are at migration ${id} of ${latestMigrationId}: ` +
          "open them once with migrations on (not read-only) to migrate them"
      )
    }
  }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(makeError(describeError(error), error))))

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
      if (options.synchronous !== undefined) {
        yield* sql.unsafe(`PRAGMA synchronous = ${options.synchronous === "NORMAL" ? "NORMAL" : "FULL"}`)
      }
      return Context.make(SqlClient.SqlClient, sql)
    }).pipe(
      Effect.catchAllDefect((defect) => Effect.fail(openError(defect))),
      Effect.catchTag("SqlError", (error) => Effect.fail(openError(error.cause ?? error)))
    )
  ).pipe(Layer.provide(Reactivity.layer))
}

// -----------------------------------------------------------------------------
// constructors
// -----------------------------------------------------------------------------

/**
 * Builds a store on the `SqlClient` in context (which must be SQLite),
 * creating or migrating its tables first.
 *
 * The store only reads and writes its own tables. Its write transactions
 * lower the connection's busy timeout to a few milliseconds while they run
 * and restore it before they end (so a write never blocks the process while
 * another connection holds the lock: it sleeps and tries again, see
 * `lockTimeout`); otherwise the connection's settings are left alone. Reads
 * and the migrations use the connection's busy timeout: `busyTimeoutMillis`
 * with `layer`/`layerConfig`, better-sqlite3's default (5 s) with your own
 * client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (
  options?: StoreOptions
) => Effect.Effect<SessionStore.Service, WorkflowError.SessionStoreError, SqlClient.SqlClient> = (options) =>
  makeStore(options, undefined)

const makeStore = Effect.fn("SqliteSessionStore.make")(function*(
  options: StoreOptions | undefined,
  /** the file, when the store opened it itself (for error messages) */
  database: string | undefined
) {
  // the tables' names are ours: never pass them through the client's name transforms
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  yield* sql.onDialectOrElse({
    sqlite: () => Effect.void,
    orElse: () =>
      Effect.fail(
        new WorkflowError.SessionStoreError({ method: "make", description: "the SqlClient in context is not SQLite" })
      )
  })
  const t = yield* tableNames(options?.table)
  const sessions = sql(t.sessions)
  const runsTable = sql(t.runs)
  const activeTable = sql(t.active)
  const changesTable = sql(t.changes)
  const lockTimeout = Duration.decode(options?.lockTimeout ?? defaultLockTimeout)
  const retryBusy = (method: string) => waitForLock(method, lockTimeout)
  /** whether the store opened its connection itself (`layer`), so that no one else uses it */
  const ownConnection = database !== undefined

  /**
   * One attempt of a write: `body` in one transaction, under a busy timeout of
   * a few milliseconds (the connection's own busy timeout is restored before
   * the transaction ends), so that an attempt that finds the database locked
   * fails at once with SQLITE_BUSY and is rolled back. The transaction either
   * commits or rolls back; an interruption inside `body` rolls it back.
   */
  const writeAttempt = <A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
    // on its own connection the busy timeout is that short all the time (set once, below)
    ownConnection ? sql.withTransaction(body) : Effect.gen(function*() {
      const [current] = yield* sql<{ timeout: number }>`PRAGMA busy_timeout`.withoutTransform
      yield* sql.unsafe(`PRAGMA busy_timeout = ${attemptBusyTimeoutMillis}`).withoutTransform
      const restore = sql.unsafe(`PRAGMA busy_timeout = ${Number(current?.timeout ?? busyTimeoutMillis)}`).withoutTransform
      return yield* Effect.ensuring(body, Effect.orDie(restore))
    }).pipe(sql.withTransaction)

  /** A write: attempts, sleeping while the database is locked, for `lockTimeout` at most. */
  const write = (method: string) => <A, E, R>(body: Effect.Effect<A, E, R>) =>
    writeAttempt(body).pipe(retryBusy(method))

  yield* options?.migrate === false ? checkTables(sql, t, database) : migrateTables(sql, t, database)
  // On the connection it opened itself, nobody else's, the store keeps the
  // short busy timeout of a write attempt from now on, so that its writes
  // need not set and restore it (three statements fewer per write); its reads
  // wait for locks the same way its writes do (`retryBusy`).
  if (ownConnection) {
    yield* sql.unsafe(`PRAGMA busy_timeout = ${attemptBusyTimeoutMillis}`).withoutTransform.pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(makeError(describeError(error), error)))
    )
  }

  /** the changes kept after the session's whole state, as `StoreRows.PendingChanges` (in the statement that reads the state) */
  const pendingChanges = (sessionId: string) =>
    sql`(SELECT '[' || group_concat(c.changes, ',' ORDER BY c.version) || ']' FROM ${changesTable} c
   WHERE c.session_id = ${sessionId})`

  // the state is not read when the session is still at the version the caller knows
  const selectSession = SqlSchema.findOne({
    Request: Schema.Struct({ sessionId: Schema.String, knownVersion: Schema.NullOr(Schema.Number) }),
    Result: SessionRow,
    execute: ({ knownVersion, sessionId }) =>
      sql`SELECT session_id, workflow_name, user_id, session_name, version, created_at, updated_at,
  CASE WHEN version = ${knownVersion} THEN NULL ELSE state END AS state,
  (SELECT run_id FROM ${activeTable} a WHERE a.session_id = ${sessionId} AND a.status = 'paused'
   ORDER BY a.started_at LIMIT 1) AS paused_run_id,
  CASE WHEN changes_size = 0 OR version = ${knownVersion} THEN NULL ELSE ${pendingChanges(sessionId)} END AS pending_changes
FROM ${sessions} WHERE session_id = ${sessionId}`.withoutTransform
  })

  const selectInfo = SqlSchema.findOne({
    Request: Schema.String,
    Result: SessionInfoRow,
    execute: (sessionId) =>
      sql`SELECT session_id, workflow_name, user_id, session_name, version, created_at, updated_at
FROM ${sessions} WHERE session_id = ${sessionId}`.withoutTransform
  })

  const selectOwner = SqlSchema.findOne({
    Request: Schema.String,
    Result: OwnerRow,
    execute: (sessionId) => sql`SELECT user_id, version FROM ${sessions} WHERE session_id = ${sessionId}`.withoutTransform
  })

  /** what a commit's first statement returns (the sizes where it asks for them) */
  const decodeWritten = Schema.decodeUnknown(Schema.Array(Schema.Struct({
    ...VersionRow.fields,
    state_size: Schema.optional(Schema.Number),
    base_size: Schema.optional(Schema.Number),
    changes_size: Schema.optional(Schema.Number)
  })))

  const load = Effect.fn("SqliteSessionStore.load")(
    function*(sessionId: string, options?: SessionStore.LoadOptions) {
      const knownVersion = options?.knownVersion ?? null
      const row = yield* selectSession({ sessionId, knownVersion })
      if (Option.isNone(row)) return Option.none<SessionStore.StoredSession>()
      return Option.some(yield* StoreRows.toStoredSession(row.value, knownVersion))
    },
    retryBusy("load"),
    Effect.catchTags({ SqlError: storeError("load"), ParseError: storeError("load") })
  )

  const info = Effect.fn("SqliteSessionStore.info")(
    function*(sessionId: string) {
      return Option.map(yield* selectInfo(sessionId), StoreRows.toInfo)
    },
    retryBusy("info"),
    Effect.catchTags({ SqlError: storeError("info"), ParseError: storeError("info") })
  )

  /** Why a conditional write touched no row: the session is missing, someone else's, or at another version. */
  const rejected = (commit: SessionStore.Commit) =>
    Effect.flatMap(selectOwner(commit.sessionId), (existing) => StoreRows.rejected(commit, existing))

  /**
   * A commit. With changes (to an existing session), the session's row takes
   * the version and the sizes only, and the changes go to a row of the
   * changes table; the session's whole state lives there too, as a change
   * that sets it (its row's `state` is then `null`), once it is written with
   * changes: so the session's row stays small, and a commit's statements do
   * not grow with the state. When the kept changes outweigh the last whole
   * state (see `minPendingChanges`), or the row still holds a large state, the
   * commit writes the whole state as that one change row instead.
   */
  const commit = Effect.fn("SqliteSessionStore.commit")(
    function*(commit: SessionStore.Commit) {
      const now = yield* Clock.currentTimeMillis
      const changes = yield* StoreRows.changesJson("commit", commit)
      const state = commit.state === undefined || changes !== null ? null : yield* StoreRows.stateJson("commit", commit.state)
      const runRow = commit.run === undefined ? undefined : yield* StoreRows.toRunRow("commit", commit.sessionId, commit.run)
      const userId = commit.userId ?? null
      const lastRunId = commit.run?.runId ?? null

      // The first statement of the transaction is a write, so it takes the
      // write lock at once (or fails with SQLITE_BUSY within a few ms, and the
      // attempt is rolled back and retried after a sleep) and everything after
      // it sees the latest committed data. The version and owner checks are in
      // its WHERE clause.
      const upsert = changes !== null
        ? sql`UPDATE ${sessions} SET version = version + 1, updated_at = ${now}, last_run_id = ${lastRunId},
  changes_size = changes_size + ${changes.length}
WHERE session_id = ${commit.sessionId} AND version = ${commit.expectedVersion}
  AND (user_id IS NULL OR user_id = ${userId})
RETURNING version, state_size, base_size, changes_size`.withoutTransform
        : state === null
        ? sql`UPDATE ${sessions} SET updated_at = ${now}
WHERE session_id = ${commit.sessionId} AND (user_id IS NULL OR user_id = ${userId})
RETURNING version`.withoutTransform
        : commit.expectedVersion === 0
        ? sql`INSERT INTO ${sessions}
  (session_id, workflow_name, user_id, session_name, state, state_size, base_size, version, created_at, updated_at, last_run_id)
VALUES (${commit.sessionId}, ${commit.workflowName}, ${userId}, NULL, ${state}, ${state.length}, ${state.length},
  1, ${now}, ${now}, ${lastRunId})
ON CONFLICT (session_id) DO NOTHING
RETURNING version`.withoutTransform
        : sql`UPDATE ${sessions} SET state = ${state}, state_size = ${state.length}, base_size = ${state.length},
  version = version + 1, updated_at = ${now}, last_run_id = ${lastRunId}
WHERE session_id = ${commit.sessionId} AND version = ${commit.expectedVersion}
  AND (user_id IS NULL OR user_id = ${userId})
RETURNING version, changes_size`.withoutTransform

      /** the whole state as the one change row of the session (`text`: its change list) */
      const writeBase = (version: number, text: string) =>
        Effect.gen(function*() {
          yield* sql`DELETE FROM ${changesTable} WHERE session_id = ${commit.sessionId}`.withoutTransform
          yield* sql`INSERT INTO ${changesTable} (session_id, version, changes)
VALUES (${commit.sessionId}, ${version}, ${text})`.withoutTransform
          yield* sql`UPDATE ${sessions} SET state = 'null', state_size = 4, base_size = ${text.length},
  changes_size = ${text.length} WHERE session_id = ${commit.sessionId}`.withoutTransform
        })

      return yield* Effect.gen(function*() {
        const [written] = yield* Effect.flatMap(upsert, decodeWritten)
        if (written === undefined) return yield* rejected(commit)
        if (commit.ends !== undefined) {
          const ended = yield* sql`DELETE FROM ${activeTable}
WHERE run_id = ${commit.ends.runId} AND owner = ${commit.ends.owner} RETURNING run_id`.withoutTransform
          if (ended.length === 0) return yield* runLost(commit.ends.runId)
        }
        if (commit.state !== undefined) {
          const paused = yield* sql<{ run_id: string }>`SELECT run_id FROM ${activeTable}
WHERE session_id = ${commit.sessionId} AND status = 'paused' LIMIT 1`.withoutTransform
          if (paused.length > 0) {
            return yield* new WorkflowError.SessionPaused({ sessionId: commit.sessionId, runId: paused[0]!.run_id })
          }
        }
        if (changes !== null) {
          const stateSize = written.state_size ?? 0
          const baseSize = written.base_size ?? 0
          // the characters of changes after the last whole state; once moved out, that state is
          // itself a change row (and no longer the row's state column, so the two sizes differ)
          const pending = (written.changes_size ?? 0) - (baseSize !== stateSize ? baseSize : 0)
          if (StoreRows.setsWholeState(commit.changes!)) {
            yield* writeBase(written.version, changes)
          } else if (stateSize > minPendingChanges || StoreRows.changesOutweighState(baseSize, pending)) {
            yield* writeBase(written.version, wholeStateChange(yield* StoreRows.stateJson("commit", commit.state)))
          } else {
            yield* sql`INSERT INTO ${changesTable} (session_id, version, changes)
VALUES (${commit.sessionId}, ${written.version}, ${changes})`.withoutTransform
          }
        } else if ((written.changes_size ?? 0) > 0) {
          // the whole state written in the row: the change rows are dropped
          yield* sql`DELETE FROM ${changesTable} WHERE session_id = ${commit.sessionId}`.withoutTransform
          yield* sql`UPDATE ${sessions} SET changes_size = 0 WHERE session_id = ${commit.sessionId}`.withoutTransform
        }
        // a retried run's record replaces the one of its earlier attempt
        if (runRow !== undefined) yield* sql`INSERT OR REPLACE INTO ${runsTable} ${sql.insert(runRow)}`.withoutTransform
        return written.version
      }).pipe(write("commit"))
    },
    Effect.catchTags({ SqlError: storeError("commit"), ParseError: storeError("commit") })
  )

  const list = Effect.fn("SqliteSessionStore.list")(
    function*(filter: SessionStore.ListFilter) {
      const clauses = [
        ...(filter.workflowName === undefined ? [] : [sql`workflow_name = ${filter.workflowName}`]),
        ...(filter.userId === undefined ? [] : [sql`user_id = ${filter.userId}`])
      ]
      const rows = yield* sql`SELECT session_id, workflow_name, user_id, session_name, version, created_at, updated_at
FROM ${sessions} WHERE ${sql.and(clauses)} ORDER BY updated_at DESC, session_id`.withoutTransform
      // re-sorted in JS so that ties order exactly as in every other store
      // (SQLite compares text as UTF-8 bytes, JS as UTF-16 code units)
      return StoreRows.toListing(rows, SessionInfoRow)
    },
    retryBusy("list"),
    Effect.catchTags({ SqlError: storeError("list") })
  )

  const remove = Effect.fn("SqliteSessionStore.remove")(
    function*(sessionId: string) {
      const deleted = yield* Effect.gen(function*() {
        yield* sql`DELETE FROM ${runsTable} WHERE session_id = ${sessionId}`.withoutTransform
        yield* sql`DELETE FROM ${activeTable} WHERE session_id = ${sessionId}`.withoutTransform
        yield* sql`DELETE FROM ${changesTable} WHERE session_id = ${sessionId}`.withoutTransform
        return yield* sql`DELETE FROM ${sessions} WHERE session_id = ${sessionId} RETURNING session_id`.withoutTransform
      }).pipe(write("remove"))
      return deleted.length > 0
    },
    Effect.catchTags({ SqlError: storeError("remove") })
  )

  const setName = Effect.fn("SqliteSessionStore.setName")(
    function*(sessionId: string, name: string) {
      const now = yield* Clock.currentTimeMillis
      const updated = yield* sql`UPDATE ${sessions} SET session_name = ${name}, updated_at = ${now}
WHERE session_id = ${sessionId} RETURNING version`.withoutTransform.pipe(write("setName"))
      if (updated.length === 0) return yield* new WorkflowError.SessionNotFound({ sessionId })
    },
    Effect.catchTags({ SqlError: storeError("setName") })
  )

  const selectRuns = (sessionId: string, limit: number | undefined, status: SessionStore.RunStatus | undefined) => {
    const where = status === undefined
      ? sql`session_id = ${sessionId}`
      : sql`session_id = ${sessionId} AND status = ${status}`
    return limit === undefined
      ? sql`SELECT run_id, session_id, workflow_name, user_id, status, input, content, error, started_at, completed_at
FROM ${runsTable} WHERE ${where} ORDER BY seq`.withoutTransform
      : sql`SELECT * FROM (
  SELECT seq, run_id, session_id, workflow_name, user_id, status, input, content, error, started_at, completed_at
  FROM ${runsTable} WHERE ${where} ORDER BY seq DESC LIMIT ${limit}
) ORDER BY seq`.withoutTransform
  }

  const runs = Effect.fn("SqliteSessionStore.runs")(
    function*(sessionId: string, options: SessionStore.RunsOptions) {
      const limit = StoreRows.runsLimit(options.limit)
      if (limit === 0) return []
      const rows = yield* SqlSchema.findAll({
        Request: Schema.String,
        Result: RunRow,
        execute: (id) => selectRuns(id, limit, options.status)
      })(sessionId)
      return yield* StoreRows.toRunRecords("runs", `a stored run of session '${sessionId}'`, rows)
    },
    retryBusy("runs"),
    Effect.catchTags({ SqlError: storeError("runs"), ParseError: storeError("runs") })
  )

  // -- unfinished runs ---------------------------------------------------------

  const decodeActive = Schema.decodeUnknown(Schema.Array(ActiveRow))
  const selectActive = (runId: string) =>
    Effect.flatMap(
      sql`SELECT * FROM ${activeTable} WHERE run_id = ${runId}`.withoutTransform,
      (rows) => Effect.map(decodeActive(rows), (decoded) => Option.map(Option.fromNullable(decoded[0]), StoreRows.toActiveRun))
    )
  const selectRecord = SqlSchema.findOne({
    Request: Schema.String,
    Result: RunRow,
    execute: (id) =>
      sql`SELECT run_id, session_id, workflow_name, user_id, status, input, content, error, started_at, completed_at
FROM ${runsTable} WHERE run_id = ${id}`.withoutTransform
  })
  const lookup = (runId: string) =>
    StoreRows.lookupRun(runId, { active: selectActive(runId), record: selectRecord(runId) })
  const runLost = (runId: string) =>
    Effect.flatMap(selectActive(runId), (active) => Effect.fail(StoreRows.runLost(runId, active)))

  const startRun = Effect.fn("SqliteSessionStore.startRun")(
    function*(run: SessionStore.ActiveRun) {
      // one statement: inserted unless the id is unfinished or completed
      const inserted = yield* sql`INSERT INTO ${activeTable}
  (run_id, session_id, workflow_name, user_id, status, owner, lease_expires_at, base_version, durability, data, started_at, updated_at)
SELECT ${run.runId}, ${run.sessionId}, ${run.workflowName}, ${run.userId ?? null}, ${run.status}, ${run.owner},
  ${run.leaseExpiresAt}, ${run.baseVersion}, ${run.durability}, ${StoreRows.activeData(run)}, ${run.startedAt}, ${run.updatedAt}
WHERE NOT EXISTS (SELECT 1 FROM ${runsTable} WHERE run_id = ${run.runId} AND status = 'completed')
ON CONFLICT (run_id) DO NOTHING
RETURNING run_id`.withoutTransform.pipe(write("startRun"))
      if (inserted.length > 0) return Option.none<SessionStore.RunLookup>()
      return yield* lookup(run.runId).pipe(retryBusy("startRun"))
    },
    Effect.catchTags({ SqlError: storeError("startRun"), ParseError: storeError("startRun") })
  )

  const getRun = Effect.fn("SqliteSessionStore.getRun")(
    function*(runId: string) {
      return yield* lookup(runId)
    },
    retryBusy("getRun"),
    Effect.catchTags({ SqlError: storeError("getRun"), ParseError: storeError("getRun") })
  )

  const updateRun = Effect.fn("SqliteSessionStore.updateRun")(
    function*(runId: string, owner: string, update: SessionStore.RunUpdate) {
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.gen(function*() {
        // the first statement writes (takes the lock) and checks the owner
        const touched = yield* sql`UPDATE ${activeTable} SET updated_at = ${now}
WHERE run_id = ${runId} AND owner = ${owner} RETURNING *`.withoutTransform
        const [row] = yield* decodeActive(touched)
        if (row === undefined) return yield* runLost(runId)
        const next = StoreRows.applyRunUpdate(StoreRows.toActiveRun(row), update, now)
        yield* sql`UPDATE ${activeTable} SET status = ${next.status}, owner = ${next.owner},
  lease_expires_at = ${next.leaseExpiresAt}, data = ${StoreRows.activeData(next)}
WHERE run_id = ${runId}`.withoutTransform
      }).pipe(write("updateRun"))
    },
    Effect.catchTags({ SqlError: storeError("updateRun"), ParseError: storeError("updateRun") })
  )

  const claimRun = Effect.fn("SqliteSessionStore.claimRun")(
    function*(runId: string, claim: { readonly owner: string; readonly now: number; readonly leaseExpiresAt: number }) {
      // one conditional write: of several claims, exactly one finds the run claimable
      const claimed = yield* sql`UPDATE ${activeTable}
SET status = 'running', owner = ${claim.owner}, lease_expires_at = ${claim.leaseExpiresAt}, updated_at = ${claim.now}
WHERE run_id = ${runId} AND (status = 'paused' OR lease_expires_at < ${claim.now})
RETURNING *`.withoutTransform.pipe(write("claimRun"))
      const [row] = yield* decodeActive(claimed)
      if (row !== undefined) return StoreRows.toActiveRun(row)
      const existing = yield* selectActive(runId).pipe(retryBusy("claimRun"))
      return yield* StoreRows.claimRejected(runId, existing)
    },
    Effect.catchTags({ SqlError: storeError("claimRun"), ParseError: storeError("claimRun") })
  )

  const activeRuns = Effect.fn("SqliteSessionStore.activeRuns")(
    function*(filter: SessionStore.ActiveFilter) {
      const clauses = [
        ...(filter.sessionId === undefined ? [] : [sql`session_id = ${filter.sessionId}`]),
        ...(filter.workflowName === undefined ? [] : [sql`workflow_name = ${filter.workflowName}`]),
        ...(filter.status === undefined ? [] : [sql`status = ${filter.status}`])
      ]
      const rows = yield* sql`SELECT * FROM ${activeTable} WHERE ${sql.and(clauses)} ORDER BY started_at, run_id`.withoutTransform
      return (yield* decodeActive(rows)).map(StoreRows.toActiveRun)
    },
    retryBusy("activeRuns"),
    Effect.catchTags({ SqlError: storeError("activeRuns"), ParseError: storeError("activeRuns") })
  )

  const endRun = Effect.fn("SqliteSessionStore.endRun")(
    function*(runId: string, record: SessionStore.RunRecord, owner?: string) {
      const now = yield* Clock.currentTimeMillis
      const recordRow = yield* StoreRows.toRunRow("endRun", "", record)
      return yield* Effect.gen(function*() {
        const removed = yield* (owner === undefined
          ? sql`DELETE FROM ${activeTable} WHERE run_id = ${runId} RETURNING *`.withoutTransform
          : sql`DELETE FROM ${activeTable} WHERE run_id = ${runId} AND owner = ${owner} RETURNING *`.withoutTransform)
        const [row] = yield* decodeActive(removed)
        if (row === undefined) {
          const existing = yield* selectActive(runId)
          if (Option.isNone(existing)) {
            return yield* StoreRows.runNotFound(runId)
          }
          return yield* runLost(runId)
        }
        const run = StoreRows.toActiveRun(row)
        const initial = yield* StoreRows.stateJson("endRun", run.initialState ?? {})
        // a run of a new session ends with the session created (from its initial state) to hold the record
        yield* sql`INSERT INTO ${sessions}
  (session_id, workflow_name, user_id, session_name, state, state_size, base_size, version, created_at, updated_at)
VALUES (${run.sessionId}, ${run.workflowName}, ${run.userId ?? null}, NULL, ${initial}, ${initial.length}, ${initial.length},
  1, ${now}, ${now})
ON CONFLICT (session_id) DO UPDATE SET updated_at = ${now}`.withoutTransform
        yield* sql`INSERT OR REPLACE INTO ${runsTable} ${sql.insert({ ...recordRow, session_id: run.sessionId })}`.withoutTransform
      }).pipe(write("endRun"))
    },
    Effect.catchTags({ SqlError: storeError("endRun"), ParseError: storeError("endRun") })
  )

  // -- watching ----------------------------------------------------------------

  const selectVersion = SqlSchema.findOne({
    Request: Schema.String,
    Result: VersionRow,
    execute: (sessionId) => sql`SELECT version FROM ${sessions} WHERE session_id = ${sessionId}`.withoutTransform
  })
  const selectChange = SqlSchema.findOne({
    Request: Schema.String,
    Result: ChangeRow,
    execute: (sessionId) =>
      sql`SELECT session_id, workflow_name, version, state, last_run_id, updated_at,
  CASE WHEN changes_size = 0 THEN NULL ELSE ${pendingChanges(sessionId)} END AS pending_changes
FROM ${sessions} WHERE session_id = ${sessionId}`.withoutTransform
  })

  /** One poll: the session's change when its version went above `last`. */
  const changeAbove = (sessionId: string, last: number) =>
    StoreRows.changeAbove(last, selectVersion(sessionId), selectChange(sessionId)).pipe(
      retryBusy("watch"),
      Effect.catchTags({ SqlError: storeError("watch"), ParseError: storeError("watch") })
    )

  const watch = (sessionId: string, options?: SessionStore.WatchOptions) =>
    Stream.unwrap(Effect.map(
      StoreRows.pollInterval(options?.pollInterval ?? SessionStore.defaultPollInterval),
      (interval) => StoreRows.watchStream(Stream.fromSchedule(Schedule.spaced(interval)), (last) => changeAbove(sessionId, last))
    )).pipe(Stream.withSpan("SqliteSessionStore.watch"))

  return SessionStore.make({
    watch,
    load,
    info,
    commit,
    list,
    remove,
    setName,
    runs,
    startRun,
    getRun,
    updateRun,
    claimRun,
    activeRuns,
    endRun
  })
})

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
    makeStore(
      {
        table: options.table,
        lockTimeout: options.lockTimeout,
        migrate: options.readonly !== true && options.migrate !== false
      },
      options.filename
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
