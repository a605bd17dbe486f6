/**
 * The SQL `SessionStore`: one implementation over `@effect/sql`'s
 * `SqlClient`, for SQLite and PostgreSQL. Statements are written once; the
 * few that really differ are chosen by the client's dialect
 * (`sql.onDialectOrElse`): the DDL (`./migrations.ts`), the commit (one
 * statement on PostgreSQL in the usual case), the wait for SQLite's write
 * lock, the aggregation of kept changes, the order of text, the replacement
 * of a retried run's record and the notification of watchers.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Fragment } from "@effect/sql/Statement"
import { SessionStore, WorkflowError, type WorkflowEvent } from "@sessionflow/core"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Driver, Options } from "../SqlSessionStore.js"
import * as history from "./history.js"
import * as migrations from "./migrations.js"
import * as rows from "./rows.js"

export const defaultLockTimeout: Duration.Duration = Duration.seconds(5)

export const defaultNotifiedPollInterval: Duration.Duration = Duration.seconds(5)

/**
 * How long a watcher tries to listen again after its listening
 * connection was lost, before it fails (`relistenTimeout`).
 */
const defaultRelistenTimeout: Duration.Duration = Duration.seconds(30)

/** The busy timeout of a SQLite connection the store did not open, when it cannot read it back. */
const defaultBusyTimeoutMillis = 5000

/**
 * The busy timeout of one SQLite write attempt, in milliseconds: how long
 * SQLite itself may wait (synchronously, blocking the process) for the write
 * lock before the attempt fails with SQLITE_BUSY and the store sleeps before
 * the next one.
 */
const attemptBusyTimeoutMillis = 5

/** A change list that sets the whole state: the text of one change row holding `state` (JSON text). */
const wholeStateChange = (state: string): string => `[{"op":"set","path":[],"value":${state}}]`

/**
 * The channel a PostgreSQL store's commits are announced on: its session
 * table's (qualified) name, or a hash of it when that is longer than a
 * channel name may be (63 bytes).
 */
const channelName = (sessions: string): string => {
  if (sessions.length <= 63) return sessions
  // FNV-1a, 32 bits: the same in every process
  let hash = 0x811c9dc5
  for (let i = 0; i < sessions.length; i++) hash = Math.imul(hash ^ sessions.charCodeAt(i), 0x01000193) >>> 0
  return `sessionflow_${hash.toString(16).padStart(8, "0")}`
}

const makeError = (description: string, cause?: unknown) =>
  new WorkflowError.SessionStoreError({ method: "make", description, ...(cause === undefined ? {} : { cause }) })

/** Validates the `table` and `schema` options and names the tables. */
export const resolveTables = (
  dialect: "sqlite" | "pg",
  options: Pick<Options, "table" | "schema"> | undefined
): Effect.Effect<migrations.Tables, WorkflowError.SessionStoreError> =>
  Effect.gen(function*() {
    const identifiers = dialect === "pg"
      ? { reservedPrefix: "pg_", lowercase: true }
      : { reservedPrefix: "sqlite_" }
    const names = yield* rows.tableNames(options?.table ?? rows.defaultTable, identifiers)
    if (options?.schema !== undefined && dialect !== "pg") {
      return yield* makeError("the schema option is for PostgreSQL")
    }
    const schema = options?.schema === undefined
      ? undefined
      : yield* rows.checkIdentifier("schema", options.schema, { ...identifiers, maxLength: 63 })
    const qualify = (name: string) => (schema === undefined ? name : `${schema}.${name}`)
    return {
      schema,
      sessions: qualify(names.sessions),
      runs: qualify(names.runs),
      active: qualify(names.active),
      changes: qualify(names.changes),
      events: qualify(names.events),
      queue: qualify(names.queue),
      versions: qualify(names.versions),
      signals: qualify(names.signals),
      schedules: qualify(names.schedules),
      migrations: qualify(names.migrations)
    }
  })

const { ActiveRow, ChangeRow, OwnerRow, RunRow, SessionInfoRow, SessionRow, VersionRow, WrittenRow } = rows.rowSchemas

const isSqlError = (u: unknown): u is SqlError => Predicate.isTagged(u, "SqlError")

/** The span attributes of the store's operations (as the workflow runs' spans name them). */
const sessionAttribute = "sessionflow.session.id"
const runAttribute = "sessionflow.run.id"

export const make = Effect.fn("SqlSessionStore.make")(function*(options?: Options, driver?: Driver) {
  // the tables' names are ours: never pass them through the client's name transforms
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = sql.onDialectOrElse({
    sqlite: () => "sqlite" as const,
    pg: () => "pg" as const,
    orElse: () => undefined
  })
  if (dialect === undefined) return yield* makeError("the SqlClient in context is neither SQLite nor PostgreSQL")
  const database = dialect === "pg" ? "PostgreSQL" : "SQLite"
  const describeError = (error: rows.StoreFailure): string => rows.describeFailure(database, error)
  const storeError = (method: string) => (error: rows.StoreFailure) =>
    new WorkflowError.SessionStoreError({ method, description: describeError(error), cause: error })

  const keepRuns = yield* SessionStore.checkKeepRuns("make", options?.keepRuns)
  const t = yield* resolveTables(dialect, options)
  yield* history.checkHistory(options?.history)
  const versions = history.make(sql, t.versions)
  const keepOf = (commit: { readonly history?: SessionStore.HistoryOptions | undefined }) =>
    SessionStore.keptVersions(commit.history ?? options?.history)
  const sessions = sql(t.sessions)
  const runsTable = sql(t.runs)
  const activeTable = sql(t.active)
  const changesTable = sql(t.changes)
  const eventsTable = sql(t.events)
  const signalsTable = sql(t.signals)
  const channel = channelName(t.sessions)
  /** where the tables are, for messages */
  const location = dialect === "pg"
    ? t.schema === undefined ? "" : ` in schema '${t.schema}'`
    : driver?.location === undefined
    ? " in the database"
    : ` in '${driver.location}'`
  const exclusiveConnection = driver?.exclusiveConnection === true

  if (options?.migrate === false) {
    const problem = yield* migrations.check(sql, t, location).pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(makeError(describeError(error), error)))
    )
    if (problem !== undefined) return yield* makeError(problem)
  } else {
    yield* migrations.migrate(sql, t).pipe(
      Effect.mapError((error) =>
        makeError(
          `cannot create or migrate the tables of '${migrations.local(t.sessions)}'${location}: ${
            error._tag === "MigrationError"
              ? `${error.message}${error.cause === undefined ? "" : `: ${rows.innermostMessage(error.cause)}`}`
              : error._tag === "MigrationsPending"
              ? "another connection left their migrations unfinished"
              : describeError(error)
          }`,
          error
        )
      )
    )
  }

  // -- waiting for locks ---------------------------------------------------------

  const lockTimeout = Duration.decode(options?.lockTimeout ?? defaultLockTimeout)
  const relistenTimeout = Duration.decode(options?.relistenTimeout ?? defaultRelistenTimeout)

  /**
   * SQLite: retries an operation that failed with SQLITE_BUSY (another
   * connection holds the write lock), sleeping between attempts: from 5 ms,
   * doubling up to 100 ms, with jitter, for `lockTimeout` in all; then it
   * fails with a `SessionStoreError` saying the database stayed locked. The
   * sleeps are ordinary `Effect` sleeps: they block nothing and are
   * interruptible where the caller is. Every retried operation is one
   * statement or one transaction that was rolled back, so re-running it is
   * safe. PostgreSQL waits for row locks in the server; there an operation
   * whose statement was cancelled from outside (`migrations.isCancelled`: the
   * cancel of another caller's interrupted query that reached this one's
   * connection late) is run again, at most twice.
   */
  const waitForLock =
    (method: string) =>
    <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | WorkflowError.SessionStoreError, R> =>
      // a statement that went through costs no retry policy: one is built only after a failure to retry
      dialect === "pg" ? retryCancelled(self, 2) : Effect.catchIf(self, migrations.isBusy, () =>
        Effect.retry(self, {
          while: migrations.isBusy,
          schedule: Schedule.exponential("5 millis", 2).pipe(
            Schedule.union(Schedule.spaced("100 millis")),
            Schedule.jittered,
            Schedule.upTo(lockTimeout)
          )
        }).pipe(
          Effect.delay("5 millis"),
          Effect.catchIf(migrations.isBusy, (cause) =>
            Effect.fail(
              new WorkflowError.SessionStoreError({
                method,
                description: `the database stayed locked by another connection for more than ${
                  Duration.format(lockTimeout)
                } (SQLITE_BUSY)`,
                cause
              })
            ))
        ))

  /** `self` again, at most `times` more times, while its statement was cancelled from outside. */
  const retryCancelled = <A, E, R>(self: Effect.Effect<A, E, R>, times: number): Effect.Effect<A, E, R> =>
    times === 0 ? self : Effect.catchIf(self, migrations.isCancelled, () => retryCancelled(self, times - 1))

  /**
   * `body` in one transaction. When the connection is lost on the way, the
   * server rolls the transaction back, and the client's own rollback fails
   * as well: that is a `SqlError` (the operation failed), not a defect.
   *
   * SQLite: under a busy timeout of a few milliseconds (on a connection the
   * store did not open, the connection's own is restored before the
   * transaction ends), so that an attempt that finds the database locked
   * fails at once with SQLITE_BUSY, is rolled back, and `waitForLock` tries
   * again.
   */
  const inTransaction = <A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
    sql.withTransaction(
      dialect === "pg" || exclusiveConnection ? body : Effect.gen(function*() {
        const [current] = yield* sql<{ timeout: number }>`PRAGMA busy_timeout`
        yield* sql.unsafe(`PRAGMA busy_timeout = ${attemptBusyTimeoutMillis}`)
        const restore = sql.unsafe(`PRAGMA busy_timeout = ${Number(current?.timeout ?? defaultBusyTimeoutMillis)}`)
        return yield* Effect.ensuring(body, Effect.orDie(restore))
      })
    ).pipe(Effect.catchAllDefect((defect) => isSqlError(defect) ? Effect.fail(defect) : Effect.die(defect)))

  /** A transaction: attempts, waiting while the database is locked (SQLite), for `lockTimeout` at most. */
  const transaction = (method: string) => <A, E, R>(body: Effect.Effect<A, E, R>) =>
    waitForLock(method)(inTransaction(body))

  /**
   * One writing statement: as it is on PostgreSQL, and on the SQLite
   * connection the store opened (whose busy timeout is a write attempt's
   * already: one statement is its own transaction, retried while the
   * database is locked); a transaction of its own on another SQLite
   * connection (see `inTransaction`).
   */
  const writing = (
    method: string
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError | WorkflowError.SessionStoreError, R> =>
    dialect === "pg" ? identity : exclusiveConnection ? waitForLock(method) : transaction(method)

  // On the connection it opened itself, nobody else's, the SQLite store keeps the
  // short busy timeout of a write attempt from now on, so that its writes
  // need not set and restore it (three statements fewer per write); its reads
  // wait for locks the same way its writes do (`waitForLock`).
  if (dialect === "sqlite" && exclusiveConnection) {
    yield* sql.unsafe(`PRAGMA busy_timeout = ${attemptBusyTimeoutMillis}`).pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(makeError(describeError(error), error)))
    )
  }

  // -- statements that differ by dialect --------------------------------------------

  /** text compared by its bytes (SQLite's default; PostgreSQL's "C" collation) */
  const binary = sql.onDialectOrElse({ pg: () => sql.literal(` COLLATE "C"`), orElse: () => sql.literal("") })
  /** the key of an unfinished run's pause (a column of its own, see migration 16), null when it has none */
  const pauseKey = sql.literal("pause_key")

  /**
   * The changes kept after a session's whole state, as `rows.PendingChanges`: a
   * subquery of the statement that reads the state, so the two are one snapshot.
   */
  const pendingChanges = (sessionId: string) =>
    sql`(SELECT '[' || ${
      sql.onDialectOrElse({ pg: () => sql.literal("string_agg"), orElse: () => sql.literal("group_concat") })
    }(c.changes, ',' ORDER BY c.version) || ']' FROM ${changesTable} c WHERE c.session_id = ${sessionId})`

  const runColumns = sql.literal(
    "run_id, session_id, workflow_name, user_id, status, input, content, error, usage, started_at, completed_at"
  )
  /** A record's values, typed (a PostgreSQL `INSERT … SELECT` has no column types to infer them from). */
  const recordValues = (row: rows.RunRow) =>
    sql`${row.run_id}::text, ${row.session_id}::text, ${row.workflow_name}::text, ${row.user_id}::text,
  ${row.status}::text, ${row.input}::text, ${row.content}::text, ${row.error}::text, ${row.usage}::text,
  ${row.started_at}::bigint, ${row.completed_at}::bigint`
  /** A retried run's record replaces its earlier attempt's, and moves to the end (a new `seq`). */
  const replacingRecord = sql`ON CONFLICT (run_id) DO UPDATE SET session_id = EXCLUDED.session_id,
  workflow_name = EXCLUDED.workflow_name, user_id = EXCLUDED.user_id, status = EXCLUDED.status, input = EXCLUDED.input,
  content = EXCLUDED.content, error = EXCLUDED.error, usage = EXCLUDED.usage, started_at = EXCLUDED.started_at,
  completed_at = EXCLUDED.completed_at, seq = DEFAULT`
  const writeRecord = (row: rows.RunRow) =>
    sql.onDialectOrElse({
      pg: () => sql`INSERT INTO ${runsTable} (${runColumns}) SELECT ${recordValues(row)} ${replacingRecord}`,
      orElse: () => sql`INSERT OR REPLACE INTO ${runsTable} ${sql.insert(row)}`
    })

  /** A wake-up time, typed (PostgreSQL's `INSERT … SELECT` has no column type to infer a NULL's from). */
  const wakeAtValue = (wakeAt: number | null) => wakeAt === null ? sql.literal("NULL") : sql`${wakeAt}`

  /** Tells PostgreSQL watchers of a commit (delivered when its transaction commits); SQLite's poll. */
  const notify = (sessionId: string): Effect.Effect<void, SqlError> =>
    dialect === "pg" ? Effect.asVoid(sql`SELECT pg_notify(${channel}, ${sessionId})`) : Effect.void

  // -- reading -----------------------------------------------------------------------

  /**
   * A session row's `state` and `pending_changes` columns (of the row as `s`),
   * as a load reads them: not read when the session is still at the version
   * the caller knows.
   */
  const storedState = (sessionId: string, knownVersion: number | null) =>
    sql`CASE WHEN s.version = CAST(${knownVersion} AS INTEGER) THEN NULL ELSE s.state END AS state,
  CASE WHEN s.changes_size = 0 OR s.version = CAST(${knownVersion} AS INTEGER) THEN NULL ELSE ${
      pendingChanges(sessionId)
    } END AS pending_changes`

  const selectSession = SqlSchema.findOne({
    Request: Schema.Struct({ sessionId: Schema.String, knownVersion: Schema.NullOr(Schema.Number) }),
    Result: SessionRow,
    execute: ({ knownVersion, sessionId }) =>
      sql`SELECT s.session_id, s.workflow_name, s.user_id, s.session_name, s.version, s.created_at, s.updated_at,
  ${storedState(sessionId, knownVersion)},
  (SELECT run_id FROM ${activeTable} a WHERE a.session_id = ${sessionId} AND a.status = 'paused'
   ORDER BY a.started_at, a.run_id${binary} LIMIT 1) AS paused_run_id
FROM ${sessions} s WHERE s.session_id = ${sessionId}`
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

  const decodeWritten = Schema.decodeUnknown(Schema.Array(WrittenRow))
  const decodeActive = Schema.decodeUnknown(Schema.Array(ActiveRow))
  const selectActive = (runId: string) =>
    Effect.flatMap(
      sql`SELECT * FROM ${activeTable} WHERE run_id = ${runId}`,
      (found) =>
        Effect.map(decodeActive(found), (decoded) => Option.map(Option.fromNullable(decoded[0]), rows.toActiveRun))
    )
  const runLost = (runId: string) =>
    Effect.flatMap(selectActive(runId), (active) => Effect.fail(rows.runLost(runId, active)))

  const load = Effect.fn("SqlSessionStore.load")(
    function*(sessionId: string, options?: SessionStore.LoadOptions) {
      yield* Effect.annotateCurrentSpan(sessionAttribute, sessionId)
      const knownVersion = options?.knownVersion ?? null
      const row = yield* selectSession({ sessionId, knownVersion })
      if (Option.isNone(row)) return Option.none<SessionStore.StoredSession>()
      return Option.some(yield* rows.toStoredSession(row.value, knownVersion))
    },
    waitForLock("load"),
    Effect.catchTags({ SqlError: storeError("load"), ParseError: storeError("load") })
  )

  /**
   * A new session's unfinished run as one JSON column beside the session's
   * columns in `findSession`'s one statement (NULL for none, and for a stored
   * session's paused run, of which only the id is read): PostgreSQL's whole
   * row, which keeps the statement short (its text is sent with every call);
   * SQLite's columns, those an unfinished run's row is read with (`ActiveRow`).
   */
  const activeAsJson = sql.onDialectOrElse({
    pg: () => sql.literal("CASE WHEN s.session_id IS NULL THEN row_to_json(a) END AS a_row"),
    orElse: () =>
      sql.literal(
        `CASE WHEN s.session_id IS NULL AND a.run_id IS NOT NULL THEN json_object(${
          Object.keys(ActiveRow.fields).map((column) => `'${column}', a.${column}`).join(", ")
        }) END AS a_row`
      )
  })
  const decodeSessionRow = Schema.decodeUnknown(SessionRow)

  /**
   * One statement: the session's row (its state only when asked) with its
   * paused run's id, or, when it has no row, the unfinished runs on its id —
   * a row per run, or one row of NULLs for neither. The runs are one join for
   * both (a stored session's paused ones only), cheaper for PostgreSQL to
   * plan than a subquery beside the join.
   */
  const findSession = Effect.fn("SqlSessionStore.findSession")(
    function*(sessionId: string, options?: SessionStore.FindSessionOptions) {
      yield* Effect.annotateCurrentSpan(sessionAttribute, sessionId)
      const withState = options?.state !== false
      const knownVersion = withState ? options?.knownVersion ?? null : null
      const state = withState ? storedState(sessionId, knownVersion) : sql`NULL AS state, NULL AS pending_changes`
      const found = yield* sql<{
        readonly session_id: unknown
        readonly a_run_id: string | null
        readonly a_status: string | null
        readonly a_owner: string | null
        readonly a_lease: number | string | null
        readonly a_row: unknown
        readonly q_run_id: string | null
        readonly q_owner: string | null
        readonly q_lease: number | string | null
      }>`
SELECT s.session_id, s.workflow_name, s.user_id, s.session_name, s.version, s.created_at, s.updated_at, ${state},
  a.run_id AS a_run_id, a.status AS a_status, a.owner AS a_owner, a.lease_expires_at AS a_lease, ${activeAsJson},
  q.run_id AS q_run_id, q.owner AS q_owner, q.lease_expires_at AS q_lease
FROM (SELECT 1 AS one) k
LEFT JOIN ${sessions} s ON s.session_id = ${sessionId}
LEFT JOIN ${activeTable} a ON a.session_id = ${sessionId}
LEFT JOIN ${queueTable} q ON q.session_id = ${sessionId} AND q.status = 'running'
ORDER BY a.started_at, a.run_id${binary}`
      const first = found[0]
      // the run of the session's queue that has its turn holds the session too, also before it is registered
      const turn = first?.q_run_id === null || first?.q_run_id === undefined
        ? []
        : [{
          runId: first.q_run_id,
          owner: first.q_owner ?? "",
          leaseExpiresAt: Number(first.q_lease),
          queued: true as const
        }]
      if (first !== undefined && first.session_id !== null && first.session_id !== undefined) {
        const paused = found.find((row) => row.a_status === "paused")
        const row = yield* decodeSessionRow({ ...first, paused_run_id: paused?.a_run_id ?? null })
        // without the state, the session is as if the caller knew its version
        const session = yield* rows.toStoredSession(row, withState ? knownVersion : row.version)
        const running = [
          ...found.flatMap(({ a_lease, a_owner, a_run_id, a_status }) =>
            a_status === "running" && a_run_id !== null
              ? [{ runId: a_run_id, owner: a_owner ?? "", leaseExpiresAt: Number(a_lease) }]
              : []
          ),
          ...turn
        ]
        return {
          _tag: "Stored",
          session: running.length === 0 ? session : { ...session, running }
        } satisfies SessionStore.SessionFound
      }
      const runs = yield* decodeActive(
        found.flatMap(({ a_row }) =>
          a_row === null || a_row === undefined
            ? []
            : [typeof a_row === "string" ? JSON.parse(a_row) as unknown : a_row]
        )
      )
      return {
        _tag: "New",
        runs: runs.map(rows.toActiveRun),
        ...(turn.length === 0 ? {} : { running: turn })
      } satisfies SessionStore.SessionFound
    },
    waitForLock("findSession"),
    Effect.catchTags({ SqlError: storeError("findSession"), ParseError: storeError("findSession") })
  )

  const info = Effect.fn("SqlSessionStore.info")(
    function*(sessionId: string) {
      return Option.map(yield* selectInfo(sessionId), rows.toInfo)
    },
    waitForLock("info"),
    Effect.catchTags({ SqlError: storeError("info"), ParseError: storeError("info") })
  )

  // -- committing --------------------------------------------------------------------

  /**
   * PostgreSQL's usual commit — a run's new state (of a session that keeps no
   * versions, or of a new session: its version 1 kept whole), or its changes
   * while they stay within the state's weight (and do not set the whole state;
   * with the version they make, see `history.inOneStatement`), with its
   * record, no unfinished run to end — as one statement, so one round trip
   * and its own transaction: the session row is written only at the expected
   * version (created only if it does not exist, for 0), by its owner, with no
   * paused run on it; a whole state drops the changes kept before it,
   * changes are kept as a row of the changes table; the record is written and
   * the watchers notified only with it. Its row lock makes a concurrent
   * commit to the same session wait, then re-check against the new row. No
   * row back: a check failed or the changes must be written as the whole
   * state, and the transactional commit tells which check, or writes it.
   */
  const commitInOneStatement = (
    commit: SessionStore.Commit,
    write: { readonly _tag: "state" | "changes"; readonly json: string },
    runRow: rows.RunRow | undefined,
    now: number
  ) => {
    const userId = commit.userId ?? null
    const lastRunId = commit.run?.runId ?? null
    const size = write.json.length
    const history = commit.expectedVersion === 0 && write._tag === "state"
      ? versions.firstInOneStatement({
        sessionId: commit.sessionId,
        runId: lastRunId,
        committedAt: now,
        keep: keepOf(commit),
        state: commit.state
      })
      : versions.inOneStatement({
        sessionId: commit.sessionId,
        expectedVersion: commit.expectedVersion,
        runId: lastRunId,
        committedAt: now,
        keep: keepOf(commit),
        changes: commit.changes ?? [],
        changesText: write.json
      })
    const notPaused =
      sql`NOT EXISTS (SELECT 1 FROM ${activeTable} WHERE session_id = ${commit.sessionId} AND status = 'paused')`
    const checked = sql`session_id = ${commit.sessionId} AND version = ${commit.expectedVersion}
  AND (user_id IS NULL OR user_id = ${userId}) AND ${notPaused}`
    // `keptChanges`'s rule, in SQL, on the row before the write
    const keepable = sql`state_size <= ${rows.minPendingChanges}
  AND changes_size + ${size} - CASE WHEN base_size <> state_size THEN base_size ELSE 0 END
    <= GREATEST(base_size, ${rows.minPendingChanges}::bigint)`
    const written: Fragment = commit.expectedVersion === 0
      ? sql`INSERT INTO ${sessions}
  (session_id, workflow_name, user_id, session_name, state, state_size, base_size, version, last_run_id,
   created_at, updated_at)
SELECT ${commit.sessionId}::text, ${commit.workflowName}::text, ${userId}::text, NULL, ${write.json}::text,
  ${size}::bigint, ${size}::bigint, 1, ${lastRunId}::text, ${now}::bigint, ${now}::bigint
WHERE ${notPaused}
ON CONFLICT (session_id) DO NOTHING
RETURNING version, state`
      : write._tag === "state"
      ? sql`UPDATE ${sessions}
SET state = ${write.json}, state_size = ${size}, base_size = ${size}, changes_size = 0, version = version + 1,
  last_run_id = ${lastRunId}, updated_at = ${now}
WHERE ${checked} RETURNING version`
      : sql`UPDATE ${sessions}
SET version = version + 1, changes_size = changes_size + ${size}, last_run_id = ${lastRunId}, updated_at = ${now}
WHERE ${checked} AND ${keepable} AND ${history.condition} RETURNING version`
    const alongside = commit.expectedVersion === 0
      ? []
      : write._tag === "state"
      ? [
        sql`dropped AS (DELETE FROM ${changesTable}
  WHERE session_id = ${commit.sessionId} AND EXISTS (SELECT 1 FROM written))`
      ]
      : [sql`kept AS (INSERT INTO ${changesTable} (session_id, version, changes)
  SELECT ${commit.sessionId}::text, version, ${write.json}::text FROM written)`]
    const recorded = runRow === undefined ? [] : [sql`recorded AS (
  INSERT INTO ${runsTable} (${runColumns}) SELECT ${recordValues(runRow)} FROM written ${replacingRecord}
)`]
    const ctes = sql.join(",\n", false)([
      ...history.before,
      sql`written AS (${written})`,
      ...alongside,
      ...history.after,
      ...recorded
    ])
    return Effect.map(
      Effect.flatMap(
        sql`WITH ${ctes}
SELECT version, pg_notify(${channel}, ${commit.sessionId}) FROM written`,
        decodeWritten
      ),
      (written) => written[0]?.version
    )
  }

  const firstCommits = sql(migrations.firstCommitsView(t))

  /** Whether a first commit was refused by its view's trigger (the session exists, or a run is paused on it). */
  const firstCommitRefused = (error: SqlError) =>
    Predicate.hasProperty(error.cause, "message") && error.cause.message === migrations.firstCommitRefused

  /**
   * SQLite's usual commit of a new session — its first whole state, with its
   * record, no unfinished run to end — as one statement (and so its own
   * transaction): an insert into the view of migration 15, whose trigger
   * writes the session's row, its version 1 (when it keeps versions) and the
   * record, or refuses the insert, writing nothing, when the session exists
   * or a run is paused on its id. Refused (undefined), the transactional
   * commit tells which check, or writes it (if the session was deleted or the
   * run unpaused meanwhile).
   */
  const firstCommitInOneStatement = (
    commit: SessionStore.Commit,
    state: string,
    runRow: rows.RunRow | undefined,
    now: number
  ): Effect.Effect<number | undefined, SqlError | WorkflowError.SessionStoreError> => {
    const version = versions.firstVersion({ sessionId: commit.sessionId, keep: keepOf(commit), state: commit.state })
    const values: Record<migrations.FirstCommitColumn, string | number | null> = {
      session_id: commit.sessionId,
      workflow_name: commit.workflowName,
      user_id: commit.userId ?? null,
      state,
      state_size: state.length,
      committed_at: now,
      keep_version: version === undefined ? 0 : 1,
      changed: version === undefined ? null : history.changedText(version.changed),
      run_id: commit.run?.runId ?? null,
      run_workflow_name: runRow?.workflow_name ?? null,
      run_user_id: runRow?.user_id ?? null,
      status: runRow?.status ?? null,
      input: runRow?.input ?? null,
      content: runRow?.content ?? null,
      error: runRow?.error ?? null,
      usage: runRow?.usage ?? null,
      started_at: runRow?.started_at ?? null,
      completed_at: runRow?.completed_at ?? null
    }
    return sql`INSERT INTO ${firstCommits} ${sql.insert(values)}`.pipe(
      writing("commit"),
      Effect.as(1),
      Effect.catchIf((error) => error._tag === "SqlError" && firstCommitRefused(error), () => Effect.succeed(undefined))
    )
  }

  /**
   * A commit as one short transaction whose first statement is the write
   * itself, with the version and owner checks in its `WHERE` clause: on
   * SQLite it takes the write lock at once (or fails with SQLITE_BUSY within
   * a few ms, and the attempt is rolled back and retried after a sleep), on
   * PostgreSQL the session row's lock; everything after it sees the latest
   * committed data.
   *
   * With changes (to an existing session), the session's row takes the
   * version and the sizes only, and the changes go to a row of the changes
   * table; the session's whole state lives there too, as a change that sets
   * it (its row's `state` is then `null`), once it is written with changes:
   * so the session's row stays small, and a commit's statements do not grow
   * with the state. When the kept changes outweigh the last whole state (see
   * `minPendingChanges`), or the row still holds a large state, the commit
   * writes the whole state as that one change row instead.
   */
  const commitInTransaction = (
    commit: SessionStore.Commit,
    changes: string | null,
    state: string | null,
    runRow: rows.RunRow | undefined,
    now: number
  ) => {
    const userId = commit.userId ?? null
    const lastRunId = commit.run?.runId ?? null
    // SQLite: a commit of a state checks that no run is paused on the session in
    // the write itself (one statement fewer; nobody else writes meanwhile, so a
    // write refused is explained by the reads after it); PostgreSQL reads after it
    const pausedInWrite = dialect === "sqlite" && commit.state !== undefined
    const notPaused = pausedInWrite
      ? sql`AND NOT EXISTS (SELECT 1 FROM ${activeTable} WHERE session_id = ${commit.sessionId} AND status = 'paused')`
      : sql.literal("")
    const upsert = changes !== null
      ? sql`UPDATE ${sessions} SET version = version + 1, updated_at = ${now}, last_run_id = ${lastRunId},
  changes_size = changes_size + ${changes.length}
WHERE session_id = ${commit.sessionId} AND version = ${commit.expectedVersion}
  AND (user_id IS NULL OR user_id = ${userId}) ${notPaused}
RETURNING version, state_size, base_size, changes_size`
      : state === null
      ? sql`UPDATE ${sessions} SET updated_at = ${now}
WHERE session_id = ${commit.sessionId} AND (user_id IS NULL OR user_id = ${userId})
RETURNING version`
      : commit.expectedVersion === 0
      ? sql`INSERT INTO ${sessions}
  (session_id, workflow_name, user_id, session_name, state, state_size, base_size, version, created_at, updated_at,
   last_run_id)
${
        pausedInWrite
          ? sql.literal("SELECT ")
          : sql.literal("VALUES (")
      }${commit.sessionId}, ${commit.workflowName}, ${userId}, NULL, ${state},
  ${state.length}, ${state.length}, 1, ${now}, ${now}, ${lastRunId}${
        pausedInWrite ? sql`WHERE TRUE ${notPaused}` : sql.literal(")")
      }
ON CONFLICT (session_id) DO NOTHING
RETURNING version`
      : sql`UPDATE ${sessions} SET state = ${state}, state_size = ${state.length}, base_size = ${state.length},
  version = version + 1, updated_at = ${now}, last_run_id = ${lastRunId}
WHERE session_id = ${commit.sessionId} AND version = ${commit.expectedVersion}
  AND (user_id IS NULL OR user_id = ${userId}) ${notPaused}
RETURNING version, changes_size`
    const pausedRun = Effect.map(
      sql<{ run_id: string }>`SELECT run_id FROM ${activeTable}
WHERE session_id = ${commit.sessionId} AND status = 'paused' LIMIT 1`,
      (paused) => paused[0]?.run_id
    )
    const sessionPaused = (runId: string) => new WorkflowError.SessionPaused({ sessionId: commit.sessionId, runId })
    /** what the history asks to run once the transaction has committed (its last attempt's) */
    let afterCommit: (() => void) | undefined

    /** the whole state as the one change row of the session (`text`: its change list) */
    const writeBase = (version: number, text: string) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM ${changesTable} WHERE session_id = ${commit.sessionId}`
        yield* sql`INSERT INTO ${changesTable} (session_id, version, changes)
VALUES (${commit.sessionId}, ${version}, ${text})`
        yield* sql`UPDATE ${sessions} SET state = 'null', state_size = 4, base_size = ${text.length},
  changes_size = ${text.length} WHERE session_id = ${commit.sessionId}`
      })

    return Effect.gen(function*() {
      afterCommit = undefined
      // the unfinished run first, then the session (the one lock order: see `endRun`); a run
      // no longer this owner's is RunLost, whatever the session's version
      if (commit.ends !== undefined) {
        const ended = yield* sql`DELETE FROM ${activeTable}
WHERE run_id = ${commit.ends.runId} AND owner = ${commit.ends.owner} RETURNING run_id`
        if (ended.length === 0) return yield* runLost(commit.ends.runId)
        yield* sql`DELETE FROM ${signalsTable} WHERE run_id = ${commit.ends.runId}`
      }
      const [written] = yield* Effect.flatMap(upsert, decodeWritten)
      if (written === undefined) {
        const existing = yield* selectOwner(commit.sessionId)
        if (pausedInWrite) {
          // refused for the version or the owner first, as the checks run on PostgreSQL
          const atVersion = Option.match(existing, {
            onNone: () => commit.expectedVersion === 0,
            onSome: (row) => row.version === commit.expectedVersion
          })
          const owned = Option.match(existing, {
            onNone: () => true,
            onSome: (row) => row.user_id === null || row.user_id === (commit.userId ?? null)
          })
          const paused = atVersion && owned ? yield* pausedRun : undefined
          if (paused !== undefined) return yield* sessionPaused(paused)
        }
        return yield* rows.rejected(commit, existing)
      }
      if (commit.state !== undefined && !pausedInWrite) {
        const paused = yield* pausedRun
        if (paused !== undefined) return yield* sessionPaused(paused)
      }
      if (changes !== null) {
        const stateSize = written.state_size ?? 0
        const baseSize = written.base_size ?? 0
        // the characters of changes after the last whole state; once moved out, that state is
        // itself a change row (and no longer the row's state column, so the two sizes differ)
        const pending = (written.changes_size ?? 0) - (baseSize !== stateSize ? baseSize : 0)
        if (rows.setsWholeState(commit.changes!)) {
          yield* writeBase(written.version, changes)
        } else if (stateSize > rows.minPendingChanges || rows.changesOutweighState(baseSize, pending)) {
          yield* writeBase(written.version, wholeStateChange(yield* rows.stateJson("commit", commit.state)))
        } else {
          yield* sql`INSERT INTO ${changesTable} (session_id, version, changes)
VALUES (${commit.sessionId}, ${written.version}, ${changes})`
        }
      } else if ((written.changes_size ?? 0) > 0) {
        // the whole state written in the row: the change rows are dropped
        yield* sql`DELETE FROM ${changesTable} WHERE session_id = ${commit.sessionId}`
        yield* sql`UPDATE ${sessions} SET changes_size = 0 WHERE session_id = ${commit.sessionId}`
      }
      if (commit.state !== undefined) {
        afterCommit = yield* versions.keep({
          sessionId: commit.sessionId,
          version: written.version,
          runId: lastRunId,
          committedAt: now,
          keep: keepOf(commit),
          state: commit.state,
          stateText: state === null ? rows.stateJson("commit", commit.state) : Effect.succeed(state),
          changes: commit.changes,
          changesText: changes
        })
      }
      // a retried run's record replaces the one of its earlier attempt
      if (runRow !== undefined) yield* writeRecord(runRow)
      if (commit.state !== undefined) yield* notify(commit.sessionId)
      return written.version
    }).pipe(
      transaction("commit"),
      Effect.tap(() => afterCommit?.())
    )
  }

  /**
   * A session's records beyond its most recent `keep`, with their events,
   * removed: the cut found on the session's index of records, then two
   * indexed deletes.
   */
  const trimRecords = (sessionId: string, keep: number) =>
    Effect.gen(function*() {
      const [cut] = yield* sql<{ seq: number | string }>`SELECT seq FROM ${runsTable} WHERE session_id = ${sessionId}
ORDER BY seq DESC LIMIT 1 OFFSET ${keep}`
      if (cut === undefined) return
      yield* sql`DELETE FROM ${eventsTable} WHERE run_id IN
  (SELECT run_id FROM ${runsTable} WHERE session_id = ${sessionId} AND seq <= ${Number(cut.seq)})`
      yield* sql`DELETE FROM ${runsTable} WHERE session_id = ${sessionId} AND seq <= ${Number(cut.seq)}`
    }).pipe(transaction("commit"))

  /**
   * The default bound on a session's records, after a state commit that made
   * a version where it applies (see `SessionStore.defaultKeepRuns`). The
   * commit has happened: a trim that fails is logged and done again at the
   * session's next such commit.
   */
  const bounded = (sessionId: string, version: number) =>
    keepRuns === "all" || !SessionStore.trimsAt(keepRuns, version)
      ? Effect.succeed(version)
      : trimRecords(sessionId, keepRuns).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning(
            `SqlSessionStore: could not trim the run records of session '${sessionId}' to ${keepRuns}`,
            error
          )
        ),
        Effect.as(version)
      )

  const commit = Effect.fn("SqlSessionStore.commit")(
    function*(commit: SessionStore.Commit) {
      yield* Effect.annotateCurrentSpan(sessionAttribute, commit.sessionId)
      if (commit.run !== undefined) yield* Effect.annotateCurrentSpan(runAttribute, commit.run.runId)
      const now = yield* Clock.currentTimeMillis
      const changes = yield* rows.changesJson("commit", commit)
      const state = commit.state === undefined || changes !== null
        ? null
        : yield* rows.stateJson("commit", commit.state)
      const runRow = commit.run === undefined ? undefined : yield* rows.toRunRow("commit", commit.sessionId, commit.run)
      // a commit of its whole state that keeps versions compares it with the version before:
      // the transactional commit (but a new session's has none: one statement keeps it whole);
      // so does a commit whose changes replace the whole state
      const keeps = keepOf(commit) > 0
      if (dialect === "pg" && commit.ends === undefined) {
        const write = state !== null && (!keeps || commit.expectedVersion === 0)
          ? { _tag: "state" as const, json: state }
          : changes !== null && !rows.setsWholeState(commit.changes!) &&
              (!keeps || commit.changes!.every((change) => change.path.length > 0))
          ? { _tag: "changes" as const, json: changes }
          : undefined
        if (write !== undefined) {
          const version = yield* commitInOneStatement(commit, write, runRow, now)
          if (version !== undefined) return yield* bounded(commit.sessionId, version)
        }
      }
      if (dialect === "sqlite" && commit.ends === undefined && commit.expectedVersion === 0 && state !== null) {
        const version = yield* firstCommitInOneStatement(commit, state, runRow, now)
        if (version !== undefined) return yield* bounded(commit.sessionId, version)
      }
      const version = yield* commitInTransaction(commit, changes, state, runRow, now)
      return commit.state === undefined ? version : yield* bounded(commit.sessionId, version)
    },
    Effect.catchTags({ SqlError: storeError("commit"), ParseError: storeError("commit") })
  )

  // -- sessions ----------------------------------------------------------------------

  /** The clause of a user filter: a user's rows, or (`null`) the rows without one. */
  const ofUser = (userId: string | null | undefined) =>
    userId === undefined ? [] : [userId === null ? sql`user_id IS NULL` : sql`user_id = ${userId}`]
  /**
   * The rows after a cursor in a listing's order (larger `at` first, then by
   * id in byte order, which is code point order): the index is read from the
   * cursor's `at` on (`at <= …`, a range), skipping the ties before it.
   */
  const afterKey = (at: string, id: string, cursor: readonly [number, string] | undefined) =>
    cursor === undefined ? [] : [
      sql`${sql.literal(at)} <= ${cursor[0]}`,
      sql`(${sql.literal(at)} < ${cursor[0]} OR ${sql.literal(id)}${binary} > ${cursor[1]})`
    ]
  const keyOrder = (at: string, id: string) => sql.literal(`ORDER BY ${at} DESC, ${id}`)
  /** `LIMIT n + 1`: the row past the page says whether another page follows */
  const pastPage = (limit: number | undefined) => limit === undefined ? sql.literal("") : sql` LIMIT ${limit + 1}`

  /**
   * A listing's search: the session's id or name contains `text` (folded by
   * `SessionStore.foldSearch`), the letters A to Z of both folded alike, in
   * the query: SQLite's `lower` folds those letters alone; PostgreSQL's,
   * per its locale, may fold more, so it uses `translate`.
   */
  const searched = (text: string) => {
    const fold = (column: string) =>
      dialect === "pg"
        ? sql`translate(${sql(column)}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`
        : sql`lower(${sql(column)})`
    const contains = (column: string) =>
      dialect === "pg" ? sql`strpos(${fold(column)}, ${text}) > 0` : sql`instr(${fold(column)}, ${text}) > 0`
    return sql`(${contains("session_id")} OR (session_name IS NOT NULL AND ${contains("session_name")}))`
  }

  const list = Effect.fn("SqlSessionStore.list")(
    function*(filter: SessionStore.ListFilter) {
      const clauses = [
        ...(filter.workflowName === undefined ? [] : [sql`workflow_name = ${filter.workflowName}`]),
        ...ofUser(filter.userId),
        ...(filter.updatedSince === undefined ? [] : [sql`updated_at >= ${filter.updatedSince}`]),
        ...(filter.search === undefined ? [] : [searched(SessionStore.foldSearch(filter.search))]),
        ...afterKey("updated_at", "session_id", filter.after && [filter.after.updatedAt, filter.after.sessionId])
      ]
      const found = yield* sql<
        { readonly session_id: unknown; readonly updated_at: unknown }
      >`SELECT session_id, workflow_name, user_id, session_name, version, created_at, updated_at
FROM ${sessions} WHERE ${sql.and(clauses)} ${keyOrder("updated_at", "session_id")}${binary}${pastPage(filter.limit)}`
      const limit = filter.limit
      const page = limit === undefined || found.length <= limit ? found : found.slice(0, limit)
      const last = page[page.length - 1]
      // sorted again in JS (the same order), so that the readable rows are apart from the broken ones
      const listing = rows.toListing(page, SessionInfoRow)
      return page.length < found.length && last !== undefined
        ? { ...listing, next: { updatedAt: Number(last.updated_at), sessionId: String(last.session_id) } }
        : listing
    },
    waitForLock("list"),
    Effect.catchTags({ SqlError: storeError("list") })
  )

  const remove = Effect.fn("SqlSessionStore.remove")(
    function*(sessionId: string) {
      // in the one lock order: unfinished runs, the session, its changes, its records
      const deleted = yield* Effect.gen(function*() {
        yield* sql`DELETE FROM ${signalsTable}
WHERE run_id IN (SELECT run_id FROM ${activeTable} WHERE session_id = ${sessionId})`
        yield* sql`DELETE FROM ${activeTable} WHERE session_id = ${sessionId}`
        const deleted = yield* sql`DELETE FROM ${sessions} WHERE session_id = ${sessionId} RETURNING session_id`
        yield* sql`DELETE FROM ${changesTable} WHERE session_id = ${sessionId}`
        yield* versions.clear(sessionId)
        yield* sql`DELETE FROM ${runsTable} WHERE session_id = ${sessionId}`
        return deleted
      }).pipe(transaction("remove"))
      return deleted.length > 0
    },
    Effect.catchTags({ SqlError: storeError("remove") })
  )

  const setName = Effect.fn("SqlSessionStore.setName")(
    function*(sessionId: string, name: string) {
      const now = yield* Clock.currentTimeMillis
      const updated = yield* sql`UPDATE ${sessions} SET session_name = ${name}, updated_at = ${now}
WHERE session_id = ${sessionId} RETURNING version`.pipe(writing("setName"))
      if (updated.length === 0) return yield* new WorkflowError.SessionNotFound({ sessionId })
    },
    Effect.catchTags({ SqlError: storeError("setName") })
  )

  const runs = Effect.fn("SqlSessionStore.runs")(
    function*(sessionId: string, options: SessionStore.RunsOptions) {
      const limit = rows.runsLimit(options.limit)
      if (limit === 0) return []
      const where = options.status === undefined
        ? sql`session_id = ${sessionId}`
        : sql`session_id = ${sessionId} AND status = ${options.status}`
      const found = yield* SqlSchema.findAll({
        Request: Schema.Void,
        Result: RunRow,
        execute: () =>
          limit === undefined
            ? sql`SELECT ${runColumns} FROM ${runsTable} WHERE ${where} ORDER BY seq`
            : sql`SELECT ${runColumns} FROM (
  SELECT seq, ${runColumns} FROM ${runsTable} WHERE ${where} ORDER BY seq DESC LIMIT ${limit}
) AS latest ORDER BY seq`
      })(undefined)
      return yield* rows.toRunRecords("runs", `a stored run of session '${sessionId}'`, found)
    },
    waitForLock("runs"),
    Effect.catchTags({ SqlError: storeError("runs"), ParseError: storeError("runs") })
  )

  // -- versions ----------------------------------------------------------------------

  const listVersions = Effect.fn("SqlSessionStore.versions")(
    function*(sessionId: string) {
      yield* Effect.annotateCurrentSpan(sessionAttribute, sessionId)
      return yield* versions.list(sessionId)
    },
    waitForLock("versions"),
    Effect.catchTags({ SqlError: storeError("versions"), ParseError: storeError("versions") })
  )

  const loadVersion = Effect.fn("SqlSessionStore.loadVersion")(
    function*(sessionId: string, version: number) {
      yield* Effect.annotateCurrentSpan(sessionAttribute, sessionId)
      return yield* versions.stateAt(sessionId, version)
    },
    waitForLock("loadVersion"),
    Effect.catchTags({ SqlError: storeError("loadVersion"), ParseError: storeError("loadVersion") })
  )

  const fork = Effect.fn("SqlSessionStore.fork")(
    function*(request: SessionStore.ForkRequest) {
      yield* Effect.annotateCurrentSpan(sessionAttribute, request.sessionId)
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.gen(function*() {
        const source = yield* selectInfo(request.sessionId)
        if (Option.isNone(source)) return yield* new WorkflowError.SessionNotFound({ sessionId: request.sessionId })
        const found = yield* versions.stateAt(request.sessionId, request.version)
        if (Option.isNone(found)) {
          return yield* SessionStore.versionNotFound(request.sessionId, request.version, Number(source.value.version))
        }
        const state = yield* rows.stateJson("fork", found.value)
        const [at] = (yield* versions.list(request.sessionId)).filter((info) => info.version === request.version)
        const created = yield* sql`INSERT INTO ${sessions}
  (session_id, workflow_name, user_id, session_name, state, state_size, base_size, version, last_run_id,
   created_at, updated_at)
VALUES (${request.newSessionId}, ${source.value.workflow_name}, ${
          request.userId ?? null
        }, NULL, ${state}, ${state.length},
  ${state.length}, ${request.version}, ${at?.runId ?? null}, ${now}, ${now})
ON CONFLICT (session_id) DO NOTHING RETURNING version`
        if (created.length === 0) return yield* new WorkflowError.SessionExists({ sessionId: request.newSessionId })
        yield* versions.copy(request.sessionId, request.newSessionId, request.version)
        yield* notify(request.newSessionId)
        return rows.toInfo({
          ...source.value,
          session_id: request.newSessionId,
          user_id: request.userId ?? null,
          session_name: null,
          version: request.version,
          created_at: now,
          updated_at: now
        })
      }).pipe(transaction("fork"))
    },
    Effect.catchTags({ SqlError: storeError("fork"), ParseError: storeError("fork") })
  )

  // -- unfinished runs ---------------------------------------------------------------

  const selectRecord = SqlSchema.findOne({
    Request: Schema.String,
    Result: RunRow,
    execute: (id) => sql`SELECT ${runColumns} FROM ${runsTable} WHERE run_id = ${id}`
  })
  const lookup = (runId: string) => rows.lookupRun(runId, { active: selectActive(runId), record: selectRecord(runId) })

  /**
   * PostgreSQL: the writes to one session's queue take turns (a lock for the
   * transaction, keyed by the table and the session), so that two callers
   * never both find the queue free; SQLite's write lock does that already.
   */
  const lockQueue = (sessionId: string) =>
    dialect === "pg"
      ? Effect.asVoid(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${t.queue}:${sessionId}`}, 0))`)
      : Effect.void
  const startRun = Effect.fn("SqlSessionStore.startRun")(
    function*(run: SessionStore.ActiveRun) {
      yield* Effect.annotateCurrentSpan(runAttribute, run.runId)
      // one statement: inserted unless the id is unfinished or ended (PostgreSQL: under the session's
      // queue lock, so that a queued run taking its turn sees it, or it sees the turn taken; see `onBusy`)
      const insert = sql`INSERT INTO ${activeTable}
  (run_id, session_id, workflow_name, user_id, status, owner, lease_expires_at, base_version, durability, data,
   started_at, updated_at,
   wake_at, pause_key)
SELECT ${run.runId}, ${run.sessionId}, ${run.workflowName}, ${run.userId ?? null}, ${run.status}, ${run.owner},
  ${run.leaseExpiresAt}, ${run.baseVersion}, ${run.durability}, ${
        rows.activeData(run)
      }, ${run.startedAt}, ${run.updatedAt},
  ${wakeAtValue(rows.wakeAtOf(run))}, ${run.pause?.key ?? null}
WHERE NOT EXISTS (SELECT 1 FROM ${runsTable} WHERE run_id = ${run.runId})
ON CONFLICT (run_id) DO NOTHING
RETURNING run_id`
      const inserted = yield* (dialect === "pg" && run.status === "running"
        ? Effect.zipRight(lockQueue(run.sessionId), insert).pipe(transaction("startRun"))
        : insert.pipe(writing("startRun")))
      if (inserted.length > 0) return Option.none<SessionStore.RunLookup>()
      return yield* lookup(run.runId).pipe(waitForLock("startRun"))
    },
    Effect.catchTags({ SqlError: storeError("startRun"), ParseError: storeError("startRun") })
  )

  const getRun = Effect.fn("SqlSessionStore.getRun")(
    function*(runId: string) {
      yield* Effect.annotateCurrentSpan(runAttribute, runId)
      return yield* lookup(runId)
    },
    waitForLock("getRun"),
    Effect.catchTags({ SqlError: storeError("getRun"), ParseError: storeError("getRun") })
  )

  /** SQLite's and PostgreSQL's way to set the `journal` key of a run's `data` to JSON text. */
  const withJournal = (text: string) =>
    dialect === "pg"
      ? sql`(jsonb_set(data::jsonb, '{journal}', ${text}::jsonb))::text`
      : sql`json_set(data, '$.journal', json(${text}))`

  /** PostgreSQL refused JSON text as `jsonb`: a `\u0000` escape (22P05), or a lone surrogate (22P02). */
  const refusedByJsonb = (error: unknown): boolean =>
    isSqlError(error) && Predicate.hasProperty(error.cause, "code") &&
    (error.cause.code === "22P05" || error.cause.code === "22P02")

  /**
   * A lease renewal or a journal write (what a durable run does at every
   * step): one statement that checks the owner and sets the columns, the
   * journal inside `data` by the database's JSON functions, without reading
   * the row back. `undefined` for any other update, and for a journal whose
   * text PostgreSQL's `jsonb` would refuse (a `\u0000` escape).
   */
  const updateInOneStatement = (runId: string, owner: string, update: SessionStore.RunUpdate, now: number) => {
    const { journal, leaseExpiresAt, ...rest } = update
    if (journal === null || Object.values(rest).some((value) => value !== undefined)) return undefined
    const text = journal === undefined ? undefined : JSON.stringify(journal)
    if (text !== undefined && dialect === "pg" && text.includes("\\u0000")) return undefined
    return Effect.flatMap(
      sql`UPDATE ${activeTable} SET updated_at = ${now}${
        leaseExpiresAt === undefined ? sql.literal("") : sql`, lease_expires_at = ${leaseExpiresAt}`
      }${text === undefined ? sql.literal("") : sql`, data = ${withJournal(text)}`}
WHERE run_id = ${runId} AND owner = ${owner} RETURNING run_id`.pipe(writing("updateRun")),
      (updated) => updated.length === 0 ? runLost(runId) : Effect.void
    )
  }

  const updateRun = Effect.fn("SqlSessionStore.updateRun")(
    function*(runId: string, owner: string, update: SessionStore.RunUpdate) {
      yield* Effect.annotateCurrentSpan(runAttribute, runId)
      const now = yield* Clock.currentTimeMillis
      const general = Effect.gen(function*() {
        // the first statement writes (takes the lock) and checks the owner
        const touched = yield* sql`UPDATE ${activeTable} SET updated_at = ${now}
WHERE run_id = ${runId} AND owner = ${owner} RETURNING *`
        const [row] = yield* decodeActive(touched)
        if (row === undefined) return yield* runLost(runId)
        const next = rows.applyRunUpdate(rows.toActiveRun(row), update, now)
        yield* sql`UPDATE ${activeTable} SET status = ${next.status}, owner = ${next.owner},
  lease_expires_at = ${next.leaseExpiresAt}, base_version = ${next.baseVersion}, data = ${rows.activeData(next)},
  wake_at = ${wakeAtValue(rows.wakeAtOf(next))}, pause_key = ${next.pause?.key ?? null}
WHERE run_id = ${runId}`
      }).pipe(transaction("updateRun"))
      const inOne = updateInOneStatement(runId, owner, update, now)
      // PostgreSQL's jsonb refuses a `data` holding a `\u0000` escape or a lone surrogate (a
      // pause payload may): such a run's journal is written as the whole `data`, from here
      if (inOne !== undefined) return yield* Effect.catchIf(inOne, refusedByJsonb, () => general)
      return yield* general
    },
    Effect.catchTags({ SqlError: storeError("updateRun"), ParseError: storeError("updateRun") })
  )

  const claimRun = Effect.fn("SqlSessionStore.claimRun")(
    function*(
      runId: string,
      claim: Parameters<SessionStore.Backend["claimRun"]>[1]
    ) {
      yield* Effect.annotateCurrentSpan(runAttribute, runId)
      // one conditional write: of several claims, exactly one finds the run claimable
      // (PostgreSQL: a concurrent claim waits for the row lock, then finds it no longer is);
      // a continue takes the run only at the pause it answers; a run whose owner is
      // gone is taken from that owner only, whatever its lease (by a continue only
      // while that owner was continuing from the pause it answers)
      const claimable = claim.pause !== undefined
        ? claim.from === undefined
          ? sql`status = 'paused' AND ${pauseKey} = ${claim.pause}`
          : sql`(status = 'paused' OR (status = 'running' AND owner = ${claim.from})) AND ${pauseKey} = ${claim.pause}`
        : claim.from === undefined
        ? sql`(status = 'paused' OR lease_expires_at < ${claim.now})`
        : sql`(status = 'paused' OR lease_expires_at < ${claim.now} OR (status = 'running' AND owner = ${claim.from}))`
      const claimed = yield* sql`UPDATE ${activeTable}
SET status = 'running', owner = ${claim.owner}, lease_expires_at = ${claim.leaseExpiresAt}, updated_at = ${claim.now},
  wake_at = NULL
WHERE run_id = ${runId} AND ${claimable}
RETURNING *`.pipe(writing("claimRun"))
      const [row] = yield* decodeActive(claimed)
      if (row !== undefined) return rows.toActiveRun(row)
      const existing = yield* selectActive(runId).pipe(waitForLock("claimRun"))
      return yield* rows.claimRejected(runId, existing, claim.pause, claim.now)
    },
    Effect.catchTags({ SqlError: storeError("claimRun"), ParseError: storeError("claimRun") })
  )

  const activeRuns = Effect.fn("SqlSessionStore.activeRuns")(
    function*(filter: SessionStore.ActiveFilter) {
      const clauses = [
        ...(filter.sessionId === undefined ? [] : [sql`session_id = ${filter.sessionId}`]),
        ...(filter.workflowName === undefined ? [] : [sql`workflow_name = ${filter.workflowName}`]),
        ...(filter.status === undefined ? [] : [sql`status = ${filter.status}`]),
        ...(filter.dueBy === undefined ? [] : [sql`status = 'paused' AND wake_at <= ${filter.dueBy}`])
      ]
      const found = yield* sql`SELECT * FROM ${activeTable} WHERE ${
        sql.and(clauses)
      } ORDER BY started_at, run_id${binary}`
      return (yield* decodeActive(found)).map(rows.toActiveRun)
    },
    waitForLock("activeRuns"),
    Effect.catchTags({ SqlError: storeError("activeRuns"), ParseError: storeError("activeRuns") })
  )

  const listRuns = Effect.fn("SqlSessionStore.listRuns")(
    function*(filter: SessionStore.RunListFilter) {
      const clauses = [
        ...(filter.workflowName === undefined ? [] : [sql`workflow_name = ${filter.workflowName}`]),
        ...ofUser(filter.userId),
        ...(filter.sessionId === undefined ? [] : [sql`session_id = ${filter.sessionId}`]),
        ...(filter.status === undefined ? [] : [sql`status = ${filter.status}`]),
        ...afterKey("started_at", "run_id", filter.after && [filter.after.startedAt, filter.after.runId])
      ]
      const order = sql`${keyOrder("started_at", "run_id")}${binary}${pastPage(filter.limit)}`
      const status = filter.status
      // at most a page and one row from each table: the page is among them
      const unfinished = status === undefined || status === "running" || status === "paused"
        ? (yield* decodeActive(yield* sql`SELECT * FROM ${activeTable} WHERE ${sql.and(clauses)} ${order}`))
          .map((row): SessionStore.RunLookup => ({ _tag: "Active", run: rows.toActiveRun(row) }))
        : []
      const recorded = status === "running" || status === "paused" ? [] : (yield* rows.toRunRecords(
        "listRuns",
        "a stored run",
        yield* SqlSchema.findAll({
          Request: Schema.Void,
          Result: RunRow,
          // a run id is unfinished or recorded, never both (an ended run never starts again)
          execute: () => sql`SELECT ${runColumns} FROM ${runsTable} WHERE ${sql.and(clauses)} ${order}`
        })(undefined)
      )).map((record): SessionStore.RunLookup => ({ _tag: "Recorded", record }))
      const key = (run: SessionStore.RunLookup) => run._tag === "Active" ? run.run : run.record
      const all = [...unfinished, ...recorded].sort((a, b) =>
        key(b).startedAt - key(a).startedAt || SessionStore.compareIds(key(a).runId, key(b).runId)
      )
      const limit = filter.limit
      if (limit === undefined || all.length <= limit) return { runs: all }
      const page = all.slice(0, limit)
      const last = key(page[page.length - 1]!)
      return { runs: page, next: { startedAt: last.startedAt, runId: last.runId } }
    },
    waitForLock("listRuns"),
    Effect.catchTags({ SqlError: storeError("listRuns"), ParseError: storeError("listRuns") })
  )

  const sessionExists = (sessionId: string) =>
    Effect.map(sql`SELECT 1 AS found FROM ${sessions} WHERE session_id = ${sessionId}`, (found) => found.length > 0)
  /** whether a queued run never started: it has no unfinished run and no record (else those tell what became of it) */
  const neverStarted = (runId: string) =>
    Effect.map(
      sql`SELECT 1 AS found FROM ${activeTable} WHERE run_id = ${runId}
UNION ALL SELECT 1 AS found FROM ${runsTable} WHERE run_id = ${runId}`,
      (found) => found.length === 0
    )

  /**
   * Writes the record of a run that ended without a commit on its session,
   * inside the caller's transaction: a run of a new session ends with the
   * session created (from its initial state) to hold the record.
   */
  const recordEnded = (
    method: string,
    run: {
      readonly sessionId: string
      readonly workflowName: string
      readonly userId?: string | undefined
      readonly initialState?: unknown
    },
    recordRow: rows.RunRow,
    now: number
  ) =>
    Effect.gen(function*() {
      const initial = yield* rows.stateJson(method, run.initialState ?? {})
      const existed = (yield* sql`SELECT 1 AS found FROM ${sessions} WHERE session_id = ${run.sessionId}`).length > 0
      yield* sql`INSERT INTO ${sessions}
  (session_id, workflow_name, user_id, session_name, state, state_size, base_size, version, last_run_id,
   created_at, updated_at)
VALUES (${run.sessionId}, ${run.workflowName}, ${
        run.userId ?? null
      }, NULL, ${initial}, ${initial.length}, ${initial.length},
  1, NULL, ${now}, ${now})
ON CONFLICT (session_id) DO UPDATE SET updated_at = ${now}`
      if (!existed) {
        yield* versions.keep({
          sessionId: run.sessionId,
          version: 1,
          runId: null,
          committedAt: now,
          keep: keepOf({}),
          state: JSON.parse(initial) as unknown,
          stateText: Effect.succeed(initial),
          changes: undefined,
          changesText: null
        })
      }
      yield* writeRecord({ ...recordRow, session_id: run.sessionId })
      // the session may have been created (a watcher then sees its version 1)
      yield* notify(run.sessionId)
    })

  const endRun = Effect.fn("SqlSessionStore.endRun")(
    function*(runId: string, record: SessionStore.RunRecord, owner?: string) {
      yield* Effect.annotateCurrentSpan(runAttribute, runId)
      const now = yield* Clock.currentTimeMillis
      const recordRow = yield* rows.toRunRow("endRun", record.sessionId, record)
      // the unfinished run first, then the session, then its records: the one lock order of
      // every write (a commit that ends a run takes them in the same order), so that a cancel
      // and a commit never deadlock on PostgreSQL
      return yield* Effect.gen(function*() {
        const removed = yield* (owner === undefined
          ? sql`DELETE FROM ${activeTable} WHERE run_id = ${runId} RETURNING *`
          : sql`DELETE FROM ${activeTable} WHERE run_id = ${runId} AND owner = ${owner} RETURNING *`)
        const [row] = yield* decodeActive(removed)
        if (row === undefined) {
          const existing = yield* selectActive(runId)
          return yield* Option.isNone(existing) ? Effect.fail(rows.runNotFound(runId)) : runLost(runId)
        }
        const run = rows.toActiveRun(row)
        yield* sql`DELETE FROM ${signalsTable} WHERE run_id = ${runId}`
        yield* recordEnded("endRun", run, recordRow, now)
      }).pipe(transaction("endRun"))
    },
    Effect.catchTags({ SqlError: storeError("endRun"), ParseError: storeError("endRun") })
  )

  // -- signals -----------------------------------------------------------------------

  const addSignal = Effect.fn("SqlSessionStore.addSignal")(
    function*(runId: string, name: string, value: unknown) {
      yield* Effect.annotateCurrentSpan(runAttribute, runId)
      const json = yield* rows.toJson("addSignal", "signal value", value)
      if (json === null) {
        return yield* new WorkflowError.SessionStoreError({
          method: "addSignal",
          description: "cannot serialise the signal value as JSON"
        })
      }
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.gen(function*() {
        // the unfinished run's row first (the one lock order): its signals are numbered one at a time
        const held =
          yield* sql`UPDATE ${activeTable} SET updated_at = updated_at WHERE run_id = ${runId} RETURNING run_id`
        if (held.length === 0) return yield* Effect.fail(rows.runNotFound(runId))
        const [last] = yield* decodeSeq(yield* sql`SELECT MAX(seq) AS seq FROM ${signalsTable} WHERE run_id = ${runId}`)
        const seq = (last?.seq ?? 0) + 1
        yield* sql`INSERT INTO ${signalsTable} ${
          sql.insert({ run_id: runId, seq, name, value: json, created_at: now })
        }`
        return seq
      }).pipe(transaction("addSignal"))
    },
    Effect.catchTags({ SqlError: storeError("addSignal"), ParseError: storeError("addSignal") })
  )

  const decodeSeq = Schema.decodeUnknown(Schema.Array(Schema.Struct({ seq: Schema.NullOr(rows.Integer) })))
  const decodeSignals = Schema.decodeUnknown(Schema.Array(Schema.Struct({
    seq: rows.Integer,
    name: Schema.String,
    value: Schema.String,
    created_at: rows.Integer
  })))
  const signals = Effect.fn("SqlSessionStore.signals")(
    function*(runId: string, options?: { readonly name?: string | undefined }) {
      const found = yield* decodeSignals(
        options?.name === undefined
          ? yield* sql`SELECT seq, name, value, created_at FROM ${signalsTable} WHERE run_id = ${runId} ORDER BY seq`
          : yield* sql`SELECT seq, name, value, created_at FROM ${signalsTable}
WHERE run_id = ${runId} AND name = ${options.name} ORDER BY seq`
      )
      return yield* Effect.try({
        try: () =>
          found.map((row): SessionStore.StoredSignal => ({
            runId,
            seq: row.seq,
            name: row.name,
            value: JSON.parse(row.value) as unknown,
            createdAt: row.created_at
          })),
        catch: (cause) =>
          new WorkflowError.SessionStoreError({
            method: "signals",
            description: `a stored signal of run '${runId}' is not valid JSON`,
            cause
          })
      })
    },
    waitForLock("signals"),
    Effect.catchTags({ SqlError: storeError("signals"), ParseError: storeError("signals") })
  )

  // -- watching ----------------------------------------------------------------------

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

  const listen = dialect === "pg" ? driver?.listen : undefined
  const lostConnection = dialect === "pg" ? driver?.lostConnection : undefined

  /**
   * How often a watcher tries to listen (or read) again after its connection was lost, for `relistenTimeout` in all.
   */
  const reconnecting = Schedule.exponential("50 millis", 2).pipe(
    Schedule.union(Schedule.spaced("1 second")),
    Schedule.jittered,
    Schedule.upTo(relistenTimeout)
  )

  /** Whether `error` is a query's that lost its connection (PostgreSQL, as the driver tells). */
  const lost = (error: unknown): boolean =>
    lostConnection !== undefined && Predicate.isTagged(error, "SqlError") && lostConnection(error as SqlError)

  /**
   * A watcher's read that lost its connection is tried again (`reconnecting`),
   * then fails saying so; the database's other errors fail it at once.
   */
  const readAgainWhenLost =
    (method: string) => <A, E extends { readonly _tag: string }, R>(self: Effect.Effect<A, E, R>) =>
      (lostConnection === undefined ? self : Effect.retry(self, { while: lost, schedule: reconnecting })).pipe(
        Effect.catchIf(
          (error): error is Extract<E, rows.StoreFailure> => error._tag === "SqlError" || error._tag === "ParseError",
          (error) =>
            lost(error)
              ? new WorkflowError.SessionStoreError({
                method,
                description: `lost its connection, and could not read again within ${
                  Duration.format(relistenTimeout)
                }: ${describeError(error)}`,
                cause: error
              })
              : storeError(method)(error)
        )
      )

  /**
   * The wake-ups of a reader: every `pollInterval`, and, told of writes (the
   * driver's `listen`), whenever `channel` carries `payload`, or the empty
   * payload of a new listening connection (anything may have been written
   * before). The first poll comes after one interval: a reader reads once
   * before its first wake-up.
   */
  const wakeUps = (method: string, channel: string, payload: string, options?: SessionStore.WatchOptions) => {
    const requested = options?.pollInterval ??
      (listen === undefined ? SessionStore.defaultPollInterval : defaultNotifiedPollInterval)
    return Stream.unwrap(Effect.map(rows.pollInterval(requested), (interval) => {
      const polls = Stream.fromSchedule(Schedule.spaced(interval))
      return listen === undefined ? polls : Stream.merge(
        listen(channel).pipe(
          // the schedule starts again once the stream emits: after each new connection's wake-up
          Stream.retry(reconnecting),
          // "": listening (again), anything may have been written before
          Stream.filter((heard) => heard === payload || heard === ""),
          Stream.mapError((error) =>
            new WorkflowError.SessionStoreError({
              method,
              description: `lost the connection that listens for commits, and could not listen again within ${
                Duration.format(relistenTimeout)
              }: ${describeError(error)}`,
              cause: error
            })
          )
        ),
        polls
      ).pipe(
        // several wake-ups while a read is under way make one more read
        Stream.buffer({ capacity: 1, strategy: "sliding" })
      )
    }))
  }

  /**
   * Watching: the store reads the session's version every `pollInterval`,
   * and the row only when the version went up. Told of commits (PostgreSQL's
   * LISTEN on the channel commits notify in their transaction, with the
   * session id as payload), it also reads when a notification for the
   * session arrives, and polls only as a safety net (by default every
   * `defaultNotifiedPollInterval`). When the listening connection is lost, it
   * listens again (the driver's stream starts with a wake-up, so the versions
   * committed meanwhile are read), for `relistenTimeout` at most before the
   * watch fails with a `SessionStoreError`.
   */
  const watch = (sessionId: string, options?: SessionStore.WatchOptions) => {
    const read = (last: number) =>
      rows.changeAbove(last, selectVersion(sessionId), selectChange(sessionId)).pipe(
        waitForLock("watch"),
        readAgainWhenLost("watch")
      )
    return rows.watchStream(wakeUps("watch", channel, sessionId, options), read).pipe(
      Stream.withSpan("SqlSessionStore.watch")
    )
  }

  // -- event logs --------------------------------------------------------------------

  /** the channel appends to event logs are announced on (payload: the run id) */
  const eventsChannel = channelName(`${t.sessions}_events`)

  const appendEvents = Effect.fn("SqlSessionStore.appendEvents")(
    function*(
      runId: string,
      events: ReadonlyArray<WorkflowEvent.WorkflowEvent>,
      retention: SessionStore.EventRetention
    ) {
      // nothing after a log's terminal event, in this batch either
      const end = events.findIndex(SessionStore.isFinalEvent)
      const kept = end < 0 ? events : events.slice(0, end + 1)
      if (kept.length === 0) return
      const now = yield* Clock.currentTimeMillis
      const values = yield* Effect.forEach(kept, (event) =>
        Effect.map(SessionStore.encodeEvent(event), (text) => ({
          run_id: runId,
          seq: event.seq,
          session_id: event.sessionId,
          event: text,
          final: SessionStore.isFinalEvent(event) ? 1 : 0,
          created_at: now
        })))
      const last = kept.reduce((max, event) => Math.max(max, event.seq), -1)
      const ends = values.some((row) => row.final === 1)
      yield* Effect.gen(function*() {
        // a log ends with its terminal event: nothing is appended after it (an attempt that lost
        // the run, a second terminal event), and of two terminal events at once the unique index
        // of migration 16 keeps one. PostgreSQL: the appends to one log take turns, so that one
        // after the terminal event sees it (SQLite's write lock does that already)
        if (dialect === "pg") yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${t.events}:${runId}`}, 0))`
        const closed = yield* sql`SELECT 1 AS found FROM ${eventsTable} WHERE run_id = ${runId} AND final = 1`
        if (closed.length > 0) return
        yield* sql`INSERT INTO ${eventsTable} ${sql.insert(values)} ON CONFLICT DO NOTHING`
        if (last >= retention.maxEvents) {
          yield* sql`DELETE FROM ${eventsTable} WHERE run_id = ${runId} AND seq <= ${last - retention.maxEvents}`
        }
        if (ends) {
          yield* sql`DELETE FROM ${eventsTable} WHERE run_id IN
  (SELECT run_id FROM ${eventsTable} WHERE final = 1 AND created_at < ${now - retention.keepFor})`
        }
        if (dialect === "pg") yield* sql`SELECT pg_notify(${eventsChannel}, ${runId})`
      }).pipe(transaction("appendEvents"))
    },
    Effect.catchTags({ SqlError: storeError("appendEvents") })
  )

  const decodeEventRows = Schema.decodeUnknown(Schema.Array(Schema.Struct({ event: Schema.String })))
  const readEvents = Effect.fn("SqlSessionStore.readEvents")(
    function*(runId: string, options?: SessionStore.ReadEventsOptions) {
      const after = options?.after ?? -1
      const limit = Math.max(0, Math.floor(options?.limit ?? 1000))
      const found = yield* decodeEventRows(
        options?.latest === true
          ? yield* sql`SELECT seq, event FROM ${eventsTable} WHERE run_id = ${runId} AND seq > ${after}
ORDER BY seq DESC LIMIT ${limit}`
          : yield* sql`SELECT seq, event FROM ${eventsTable} WHERE run_id = ${runId} AND seq > ${after}
ORDER BY seq LIMIT ${limit}`
      )
      const ordered = options?.latest === true ? [...found].reverse() : found
      return yield* Effect.forEach(ordered, (row) => SessionStore.decodeEvent(runId, row.event))
    },
    waitForLock("readEvents"),
    Effect.catchTags({ SqlError: storeError("readEvents"), ParseError: storeError("readEvents") })
  )

  const watchEvents = (
    runId: string,
    options?: SessionStore.WatchOptions
  ): Stream.Stream<void, WorkflowError.SessionStoreError> =>
    Stream.concat(Stream.make(undefined), wakeUps("watchEvents", eventsChannel, runId, options)).pipe(
      Stream.as(undefined),
      Stream.withSpan("SqlSessionStore.watchEvents")
    )

  /** How many rows a prune removes per transaction. */
  const pruneBatch = 500
  const prune = Effect.fn("SqlSessionStore.prune")(
    function*(request: SessionStore.PruneRequest) {
      let runs = 0
      let events = 0
      if (request.endedBefore === undefined && request.keepLast === undefined) return { runs, events }
      const filters = [
        ...(request.workflowName === undefined ? [] : [sql`workflow_name = ${request.workflowName}`]),
        ...(request.sessionId === undefined ? [] : [sql`session_id = ${request.sessionId}`])
      ]
      const where = filters.length === 0 ? sql.literal("") : sql`WHERE ${sql.and(filters)}`
      const rules = sql.or([
        ...(request.endedBefore === undefined ? [] : [sql`completed_at < ${request.endedBefore}`]),
        ...(request.keepLast === undefined ? [] : [sql`recency > ${Math.max(0, Math.floor(request.keepLast))}`])
      ])
      while (true) {
        // a batch of the records either rule names, each session's ranked from its most recent
        const removed = yield* Effect.gen(function*() {
          const victims = yield* sql<{ run_id: string }>`SELECT run_id FROM (
  SELECT run_id, completed_at, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY seq DESC) AS recency
  FROM ${runsTable} ${where}
) AS ranked WHERE ${rules} LIMIT ${pruneBatch}`
          if (victims.length === 0) return { runs: 0, events: 0 }
          const ids = victims.map((row) => row.run_id)
          const gone = yield* sql`DELETE FROM ${eventsTable} WHERE ${sql.in("run_id", ids)} RETURNING seq`
          const records = yield* sql`DELETE FROM ${runsTable} WHERE ${sql.in("run_id", ids)} RETURNING run_id`
          return { runs: records.length, events: gone.length }
        }).pipe(transaction("prune"))
        runs += removed.runs
        events += removed.events
        if (removed.runs < pruneBatch) return { runs, events }
      }
    },
    Effect.catchTags({ SqlError: storeError("prune") })
  )

  // -- queued runs -------------------------------------------------------------------

  const queueTable = sql(t.queue)
  /** the channel a run leaving a session's queue is announced on (payload: the session id) */
  const queueChannel = channelName(`${t.sessions}_queue`)
  const decodeQueue = Schema.decodeUnknown(Schema.Array(rows.QueueRow))
  const notifyQueue = (sessionId: string): Effect.Effect<void, SqlError> =>
    dialect === "pg" ? Effect.asVoid(sql`SELECT pg_notify(${queueChannel}, ${sessionId})`) : Effect.void

  /** the terminal event of a queued run dropped from its queue, in its log if it keeps one (see `droppedEvent`) */
  const endDroppedLog = (run: SessionStore.QueuedRun, record: SessionStore.RunRecord) =>
    Effect.gen(function*() {
      if (SessionStore.droppedEvent(run, record, 0) === undefined) return
      const [last] = yield* sql<
        { seq: unknown }
      >`SELECT MAX(seq) AS seq FROM ${eventsTable} WHERE run_id = ${run.runId}`
      const seq = last?.seq === null || last?.seq === undefined ? 0 : Number(last.seq) + 1
      const dropped = SessionStore.droppedEvent(run, record, seq)!
      yield* appendEvents(run.runId, [dropped.event], dropped.retention)
    })

  const enqueueRun = Effect.fn("SqlSessionStore.enqueueRun")(
    function*(run: SessionStore.NewQueuedRun) {
      yield* Effect.annotateCurrentSpan(runAttribute, run.runId)
      const input = yield* rows.toJson("enqueueRun", "run input", run.input)
      const carry = yield* rows.toJson("enqueueRun", "queued run's options", run.carry)
      const startedWith = yield* rows.toJson("enqueueRun", "queued run's start", run.startedWith)
      const inserted = yield* Effect.gen(function*() {
        yield* lockQueue(run.sessionId)
        return yield* sql<{ ticket: unknown }>`INSERT INTO ${queueTable}
  (run_id, session_id, workflow_name, user_id, input, status, owner, lease_expires_at, enqueued_at, carry, started_with)
VALUES (${run.runId}, ${run.sessionId}, ${run.workflowName}, ${run.userId ?? null}, ${input}, 'waiting', ${run.owner},
  ${run.leaseExpiresAt}, ${run.enqueuedAt}, ${carry}, ${startedWith})
ON CONFLICT (run_id) DO NOTHING
RETURNING ticket`
      }).pipe(transaction("enqueueRun"))
      const ticket = inserted[0]?.ticket
      if (ticket === undefined) {
        return yield* new WorkflowError.SessionStoreError({
          method: "enqueueRun",
          description: `run '${run.runId}' is queued already`
        })
      }
      return Number(ticket)
    },
    Effect.catchTags({ SqlError: storeError("enqueueRun") })
  )

  const takeQueueTurn = Effect.fn("SqlSessionStore.takeQueueTurn")(
    function*(
      sessionId: string,
      runId: string,
      turn: { readonly owner: string; readonly now: number; readonly leaseExpiresAt: number }
    ) {
      yield* Effect.annotateCurrentSpan(runAttribute, runId)
      return yield* Effect.gen(function*() {
        // PostgreSQL: the session's queue lock before any row lock (every writer takes them in
        // this order); SQLite: the first statement writes (takes the lock) and checks the owner
        yield* lockQueue(sessionId)
        const [mine] = yield* decodeQueue(
          yield* sql`UPDATE ${queueTable} SET lease_expires_at = ${turn.leaseExpiresAt}
WHERE run_id = ${runId} AND session_id = ${sessionId} AND owner = ${turn.owner} RETURNING *`
        )
        if (mine === undefined) return "lost" as const
        // (a background run that never started waits to be taken over: adoptQueued)
        const dropped = yield* decodeQueue(
          yield* sql`DELETE FROM ${queueTable}
WHERE session_id = ${sessionId} AND run_id <> ${runId} AND lease_expires_at < ${turn.now}
  AND (carry IS NULL OR EXISTS (SELECT 1 FROM ${activeTable} a WHERE a.run_id = ${queueTable}.run_id)
    OR EXISTS (SELECT 1 FROM ${runsTable} r WHERE r.run_id = ${queueTable}.run_id))
RETURNING *`
        )
        // an acknowledged run never vanishes: a dropped one is recorded abandoned
        for (const row of dropped) {
          const run = yield* rows.toQueuedRun(row)
          const record = SessionStore.droppedRecord(run, turn.now)
          if (!(yield* neverStarted(run.runId)) || !(yield* sessionExists(sessionId))) continue
          yield* recordEnded("takeQueueTurn", run, yield* rows.toRunRow("takeQueueTurn", sessionId, record), turn.now)
          yield* endDroppedLog(run, record)
        }
        if (dropped.length > 0) yield* notifyQueue(sessionId)
        if (mine.status === "running") return "taken" as const
        // the turn waits for the runs queued before it, and for any other unfinished run of the session
        const [ahead] = yield* sql<{ n: unknown }>`SELECT
  (SELECT COUNT(*) FROM ${queueTable}
   WHERE session_id = ${sessionId} AND run_id <> ${runId} AND (status = 'running' OR ticket < ${mine.ticket})) +
  (SELECT COUNT(*) FROM ${activeTable} WHERE session_id = ${sessionId} AND run_id <> ${runId}) AS n`
        if (Number(ahead?.n ?? 0) > 0) return "waiting" as const
        yield* sql`UPDATE ${queueTable} SET status = 'running' WHERE run_id = ${runId}`
        return "taken" as const
      }).pipe(transaction("takeQueueTurn"))
    },
    Effect.catchTags({ SqlError: storeError("takeQueueTurn"), ParseError: storeError("takeQueueTurn") })
  )

  const leaveQueue = Effect.fn("SqlSessionStore.leaveQueue")(
    function*(sessionId: string, runId: string, owner?: string, ended?: SessionStore.RunRecord) {
      yield* Effect.annotateCurrentSpan(runAttribute, runId)
      const recordRow = ended === undefined ? undefined : yield* rows.toRunRow("leaveQueue", sessionId, ended)
      return yield* Effect.gen(function*() {
        yield* lockQueue(sessionId)
        const removed = yield* decodeQueue(
          yield* sql`DELETE FROM ${queueTable} WHERE run_id = ${runId} AND session_id = ${sessionId}${
            owner === undefined ? sql.literal("") : sql` AND owner = ${owner}`
          } RETURNING *`
        )
        const [left] = removed
        if (left === undefined) return false
        const run = yield* rows.toQueuedRun(left)
        if (recordRow !== undefined && (yield* neverStarted(runId)) && (yield* sessionExists(sessionId))) {
          const now = yield* Clock.currentTimeMillis
          yield* recordEnded("leaveQueue", run, recordRow, now)
          if (ended !== undefined) yield* endDroppedLog(run, ended)
        }
        yield* notifyQueue(sessionId)
        return true
      }).pipe(transaction("leaveQueue"))
    },
    Effect.catchTags({ SqlError: storeError("leaveQueue"), ParseError: storeError("leaveQueue") })
  )

  const adoptQueued = Effect.fn("SqlSessionStore.adoptQueued")(
    function*(sessionId: string, runId: string, adopt: Parameters<SessionStore.Backend["adoptQueued"]>[2]) {
      yield* Effect.annotateCurrentSpan(runAttribute, runId)
      // one conditional write: of several takers, one finds the run still the stopped caller's
      const taken =
        yield* sql`UPDATE ${queueTable} SET owner = ${adopt.owner}, lease_expires_at = ${adopt.leaseExpiresAt}
WHERE run_id = ${runId} AND session_id = ${sessionId} AND carry IS NOT NULL AND owner = ${adopt.from}${
          adopt.gone === true ? sql.literal("") : sql` AND lease_expires_at < ${adopt.now}`
        }
RETURNING *`.pipe(writing("adoptQueued"))
      const [row] = yield* decodeQueue(taken)
      return row === undefined ? Option.none<SessionStore.QueuedRun>() : Option.some(yield* rows.toQueuedRun(row))
    },
    Effect.catchTags({ SqlError: storeError("adoptQueued"), ParseError: storeError("adoptQueued") })
  )

  const queuedRuns = Effect.fn("SqlSessionStore.queuedRuns")(
    function*(filter: SessionStore.QueueFilter) {
      const clauses = [
        ...(filter.sessionId === undefined ? [] : [sql`session_id = ${filter.sessionId}`]),
        ...(filter.workflowName === undefined ? [] : [sql`workflow_name = ${filter.workflowName}`]),
        ...(filter.runId === undefined ? [] : [sql`run_id = ${filter.runId}`])
      ]
      const found = yield* decodeQueue(
        yield* sql`SELECT * FROM ${queueTable} WHERE ${sql.and(clauses)} ORDER BY ticket`
      )
      return yield* Effect.forEach(found, rows.toQueuedRun)
    },
    waitForLock("queuedRuns"),
    Effect.catchTags({ SqlError: storeError("queuedRuns"), ParseError: storeError("queuedRuns") })
  )

  const watchQueue = (
    sessionId: string,
    options?: SessionStore.WatchOptions
  ): Stream.Stream<void, WorkflowError.SessionStoreError> =>
    Stream.concat(Stream.make(undefined), wakeUps("watchQueue", queueChannel, sessionId, options)).pipe(
      Stream.as(undefined),
      Stream.withSpan("SqlSessionStore.watchQueue")
    )

  // -- schedules ----------------------------------------------------------------------

  const schedulesTable = sql(t.schedules)
  const decodeSchedules = Schema.decodeUnknown(Schema.Array(rows.ScheduleRow))

  const putSchedule = Effect.fn("SqlSessionStore.putSchedule")(
    function*(schedule: SessionStore.NewSchedule) {
      return yield* Effect.gen(function*() {
        // a new schedule, or a new cron (its next tick with it); the same cron keeps its row
        yield* sql`INSERT INTO ${schedulesTable} (workflow_name, name, cron, next_tick, updated_at)
VALUES (${schedule.workflowName}, ${schedule.name}, ${schedule.cron}, ${schedule.nextTick}, ${schedule.now})
ON CONFLICT (workflow_name, name) DO UPDATE SET cron = excluded.cron, next_tick = excluded.next_tick,
  updated_at = excluded.updated_at
WHERE ${schedulesTable}.cron <> excluded.cron`
        const [row] = yield* decodeSchedules(
          yield* sql`SELECT * FROM ${schedulesTable}
WHERE workflow_name = ${schedule.workflowName} AND name = ${schedule.name}`
        )
        if (row === undefined) {
          return yield* new WorkflowError.SessionStoreError({
            method: "putSchedule",
            description: `schedule '${schedule.name}' of '${schedule.workflowName}' was removed as it was stored`
          })
        }
        return rows.toSchedule(row)
      }).pipe(transaction("putSchedule"))
    },
    Effect.catchTags({ SqlError: storeError("putSchedule"), ParseError: storeError("putSchedule") })
  )

  const claimScheduleTick = Effect.fn("SqlSessionStore.claimScheduleTick")(
    function*(
      workflowName: string,
      name: string,
      claim: { readonly tick: number; readonly next: number; readonly now: number }
    ) {
      // the conditional write is the claim: of several processes that read one tick, one moves it on
      const claimed = yield* sql`UPDATE ${schedulesTable}
SET next_tick = ${claim.next}, last_fired_at = ${claim.now}, updated_at = ${claim.now}
WHERE workflow_name = ${workflowName} AND name = ${name} AND next_tick = ${claim.tick}
RETURNING name`.pipe(writing("claimScheduleTick"))
      return claimed.length > 0
    },
    Effect.catchTags({ SqlError: storeError("claimScheduleTick") })
  )

  const schedules = Effect.fn("SqlSessionStore.schedules")(
    function*(filter: SessionStore.ScheduleFilter) {
      const found = yield* decodeSchedules(
        filter.workflowName === undefined
          ? yield* sql`SELECT * FROM ${schedulesTable} ORDER BY workflow_name, name`
          : yield* sql`SELECT * FROM ${schedulesTable} WHERE workflow_name = ${filter.workflowName} ORDER BY name`
      )
      return found.map(rows.toSchedule)
    },
    waitForLock("schedules"),
    Effect.catchTags({ SqlError: storeError("schedules"), ParseError: storeError("schedules") })
  )

  return SessionStore.make({
    putSchedule,
    claimScheduleTick,
    schedules,
    prune,
    watch,
    appendEvents,
    readEvents,
    watchEvents,
    load,
    info,
    commit,
    list,
    remove,
    setName,
    runs,
    versions: listVersions,
    loadVersion,
    fork,
    startRun,
    getRun,
    updateRun,
    claimRun,
    activeRuns,
    findSession,
    listRuns,
    endRun,
    addSignal,
    signals,
    adoptQueued,
    enqueueRun,
    takeQueueTurn,
    leaveQueue,
    queuedRuns,
    watchQueue
  })
})
