/**
 * A `SessionStore` on PostgreSQL, through `@effect/sql-pg`'s `PgClient`: the
 * store for several app servers sharing their sessions.
 *
 * Sessions live in one table (default `sessionflow_sessions`), their runs in a
 * second one (`<table>_runs`, one row per run), unfinished runs in a third
 * (`<table>_active`), the changes of `persist: "changes"` commits in a fourth
 * (`<table>_changes`), and the store keeps its own migrations table
 * (`<table>_migrations`), optionally all in one `schema`. A run's commit is
 * one statement (the session's write, its run record and the notification),
 * else one short transaction whose first statement is the write itself; the
 * version check is in the write's `WHERE` clause: the row lock it takes makes a
 * concurrent commit on the same session wait and then find the version
 * changed, so two servers can never both win, and the loser fails with
 * `SessionConflict` having written nothing.
 *
 * A commit with `changes` (a workflow with `persist: "changes"` running from
 * its cached state) leaves the state column alone: the same one statement
 * bumps the version and keeps the changes as a row of `<table>_changes`, so
 * its cost does not grow with the state. Loads and watchers read the changes
 * kept after the state in the statement that reads the state, and fold them
 * in. Once they outweigh the state (`StoreRows.minPendingChanges`, 65,536
 * characters, at least), the commit is a transaction instead, whose second
 * statement writes the whole state and drops them; a whole-state commit
 * drops them too.
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Fragment } from "@effect/sql/Statement"
import * as PgClient from "@effect/sql-pg/PgClient"
import { SessionStore, StoreRows, WorkflowError } from "@sessionflow/core"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type { ConfigError } from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/**
 * The session table used when no `table` option is given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTable: string = StoreRows.defaultTable

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
  /** shown in `pg_stat_activity` (default `sessionflow`) */
  readonly applicationName?: string | undefined
}

const identifierOptions = { reservedPrefix: "pg_", lowercase: true } as const

/** The names of the store's tables, qualified with the schema when there is one. */
interface Tables extends StoreRows.TableNames {
  readonly schema: string | undefined
  /** the channel commits are announced on */
  readonly channel: string
}

const resolveTables = (options: StoreOptions | undefined): Effect.Effect<Tables, WorkflowError.SessionStoreError> =>
  Effect.gen(function*() {
    const names = yield* StoreRows.tableNames(options?.table ?? defaultTable, identifierOptions)
    const schema = options?.schema === undefined
      ? undefined
      : yield* StoreRows.checkIdentifier("schema", options.schema, { ...identifierOptions, maxLength: 63 })
    const qualify = (name: string) => (schema === undefined ? name : `${schema}.${name}`)
    return {
      schema,
      sessions: qualify(names.sessions),
      runs: qualify(names.runs),
      active: qualify(names.active),
      changes: qualify(names.changes),
      migrations: qualify(names.migrations),
      channel: channelName(qualify(names.sessions))
    }
  })

/**
 * The channel a store's commits are announced on: its session table's
 * (qualified) name, or a hash of it when that is longer than a channel name
 * may be (63 bytes).
 */
const channelName = (sessions: string): string => {
  if (sessions.length <= 63) return sessions
  // FNV-1a, 32 bits: the same in every process
  let hash = 0x811c9dc5
  for (let i = 0; i < sessions.length; i++) hash = Math.imul(hash ^ sessions.charCodeAt(i), 0x01000193) >>> 0
  return `sessionflow_${hash.toString(16).padStart(8, "0")}`
}

/**
 * The payload of a commit's notification: the session id, or `*` ("some
 * session", every watcher reads) for an id too long for a payload.
 */
const notificationPayload = (sessionId: string): string =>
  Buffer.byteLength(sessionId, "utf8") < 7900 ? sessionId : anySession

const anySession = "*"

/**
 * How often a watcher also reads its session when no `pollInterval` is given:
 * notifications wake it at once; this only bounds the wait for a notification
 * missed while its listening connection was being set up.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultWatchInterval: Duration.Duration = Duration.seconds(5)

/** The table name without its schema (index names are never qualified). */
const local = (name: string) => name.slice(name.lastIndexOf(".") + 1)

// -----------------------------------------------------------------------------
// migrations (shipped migrations are never edited: add a new one instead)
// -----------------------------------------------------------------------------

const migrations = (sql: SqlClient.SqlClient, t: Tables) =>
  Migrator.fromRecord({
    "0001_create_sessions": Effect.gen(function*() {
      yield* sql`CREATE TABLE ${sql(t.sessions)} (
  session_id TEXT PRIMARY KEY,
  workflow_name TEXT NOT NULL,
  user_id TEXT,
  session_name TEXT,
  state TEXT NOT NULL,
  version INTEGER NOT NULL,
  last_run_id TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
)`
      yield* sql`CREATE INDEX ${sql(`${local(t.sessions)}_updated_idx`)} ON ${
        sql(t.sessions)
      } (updated_at DESC, session_id)`
    }),
    "0002_create_runs": Effect.gen(function*() {
      yield* sql`CREATE TABLE ${sql(t.runs)} (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL REFERENCES ${sql(t.sessions)} (session_id) ON DELETE CASCADE,
  workflow_name TEXT NOT NULL,
  user_id TEXT,
  status TEXT NOT NULL,
  input TEXT,
  content TEXT,
  error TEXT,
  started_at BIGINT NOT NULL,
  completed_at BIGINT NOT NULL
)`
      yield* sql`CREATE INDEX ${sql(`${local(t.runs)}_session_idx`)} ON ${sql(t.runs)} (session_id, seq)`
    }),
    // unfinished runs: running (with an owner and a lease) or paused; not tied
    // to a session row, which a new session's first run creates only when it ends
    "0003_create_active": Effect.gen(function*() {
      yield* sql`CREATE TABLE ${sql(t.active)} (
  run_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  workflow_name TEXT NOT NULL,
  user_id TEXT,
  status TEXT NOT NULL,
  owner TEXT NOT NULL,
  lease_expires_at BIGINT NOT NULL,
  base_version INTEGER NOT NULL,
  durability TEXT NOT NULL,
  data TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
)`
      yield* sql`CREATE INDEX ${sql(`${local(t.active)}_session_idx`)} ON ${sql(t.active)} (session_id, status)`
      yield* sql`CREATE INDEX ${sql(`${local(t.active)}_workflow_idx`)} ON ${sql(t.active)} (workflow_name, started_at)`
    }),
    // the changes committed after a session's last whole state (`persist: "changes"`), with the
    // sizes (in characters) the store decides when to write the whole state again from. The
    // columns are added with a constant default, which rewrites no row: a session stored before
    // counts its state as 0 characters until its next whole state, so its changes are written
    // into it once they pass `StoreRows.minPendingChanges` (which is correct, only sooner).
    "0004_create_changes": Effect.gen(function*() {
      yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN state_size BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN changes_size BIGINT NOT NULL DEFAULT 0`
      yield* sql`CREATE TABLE ${sql(t.changes)} (
  session_id TEXT NOT NULL REFERENCES ${sql(t.sessions)} (session_id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  changes TEXT NOT NULL,
  PRIMARY KEY (session_id, version)
)`
    })
  })

/** The id of the newest migration above. */
const latestMigrationId = 4

// -----------------------------------------------------------------------------
// errors
// -----------------------------------------------------------------------------

const describeError = (error: StoreRows.StoreFailure): string => StoreRows.describeFailure("PostgreSQL", error)

const storeError = (method: string) => (error: StoreRows.StoreFailure) =>
  new WorkflowError.SessionStoreError({ method, description: describeError(error), cause: error })

const makeError = (description: string, cause?: unknown) =>
  new WorkflowError.SessionStoreError({ method: "make", description, ...(cause === undefined ? {} : { cause }) })

/** PostgreSQL's error code (SQLSTATE) behind a failure, if any. */
const pgCode = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; depth < 8 && Predicate.isObject(current); depth++) {
    if (Predicate.hasProperty(current, "code") && typeof current.code === "string") return current.code
    current = Predicate.hasProperty(current, "cause") ? current.cause : undefined
  }
  return undefined
}

const isSqlError = (u: unknown): u is SqlError => Predicate.isTagged(u, "SqlError")

/**
 * Two connections creating the same table, schema or migrations row at once:
 * one of them fails (duplicate table or schema, unique violation); trying
 * again finds them created.
 */
const isCreationRace = (error: unknown): boolean => {
  const code = pgCode(error)
  return code === "42P07" || code === "42P06" || code === "23505"
}

// -----------------------------------------------------------------------------
// opening
// -----------------------------------------------------------------------------

const where = (t: Tables) => (t.schema === undefined ? "" : ` in schema '${t.schema}'`)

/** Creates the schema and the tables or brings them to the latest migration. */
const migrateTables = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    if (t.schema !== undefined) yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(t.schema)}`
    yield* Migrator.make({})({ loader: migrations(sql, t), table: t.migrations }).pipe(
      Effect.catchAllDefect((defect) => defect instanceof Migrator.MigrationError ? Effect.fail(defect) : Effect.die(defect))
    )
    const [latest] = yield* sql<{ id: number | null }>`SELECT MAX(migration_id) AS id FROM ${sql(t.migrations)}`
    if ((latest?.id ?? 0) < latestMigrationId) return yield* new StoreRows.MigrationsPending()
  }).pipe(
    Effect.retry({
      while: (error) =>
        isCreationRace(error) || (error._tag === "MigrationError" && isCreationRace(error.cause)) ||
        error._tag === "MigrationsPending",
      schedule: Schedule.spaced("20 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(100)))
    }),
    Effect.mapError((error) =>
      makeError(
        `cannot create or migrate the tables of '${local(t.sessions)}'${where(t)}: ${
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

/** Checks, without creating or changing anything, that the tables exist and are fully migrated. */
const checkTables = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const [found] = yield* sql<{ sessions: string | null; runs: string | null; active: string | null; migrations: string | null }>`
SELECT to_regclass(${t.sessions})::text AS sessions, to_regclass(${t.runs})::text AS runs,
  to_regclass(${t.active})::text AS active, to_regclass(${t.migrations})::text AS migrations`
    if (found === undefined || found.sessions === null || found.runs === null || found.active === null || found.migrations === null) {
      return yield* makeError(`there is no session table '${local(t.sessions)}'${where(t)} (or it is not fully created)`)
    }
    const [latest] = yield* sql<{ id: number | null }>`SELECT MAX(migration_id) AS id FROM ${sql(t.migrations)}`
    const id = latest?.id ?? 0
    if (id < latestMigrationId) {
      return yield* makeError(
        `the tables of '${local(t.sessions)}'${where(t)} are at migration ${id} of ${latestMigrationId}: ` +
          "open them once with migrations on to migrate them"
      )
    }
  }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(makeError(describeError(error), error))))

// -----------------------------------------------------------------------------
// rows
// -----------------------------------------------------------------------------

/** PostgreSQL returns BIGINT columns as text (they may not fit a JS number); ours always do. */
const Integer = Schema.Union(Schema.Number, Schema.NumberFromString)

const { ActiveRow, ChangeRow, OwnerRow, RunRow, SessionInfoRow, SessionRow, VersionRow } = StoreRows.rowSchemas(Integer)

/** What a commit writes of the state: the whole state, or the changes to it (both as JSON text). */
type StateWrite =
  | { readonly _tag: "state"; readonly json: string }
  | { readonly _tag: "changes"; readonly json: string }

// -----------------------------------------------------------------------------
// constructors
// -----------------------------------------------------------------------------

/**
 * Builds a store on the `PgClient` in context, creating or migrating its
 * tables first (unless `migrate: false`). The store only reads and writes its
 * own tables and leaves the client's settings alone (its name transforms do
 * not apply to the store's queries).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("PgSessionStore.make")(function*(options?: StoreOptions) {
  const pg = yield* PgClient.PgClient
  // the tables' names are ours: never pass them through the client's name transforms
  const sql = pg.withoutTransforms()
  const t = yield* resolveTables(options)
  const sessions = sql(t.sessions)
  const runsTable = sql(t.runs)
  const activeTable = sql(t.active)
  const changesTable = sql(t.changes)

  yield* options?.migrate === false ? checkTables(sql, t) : migrateTables(sql, t)

  /**
   * `body` in one transaction. When the connection is lost on the way, the
   * server rolls the transaction back, and the client's own rollback fails
   * as well: that is a `SqlError` (the operation failed), not a defect.
   */
  const transaction = <A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
    sql.withTransaction(body).pipe(
      Effect.catchAllDefect((defect) => isSqlError(defect) ? Effect.fail(defect) : Effect.die(defect))
    )

  /**
   * The changes kept after a session's whole state, as `StoreRows.PendingChanges`: a
   * subquery of the statement that reads the state, so the two are one snapshot.
   */
  const pendingChanges = (sessionId: string) =>
    sql`(SELECT '[' || string_agg(c.changes, ',' ORDER BY c.version) || ']' FROM ${changesTable} c
   WHERE c.session_id = ${sessionId})`

  const selectSession = SqlSchema.findOne({
    Request: Schema.Struct({ sessionId: Schema.String, knownVersion: Schema.NullOr(Schema.Number) }),
    Result: SessionRow,
    // the state is left out when the caller already has this version of it
    execute: ({ knownVersion, sessionId }) =>
      sql`SELECT session_id, workflow_name, user_id, session_name, version, created_at, updated_at,
  CASE WHEN version = ${knownVersion}::integer THEN NULL ELSE state END AS state,
  (SELECT run_id FROM ${activeTable} a WHERE a.session_id = ${sessionId} AND a.status = 'paused'
   ORDER BY a.started_at, a.run_id COLLATE "C" LIMIT 1) AS paused_run_id,
  CASE WHEN changes_size = 0 OR version = ${knownVersion}::integer THEN NULL ELSE ${pendingChanges(sessionId)} END
    AS pending_changes
FROM ${sessions} WHERE session_id = ${sessionId}`
  })

  const selectInfo = SqlSchema.findOne({
    Request: Schema.String,
    Result: SessionInfoRow,
    execute: (sessionId) =>
      sql`SELECT session_id, workflow_name, user_id, session_name, version, created_at, updated_at
FROM ${sessions} WHERE session_id = ${sessionId}`
  })

  const selectOwner = SqlSchema.findOne({
    Request: Schema.String,
    Result: OwnerRow,
    execute: (sessionId) => sql`SELECT user_id, version FROM ${sessions} WHERE session_id = ${sessionId}`
  })

  /** what a commit's write returns: the new version and the session's sizes after it */
  const decodeWritten = Schema.decodeUnknown(Schema.Array(Schema.Struct({
    ...VersionRow.fields,
    state_size: Integer,
    changes_size: Integer
  })))

  const runColumns = sql.literal(
    "run_id, session_id, workflow_name, user_id, status, input, content, error, started_at, completed_at"
  )
  /** A record's values, typed (an `INSERT … SELECT` has no column types to infer them from). */
  const recordValues = (row: StoreRows.RunRow) =>
    sql`${row.run_id}::text, ${row.session_id}::text, ${row.workflow_name}::text, ${row.user_id}::text,
  ${row.status}::text, ${row.input}::text, ${row.content}::text, ${row.error}::text,
  ${row.started_at}::bigint, ${row.completed_at}::bigint`
  /** A retried run's record replaces its earlier attempt's, and moves to the end (a new `seq`). */
  const replacingRecord = sql`ON CONFLICT (run_id) DO UPDATE SET session_id = EXCLUDED.session_id,
  workflow_name = EXCLUDED.workflow_name, user_id = EXCLUDED.user_id, status = EXCLUDED.status, input = EXCLUDED.input,
  content = EXCLUDED.content, error = EXCLUDED.error, started_at = EXCLUDED.started_at,
  completed_at = EXCLUDED.completed_at, seq = DEFAULT`
  const writeRecord = (row: StoreRows.RunRow) =>
    sql`INSERT INTO ${runsTable} (${runColumns}) SELECT ${recordValues(row)} ${replacingRecord}`

  /**
   * Whether `changesSize` characters of changes may be kept after the session row's state:
   * `StoreRows.changesOutweighState`'s rule, negated, in SQL.
   */
  const keepable = (changesSize: Fragment) =>
    sql`${changesSize} <= GREATEST(state_size, ${StoreRows.minPendingChanges}::bigint)`

  /**
   * The statement that writes a commit's state (`write`): the session row created (expected
   * version 0; only if it does not exist) or updated at the expected version by its owner, only
   * if `onlyIf` holds, as its `written` CTE, with what goes with it:
   * - a whole state drops the changes kept before it;
   * - changes are kept (a row of the changes table) unless they now outweigh the state
   *   (`StoreRows.changesOutweighState`): then nothing is kept, the row's sizes say so, and the
   *   caller writes the whole state in a second statement of its transaction;
   * - `also.with`: more CTEs on `written` (a run's record).
   *
   * Selects the new version and sizes, and `also.select` (the notification), from `written`: no
   * row when a check failed. Its row lock makes a concurrent commit to the same session wait,
   * then re-check against the new row.
   */
  const writeState = (
    commit: SessionStore.Commit,
    write: StateWrite,
    now: number,
    onlyIf: Fragment,
    also: { readonly with?: ReadonlyArray<Fragment>; readonly select?: Fragment } = {}
  ) => {
    const userId = commit.userId ?? null
    const lastRunId = commit.run?.runId ?? null
    const returning = sql`RETURNING version, state_size, changes_size`
    const checked = sql`session_id = ${commit.sessionId} AND version = ${commit.expectedVersion}
  AND (user_id IS NULL OR user_id = ${userId}) AND ${onlyIf}`
    const written = commit.expectedVersion === 0
      ? sql`INSERT INTO ${sessions}
  (session_id, workflow_name, user_id, session_name, state, state_size, version, last_run_id, created_at, updated_at)
SELECT ${commit.sessionId}::text, ${commit.workflowName}::text, ${userId}::text, NULL, ${write.json}::text,
  ${write.json.length}::bigint, 1, ${lastRunId}::text, ${now}::bigint, ${now}::bigint
WHERE ${onlyIf}
ON CONFLICT (session_id) DO NOTHING
${returning}`
      : write._tag === "state"
      ? sql`UPDATE ${sessions}
SET state = ${write.json}, state_size = ${write.json.length}, changes_size = 0, version = version + 1,
  last_run_id = ${lastRunId}, updated_at = ${now}
WHERE ${checked} ${returning}`
      : sql`UPDATE ${sessions}
SET version = version + 1, changes_size = changes_size + ${write.json.length}, last_run_id = ${lastRunId},
  updated_at = ${now}
WHERE ${checked} ${returning}`
    const alongside = commit.expectedVersion === 0
      ? []
      : write._tag === "state"
      ? [sql`dropped AS (DELETE FROM ${changesTable} WHERE session_id = ${commit.sessionId} AND EXISTS (SELECT 1 FROM written))`]
      : [sql`kept AS (INSERT INTO ${changesTable} (session_id, version, changes)
  SELECT ${commit.sessionId}::text, version, ${write.json}::text FROM written
  WHERE ${keepable(sql`changes_size`)})`]
    const ctes = sql.join(",\n", false)([sql`written AS (${written})`, ...alongside, ...(also.with ?? [])])
    const columns = sql.join(", ", false)(["version", "state_size", "changes_size", ...(also.select === undefined ? [] : [also.select])])
    return sql`WITH ${ctes}
SELECT ${columns} FROM written`
  }

  const notify = (sessionId: string) => sql`SELECT pg_notify(${t.channel}, ${notificationPayload(sessionId)})`

  /**
   * The common commit — a run's new state or its changes (and its record), no unfinished run
   * to end — as one statement, so one round trip and its own transaction: the session row is
   * written only at the expected version (created only if it does not exist, for 0), by its
   * owner, with no paused run on it, and for changes only while they stay within the state's
   * weight (so that this statement never has to write the whole state as well); the record
   * is written (a retried run's replaces its earlier attempt's and moves to the end) and the
   * watchers notified only with it. No row back: a check failed or the changes outweigh the
   * state, and the transactional commit below tells which check, or writes the whole state.
   */
  const commitInOneStatement = (
    commit: SessionStore.Commit,
    write: StateWrite,
    runRow: StoreRows.RunRow | undefined,
    now: number
  ) => {
    const notPaused = sql`NOT EXISTS (SELECT 1 FROM ${activeTable} WHERE session_id = ${commit.sessionId} AND status = 'paused')`
    const statement = writeState(
      commit,
      write,
      now,
      write._tag === "changes"
        ? sql`${notPaused} AND ${keepable(sql`changes_size + ${write.json.length}`)}`
        : notPaused,
      {
        with: runRow === undefined ? [] : [sql`recorded AS (
  INSERT INTO ${runsTable} (${runColumns}) SELECT ${recordValues(runRow)} FROM written ${replacingRecord}
)`],
        select: sql`pg_notify(${t.channel}, ${notificationPayload(commit.sessionId)})`
      }
    )
    return Effect.map(Effect.flatMap(statement, decodeWritten), (rows) => rows[0]?.version)
  }

  const load = Effect.fn("PgSessionStore.load")(
    function*(sessionId: string, options?: SessionStore.LoadOptions) {
      const knownVersion = options?.knownVersion ?? null
      const row = yield* selectSession({ sessionId, knownVersion })
      if (Option.isNone(row)) return Option.none<SessionStore.StoredSession>()
      return Option.some(yield* StoreRows.toStoredSession(row.value, knownVersion))
    },
    Effect.catchTags({ SqlError: storeError("load"), ParseError: storeError("load") })
  )

  const info = Effect.fn("PgSessionStore.info")(
    function*(sessionId: string) {
      return Option.map(yield* selectInfo(sessionId), StoreRows.toInfo)
    },
    Effect.catchTags({ SqlError: storeError("info"), ParseError: storeError("info") })
  )

  const decodeActive = Schema.decodeUnknown(Schema.Array(ActiveRow))
  const selectActive = (runId: string) =>
    Effect.flatMap(
      sql`SELECT * FROM ${activeTable} WHERE run_id = ${runId}`,
      (rows) => Effect.map(decodeActive(rows), (decoded) => Option.map(Option.fromNullable(decoded[0]), StoreRows.toActiveRun))
    )
  const runLost = (runId: string) =>
    Effect.flatMap(selectActive(runId), (active) => Effect.fail(StoreRows.runLost(runId, active)))

  const commit = Effect.fn("PgSessionStore.commit")(
    function*(commit: SessionStore.Commit) {
      const now = yield* Clock.currentTimeMillis
      // changes to an existing session's state are kept instead of the state (see `writeState`);
      // changes that set the whole state are the state (a large value is out of the row: TOAST)
      const changes = commit.changes !== undefined && StoreRows.setsWholeState(commit.changes)
        ? null
        : yield* StoreRows.changesJson("commit", commit)
      const write: StateWrite | undefined = changes !== null
        ? { _tag: "changes", json: changes }
        : commit.state === undefined
        ? undefined
        : { _tag: "state", json: yield* StoreRows.stateJson("commit", commit.state) }
      const runRow = commit.run === undefined ? undefined : yield* StoreRows.toRunRow("commit", commit.sessionId, commit.run)

      if (write !== undefined && commit.ends === undefined) {
        const version = yield* commitInOneStatement(commit, write, runRow, now)
        if (version !== undefined) return version
      }
      // The first statement writes the session row with the version and owner
      // checks (a commit without state: the owner check only)
      const written = write === undefined
        ? sql`UPDATE ${sessions} SET updated_at = ${now}
WHERE session_id = ${commit.sessionId} AND (user_id IS NULL OR user_id = ${commit.userId ?? null})
RETURNING version, state_size, changes_size`
        : writeState(commit, write, now, sql`TRUE`)
      return yield* Effect.gen(function*() {
        const [row] = yield* Effect.flatMap(written, decodeWritten)
        if (row === undefined) {
          return yield* Effect.flatMap(selectOwner(commit.sessionId), (existing) => StoreRows.rejected(commit, existing))
        }
        if (commit.ends !== undefined) {
          const ended = yield* sql`DELETE FROM ${activeTable}
WHERE run_id = ${commit.ends.runId} AND owner = ${commit.ends.owner} RETURNING run_id`
          if (ended.length === 0) return yield* runLost(commit.ends.runId)
        }
        if (write !== undefined) {
          const paused = yield* sql<{ run_id: string }>`SELECT run_id FROM ${activeTable}
WHERE session_id = ${commit.sessionId} AND status = 'paused' LIMIT 1`
          if (paused.length > 0) {
            return yield* new WorkflowError.SessionPaused({ sessionId: commit.sessionId, runId: paused[0]!.run_id })
          }
        }
        if (write?._tag === "changes" && StoreRows.changesOutweighState(row.state_size, row.changes_size)) {
          // the changes outweigh the state (the write kept none): the whole state is written
          // instead and the changes kept before it dropped, in a second statement
          const whole = yield* StoreRows.stateJson("commit", commit.state)
          yield* sql`WITH dropped AS (DELETE FROM ${changesTable} WHERE session_id = ${commit.sessionId})
UPDATE ${sessions} SET state = ${whole}, state_size = ${whole.length}, changes_size = 0
WHERE session_id = ${commit.sessionId}`
        }
        if (runRow !== undefined) yield* writeRecord(runRow)
        // delivered to the listeners when the transaction commits
        if (write !== undefined) yield* notify(commit.sessionId)
        return row.version
      }).pipe(transaction)
    },
    Effect.catchTags({ SqlError: storeError("commit"), ParseError: storeError("commit") })
  )

  const list = Effect.fn("PgSessionStore.list")(
    function*(filter: SessionStore.ListFilter) {
      const clauses = [
        ...(filter.workflowName === undefined ? [] : [sql`workflow_name = ${filter.workflowName}`]),
        ...(filter.userId === undefined ? [] : [sql`user_id = ${filter.userId}`])
      ]
      const rows = yield* sql`SELECT session_id, workflow_name, user_id, session_name, version, created_at, updated_at
FROM ${sessions} WHERE ${sql.and(clauses)}`
      // sorted in JS so that ties order exactly as in every other store, whatever the collation
      return StoreRows.toListing(rows, SessionInfoRow)
    },
    Effect.catchTags({ SqlError: storeError("list") })
  )

  const remove = Effect.fn("PgSessionStore.remove")(
    function*(sessionId: string) {
      const deleted = yield* Effect.gen(function*() {
        yield* sql`DELETE FROM ${runsTable} WHERE session_id = ${sessionId}`
        yield* sql`DELETE FROM ${activeTable} WHERE session_id = ${sessionId}`
        // its kept changes go with it (ON DELETE CASCADE)
        return yield* sql`DELETE FROM ${sessions} WHERE session_id = ${sessionId} RETURNING session_id`
      }).pipe(transaction)
      return deleted.length > 0
    },
    Effect.catchTags({ SqlError: storeError("remove") })
  )

  const setName = Effect.fn("PgSessionStore.setName")(
    function*(sessionId: string, name: string) {
      const now = yield* Clock.currentTimeMillis
      const updated = yield* sql`UPDATE ${sessions} SET session_name = ${name}, updated_at = ${now}
WHERE session_id = ${sessionId} RETURNING version`
      if (updated.length === 0) return yield* new WorkflowError.SessionNotFound({ sessionId })
    },
    Effect.catchTags({ SqlError: storeError("setName") })
  )

  const runs = Effect.fn("PgSessionStore.runs")(
    function*(sessionId: string, options: SessionStore.RunsOptions) {
      const limit = StoreRows.runsLimit(options.limit)
      if (limit === 0) return []
      const where = options.status === undefined
        ? sql`session_id = ${sessionId}`
        : sql`session_id = ${sessionId} AND status = ${options.status}`
      const rows = yield* SqlSchema.findAll({
        Request: Schema.Void,
        Result: RunRow,
        execute: () =>
          limit === undefined
            ? sql`SELECT ${runColumns} FROM ${runsTable} WHERE ${where} ORDER BY seq`
            : sql`SELECT ${runColumns} FROM (
  SELECT seq, ${runColumns} FROM ${runsTable} WHERE ${where} ORDER BY seq DESC LIMIT ${limit}
) AS latest ORDER BY seq`
      })(undefined)
      return yield* StoreRows.toRunRecords("runs", `a stored run of session '${sessionId}'`, rows)
    },
    Effect.catchTags({ SqlError: storeError("runs"), ParseError: storeError("runs") })
  )

  // -- unfinished runs ---------------------------------------------------------

  const selectRecord = SqlSchema.findOne({
    Request: Schema.String,
    Result: RunRow,
    execute: (id) => sql`SELECT ${runColumns} FROM ${runsTable} WHERE run_id = ${id}`
  })
  const lookup = (runId: string) =>
    StoreRows.lookupRun(runId, { active: selectActive(runId), record: selectRecord(runId) })

  const startRun = Effect.fn("PgSessionStore.startRun")(
    function*(run: SessionStore.ActiveRun) {
      // one statement: inserted unless the id is unfinished or completed
      const inserted = yield* sql`INSERT INTO ${activeTable}
  (run_id, session_id, workflow_name, user_id, status, owner, lease_expires_at, base_version, durability, data, started_at, updated_at)
SELECT ${run.runId}, ${run.sessionId}, ${run.workflowName}, ${run.userId ?? null}, ${run.status}, ${run.owner},
  ${run.leaseExpiresAt}, ${run.baseVersion}, ${run.durability}, ${StoreRows.activeData(run)}, ${run.startedAt}, ${run.updatedAt}
WHERE NOT EXISTS (SELECT 1 FROM ${runsTable} WHERE run_id = ${run.runId} AND status = 'completed')
ON CONFLICT (run_id) DO NOTHING
RETURNING run_id`
      if (inserted.length > 0) return Option.none<SessionStore.RunLookup>()
      return yield* lookup(run.runId)
    },
    Effect.catchTags({ SqlError: storeError("startRun"), ParseError: storeError("startRun") })
  )

  const getRun = Effect.fn("PgSessionStore.getRun")(
    function*(runId: string) {
      return yield* lookup(runId)
    },
    Effect.catchTags({ SqlError: storeError("getRun"), ParseError: storeError("getRun") })
  )

  const updateRun = Effect.fn("PgSessionStore.updateRun")(
    function*(runId: string, owner: string, update: SessionStore.RunUpdate) {
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.gen(function*() {
        // locks the run's row while it is ours, else finds it is not
        const locked = yield* sql`SELECT * FROM ${activeTable} WHERE run_id = ${runId} AND owner = ${owner} FOR UPDATE`
        const [row] = yield* decodeActive(locked)
        if (row === undefined) return yield* runLost(runId)
        const next = StoreRows.applyRunUpdate(StoreRows.toActiveRun(row), update, now)
        yield* sql`UPDATE ${activeTable} SET status = ${next.status}, owner = ${next.owner},
  lease_expires_at = ${next.leaseExpiresAt}, data = ${StoreRows.activeData(next)}, updated_at = ${now}
WHERE run_id = ${runId}`
      }).pipe(transaction)
    },
    Effect.catchTags({ SqlError: storeError("updateRun"), ParseError: storeError("updateRun") })
  )

  const claimRun = Effect.fn("PgSessionStore.claimRun")(
    function*(runId: string, claim: { readonly owner: string; readonly now: number; readonly leaseExpiresAt: number }) {
      // one conditional write: a concurrent claim waits for the row lock, then
      // finds the run no longer claimable (exactly one wins)
      const claimed = yield* sql`UPDATE ${activeTable}
SET status = 'running', owner = ${claim.owner}, lease_expires_at = ${claim.leaseExpiresAt}, updated_at = ${claim.now}
WHERE run_id = ${runId} AND (status = 'paused' OR lease_expires_at < ${claim.now})
RETURNING *`
      const [row] = yield* decodeActive(claimed)
      if (row !== undefined) return StoreRows.toActiveRun(row)
      return yield* StoreRows.claimRejected(runId, yield* selectActive(runId))
    },
    Effect.catchTags({ SqlError: storeError("claimRun"), ParseError: storeError("claimRun") })
  )

  const activeRuns = Effect.fn("PgSessionStore.activeRuns")(
    function*(filter: SessionStore.ActiveFilter) {
      const clauses = [
        ...(filter.sessionId === undefined ? [] : [sql`session_id = ${filter.sessionId}`]),
        ...(filter.workflowName === undefined ? [] : [sql`workflow_name = ${filter.workflowName}`]),
        ...(filter.status === undefined ? [] : [sql`status = ${filter.status}`])
      ]
      const rows = yield* sql`SELECT * FROM ${activeTable} WHERE ${sql.and(clauses)} ORDER BY started_at, run_id COLLATE "C"`
      return (yield* decodeActive(rows)).map(StoreRows.toActiveRun)
    },
    Effect.catchTags({ SqlError: storeError("activeRuns"), ParseError: storeError("activeRuns") })
  )

  const endRun = Effect.fn("PgSessionStore.endRun")(
    function*(runId: string, record: SessionStore.RunRecord, owner?: string) {
      const now = yield* Clock.currentTimeMillis
      const recordRow = yield* StoreRows.toRunRow("endRun", record.sessionId, record)
      return yield* Effect.gen(function*() {
        const removed = yield* (owner === undefined
          ? sql`DELETE FROM ${activeTable} WHERE run_id = ${runId} RETURNING *`
          : sql`DELETE FROM ${activeTable} WHERE run_id = ${runId} AND owner = ${owner} RETURNING *`)
        const [row] = yield* decodeActive(removed)
        if (row === undefined) {
          const existing = yield* selectActive(runId)
          return yield* Option.isNone(existing) ? Effect.fail(StoreRows.runNotFound(runId)) : runLost(runId)
        }
        const run = StoreRows.toActiveRun(row)
        const initial = yield* StoreRows.stateJson("endRun", run.initialState ?? {})
        // a run of a new session ends with the session created (from its initial state) to hold the record
        yield* sql`INSERT INTO ${sessions}
  (session_id, workflow_name, user_id, session_name, state, state_size, version, last_run_id, created_at, updated_at)
VALUES (${run.sessionId}, ${run.workflowName}, ${run.userId ?? null}, NULL, ${initial}, ${initial.length}, 1, NULL, ${now}, ${now})
ON CONFLICT (session_id) DO UPDATE SET updated_at = ${now}`
        yield* writeRecord({ ...recordRow, session_id: run.sessionId })
        // the session may have been created (a watcher then sees its version 1)
        yield* notify(run.sessionId)
      }).pipe(transaction)
    },
    Effect.catchTags({ SqlError: storeError("endRun"), ParseError: storeError("endRun") })
  )

  // -- watching ----------------------------------------------------------------

  const selectVersion = SqlSchema.findOne({
    Request: Schema.String,
    Result: VersionRow,
    execute: (sessionId) => sql`SELECT version FROM ${sessions} WHERE session_id = ${sessionId}`
  })
  const selectChange = SqlSchema.findOne({
    Request: Schema.String,
    Result: ChangeRow,
    execute: (sessionId) =>
      sql`SELECT session_id, workflow_name, version, state, last_run_id, updated_at,
  CASE WHEN changes_size = 0 THEN NULL ELSE ${pendingChanges(sessionId)} END AS pending_changes
FROM ${sessions} WHERE session_id = ${sessionId}`
  })

  /**
   * Watching: the store listens on its channel (commits notify it in their
   * transaction, with the session id as payload) and reads the session when
   * a notification for it arrives, and every `pollInterval` (default
   * {@link defaultWatchInterval}) in case one was missed while listening began.
   */
  const watch = (sessionId: string, options?: SessionStore.WatchOptions) => {
    const notified = pg.listen(t.channel).pipe(
      Stream.filter((payload) => payload === sessionId || payload === anySession),
      Stream.mapError(storeError("watch"))
    )
    const read = (last: number) =>
      StoreRows.changeAbove(last, selectVersion(sessionId), selectChange(sessionId)).pipe(
        Effect.catchTags({ SqlError: storeError("watch"), ParseError: storeError("watch") })
      )
    return Stream.unwrap(Effect.map(StoreRows.pollInterval(options?.pollInterval ?? defaultWatchInterval), (interval) =>
      StoreRows.watchStream(
        // several wake-ups while a read is under way make one more read
        Stream.merge(notified, Stream.fromSchedule(Schedule.spaced(interval))).pipe(
          Stream.buffer({ capacity: 1, strategy: "sliding" })
        ),
        read
      ))).pipe(Stream.withSpan("PgSessionStore.watch"))
  }

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
  Layer.effect(SessionStore.SessionStore, make(options))

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
  return `${options.host ?? "localhost"}:${options.port ?? 5432}${options.database === undefined ? "" : `/${options.database}`}`
}

/** The `PgClient` `layer` opens: a pool, checked with one query; failing to connect is a `SessionStoreError`. */
const layerClient = (options: Options): Layer.Layer<PgClient.PgClient, WorkflowError.SessionStoreError> =>
  Layer.scopedContext(
    PgClient.make({
      url: redacted(options.url),
      host: options.host,
      port: options.port,
      database: options.database,
      username: options.username,
      password: redacted(options.password),
      ssl: options.ssl,
      maxConnections: options.maxConnections,
      connectTimeout: options.connectTimeout,
      applicationName: options.applicationName ?? "sessionflow"
    }).pipe(
      Effect.map((client) => Context.make(PgClient.PgClient, client)),
      Effect.mapError((error: SqlError) =>
        new WorkflowError.SessionStoreError({
          method: "open",
          description: `cannot connect to PostgreSQL at ${describeTarget(options)}: ${StoreRows.innermostMessage(error)}`,
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
