/**
 * The store's tables, by dialect: the migrations that create them (shipped
 * migrations are never edited or renumbered: a change is a new migration),
 * and the check that they are there and fully migrated.
 *
 * Both dialects end at the same tables and the same columns (migration 5);
 * they got there by different numbers, which stay as they shipped. Migration
 * 6 is the same on both: the triggers that make an edit from outside (an
 * operator's `UPDATE` of a state or of a kept change that leaves the version
 * alone) a new version, so that every cached copy is seen to be stale.
 * Migration 7 is the same on both: a run's token usage (`usage`, JSON).
 * Migration 8 is the same on both: the listing indexes. Migration 9
 * (`create_events`, the same on both) adds the runs' event logs; migration
 * 10 (`create_queue`, the same on both) the sessions' queues of runs.
 * Migration 11 (`create_signals`, the same on both) adds the wake-up time of
 * paused runs and the signals sent to unfinished runs. Migration 12
 * (`create_schedules`, the same on both) adds the workflows' schedules; it
 * shipped after 13, so `migrate` also runs a migration that a database
 * migrated past it is missing (see {@link migrate}). Migration 13
 * (`create_versions`, the same on both) adds the sessions' kept versions.
 * Migration 14 (`lighter_commits`) changes SQLite's tables only, so that a
 * commit writes fewer pages (see {@link lighterCommits}); the same tables,
 * columns and indexes stay on both. Migration 15 (`first_commits`, SQLite
 * only) adds the view a new session's first commit is written through in one
 * statement (see {@link firstCommits}); PostgreSQL does the same with CTEs.
 *
 * @internal
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import type { TableNames } from "../SqlSessionStore.js"
import * as rows from "./rows.js"

/** The names of the store's tables, qualified with the schema when there is one. */
export interface Tables extends TableNames {
  readonly schema: string | undefined
}

/** The table name without its schema (index names are never qualified). */
export const local = (name: string): string => name.slice(name.lastIndexOf(".") + 1)

/** The id of the newest migration, on every dialect. */
const latestMigrationId = 16

/**
 * Migration 6: an edit of a session's state from outside the store — an
 * `UPDATE` of the `state` column that changes it but neither the version nor
 * `state_size` (the store writes the state's size with every state it
 * writes, and a new version with every new state) — makes a new version (its
 * size recomputed); so does an `UPDATE` of a kept change (the store only
 * inserts and deletes change rows). A process that cached the session then
 * finds it changed at its next load, and reads (and decodes) the edit.
 */

/**
 * Migration 8 (the same on both dialects): the indexes a page of a
 * workflow's listing reads from, a user's (or the ownerless) sessions by
 * recency and runs by start, so that a page reads its own rows only.
 */
const listingIndexes = (sql: SqlClient.SqlClient, t: Tables, name: (table: string) => string) =>
  Effect.gen(function*() {
    // ids in byte order, as listings order them (SQLite's default; PostgreSQL's "C" collation)
    const binary = sql.literal(sql.onDialectOrElse({ pg: () => ` COLLATE "C"`, orElse: () => "" }))
    yield* sql`CREATE INDEX ${sql(`${name(t.sessions)}_listing_idx`)} ON ${
      sql(t.sessions)
    } (workflow_name, user_id, updated_at DESC, session_id${binary})`
    yield* sql`CREATE INDEX ${sql(`${name(t.runs)}_listing_idx`)} ON ${
      sql(t.runs)
    } (workflow_name, user_id, started_at DESC, run_id${binary})`
    yield* sql`CREATE INDEX ${sql(`${name(t.active)}_listing_idx`)} ON ${
      sql(t.active)
    } (workflow_name, user_id, started_at DESC, run_id${binary})`
  })
const editedState = (sql: SqlClient.SqlClient) =>
  sql.literal(
    sql.onDialectOrElse({
      pg: () =>
        "(NEW.version = OLD.version AND NEW.state_size = OLD.state_size AND NEW.state IS DISTINCT FROM OLD.state)",
      orElse: () => "NEW.version = OLD.version AND NEW.state_size = OLD.state_size AND NEW.state IS NOT OLD.state"
    })
  )

/**
 * Migration 7: the tokens a run's model calls used, as JSON (NULL: none, or
 * a run recorded before). A column that is there already (tables taken back
 * to an earlier migration by hand) is kept.
 */
const addRunUsage = (sql: SqlClient.SqlClient, t: Tables) =>
  sql.onDialectOrElse({
    pg: () => Effect.asVoid(sql`ALTER TABLE ${sql(t.runs)} ADD COLUMN IF NOT EXISTS usage TEXT`),
    orElse: () =>
      Effect.flatMap(
        sql<{ n: number }>`SELECT COUNT(*) AS n FROM pragma_table_info(${t.runs}) WHERE name = 'usage'`,
        ([found]) =>
          (found?.n ?? 0) > 0 ? Effect.void : Effect.asVoid(sql`ALTER TABLE ${sql(t.runs)} ADD COLUMN usage TEXT`)
      )
  })

/**
 * Migration 9: the runs' event logs, one row per event (its `WorkflowEvent`
 * encoding as JSON text), keyed by run and `seq`; `final` marks the event that
 * ended its run (so that the logs of runs ended long ago are found by an
 * index of those rows only). Not tied to the session rows: a run's log starts
 * before its session exists, and outlives a removed session until its retention.
 */
const createEvents = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const integer = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
    yield* sql`CREATE TABLE ${sql(t.events)} (
  run_id TEXT NOT NULL,
  seq ${integer} NOT NULL,
  session_id TEXT NOT NULL,
  event TEXT NOT NULL,
  final INTEGER NOT NULL,
  created_at ${integer} NOT NULL,
  PRIMARY KEY (run_id, seq)
)${sql.onDialectOrElse({ pg: () => sql.literal(""), orElse: () => sql.literal(" WITHOUT ROWID") })}`
    yield* sql`CREATE INDEX ${sql(`${local(t.events)}_ended_idx`)} ON ${sql(t.events)} (created_at) WHERE final = 1`
  })

/**
 * Migration 10: the queued runs (`onBusy: "enqueue"`), one row per run,
 * `ticket` their place (arrival order, given by the database), `status`
 * `waiting` or `running`, held by their caller's lease. Not tied to the
 * session rows: a new session's queue comes before the session.
 */
const createQueue = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const ticket = sql.onDialectOrElse({
      pg: () => sql.literal("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
      orElse: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT")
    })
    const integer = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
    yield* sql`CREATE TABLE ${sql(t.queue)} (
  ticket ${ticket},
  run_id TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL,
  workflow_name TEXT NOT NULL,
  user_id TEXT,
  input TEXT,
  status TEXT NOT NULL,
  owner TEXT NOT NULL,
  lease_expires_at ${integer} NOT NULL,
  enqueued_at ${integer} NOT NULL
)`
    yield* sql`CREATE INDEX ${sql(`${local(t.queue)}_session_idx`)} ON ${sql(t.queue)} (session_id, ticket)`
  })

/**
 * Migration 11: when a paused run is due to wake by itself (`wake_at`, epoch
 * milliseconds: the end of a durable sleep, a timeout; NULL for a run that
 * runs, or waits with no time), indexed for the supervisor's look at the
 * runs due; and the signals sent to unfinished runs, one row per signal (its
 * value as JSON text), keyed by run and `seq`, removed with the run when it
 * ends. What is there already (tables taken back to an earlier migration by
 * hand) is kept.
 */
const createSignals = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const integer = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
    yield* sql.onDialectOrElse({
      pg: () => Effect.asVoid(sql`ALTER TABLE ${sql(t.active)} ADD COLUMN IF NOT EXISTS wake_at BIGINT`),
      orElse: () =>
        Effect.flatMap(
          sql<{ n: number }>`SELECT COUNT(*) AS n FROM pragma_table_info(${t.active}) WHERE name = 'wake_at'`,
          ([found]) =>
            (found?.n ?? 0) > 0
              ? Effect.void
              : Effect.asVoid(sql`ALTER TABLE ${sql(t.active)} ADD COLUMN wake_at INTEGER`)
        )
    })
    yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${local(t.active)}_wake_idx`)} ON ${
      sql(t.active)
    } (wake_at) WHERE wake_at IS NOT NULL`
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.signals)} (
  run_id TEXT NOT NULL,
  seq ${integer} NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  created_at ${integer} NOT NULL,
  PRIMARY KEY (run_id, seq)
)${sql.onDialectOrElse({ pg: () => sql.literal(""), orElse: () => sql.literal(" WITHOUT ROWID") })}`
  })

/**
 * Migration 16: at most one terminal event in a run's log (a unique index),
 * what a queued background run is carried on with (`carry`, JSON text),
 * what a queued run was started with (`started_with`, JSON text), and
 * the key of an unfinished run's pause in a column of its own
 * (`pause_key`, NULL for none), which a claim compares: read out of the
 * run's JSON `data` by PostgreSQL, the key was refused with the whole text
 * when a pause payload held a `\u0000` escape or a lone surrogate, and the
 * run could never be continued. Filled for the runs there (their `data`
 * parsed here, not by the database).
 */
const addPauseKeys = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    yield* addTextColumn(sql, t.active, "pause_key")
    yield* addTextColumn(sql, t.queue, "carry")
    yield* addTextColumn(sql, t.queue, "started_with")
    // one terminal event per run's log (a log ends with it): later ones go first
    yield* sql`DELETE FROM ${sql(t.events)} WHERE final = 1 AND EXISTS
  (SELECT 1 FROM ${sql(t.events)} e WHERE e.run_id = ${sql(t.events)}.run_id AND e.final = 1 AND e.seq < ${
      sql(t.events)
    }.seq)`
    yield* sql`CREATE UNIQUE INDEX IF NOT EXISTS ${sql(`${local(t.events)}_final_idx`)} ON ${sql(t.events)} (run_id)
  WHERE final = 1`
    const runs = yield* sql<{ run_id: string; data: string }>`SELECT run_id, data FROM ${sql(t.active)}`
    for (const run of runs) {
      const key = pauseKeyOf(run.data)
      if (key !== undefined) yield* sql`UPDATE ${sql(t.active)} SET pause_key = ${key} WHERE run_id = ${run.run_id}`
    }
  })

/** Adds a TEXT column to a table unless it has it (a table taken back to an earlier migration by hand). */
const addTextColumn = (sql: SqlClient.SqlClient, table: string, column: string) =>
  sql.onDialectOrElse({
    pg: () => Effect.asVoid(sql`ALTER TABLE ${sql(table)} ADD COLUMN IF NOT EXISTS ${sql(column)} TEXT`),
    orElse: () =>
      Effect.flatMap(
        sql<{ n: number }>`SELECT COUNT(*) AS n FROM pragma_table_info(${table}) WHERE name = ${column}`,
        ([found]) =>
          (found?.n ?? 0) > 0
            ? Effect.void
            : Effect.asVoid(sql`ALTER TABLE ${sql(table)} ADD COLUMN ${sql(column)} TEXT`)
      )
  })

/** The key of the pause in an unfinished run's `data` (JSON text), if it has one. */
const pauseKeyOf = (data: string): string | undefined => {
  try {
    const parsed = JSON.parse(data) as { readonly pause?: { readonly key?: unknown } }
    return typeof parsed.pause?.key === "string" ? parsed.pause.key : undefined
  } catch {
    return undefined
  }
}

/**
 * Migration 13: the kept versions of sessions (see `./history.ts`), one row
 * per version: the whole state or the changes from the version before, the
 * run that made it, when, the top-level keys it changed (JSON), and whether
 * it is listed (0: older than the session keeps, there only as the base of
 * later rows).
 */
const createVersions = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const integer = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
    yield* sql`CREATE TABLE ${sql(t.versions)} (
  session_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  run_id TEXT,
  committed_at ${integer} NOT NULL,
  changed TEXT,
  state TEXT,
  changes TEXT,
  listed INTEGER NOT NULL,
  PRIMARY KEY (session_id, version)
)${sql.onDialectOrElse({ pg: () => sql.literal(""), orElse: () => sql.literal(" WITHOUT ROWID") })}`
  })

/**
 * Migration 12: the workflows' schedules (see `Schedules`), one row per
 * workflow and schedule name: its cron expression, its next tick (moved on
 * by the process that fires it, with a conditional `UPDATE`), when a tick
 * was last fired. `IF NOT EXISTS`: it may run after 13 (see {@link migrate}).
 */
const createSchedules = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const integer = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.schedules)} (
  workflow_name TEXT NOT NULL,
  name TEXT NOT NULL,
  cron TEXT NOT NULL,
  next_tick ${integer} NOT NULL,
  last_fired_at ${integer},
  updated_at ${integer} NOT NULL,
  PRIMARY KEY (workflow_name, name)
)`
  })

/**
 * Migration 14 on SQLite: the same tables, columns and indexes, laid out so
 * that a commit writes fewer pages to the WAL (which its checkpoints then
 * copy into the database file) — a new session's commit wrote 15 (the
 * store before the listing indexes and the kept versions 8.6), now 12:
 * - The indexes by recency (the sessions' `updated_idx`, the three listing
 *   indexes) ascending by time, and descending by id: the newest row goes
 *   at the end of its range, which SQLite appends to, where an index
 *   descending by time put it at the start, which splits pages. Read
 *   backwards, each is still exactly a listing's order (newest first, ties
 *   by id), with nothing to sort.
 * - The versions table a rowid table (its primary key then a unique index),
 *   not a `WITHOUT ROWID` table: its rows (each with a state) are appended,
 *   and only the small index entry goes in a session's place.
 * - The runs table without `AUTOINCREMENT`, which wrote `sqlite_sequence`
 *   at every insert: a new record's `seq` is still above every record's
 *   (only the order of a session's records reads it).
 * The two tables are rebuilt (copied, in one transaction, once) from their
 * own definitions: a column, index or trigger added by hand is kept.
 */
const lighterCommits = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    /**
     * `table` rebuilt from its own `CREATE TABLE` text as `change` makes it (undefined: nothing
     * to change), its rows copied as they are and its indexes and triggers made again: so a
     * column or an index added by hand is kept.
     */
    const rebuild = (table: string, change: (ddl: string) => string | undefined) =>
      Effect.gen(function*() {
        const [found] = yield* sql<
          { sql: string }
        >`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ${table}`
        const ddl = found === undefined ? undefined : change(found.sql)
        if (ddl === undefined) return
        const attached = yield* sql<{ sql: string }>`SELECT sql FROM sqlite_master
WHERE tbl_name = ${table} AND type IN ('index', 'trigger') AND sql IS NOT NULL`
        const rebuilt = `${table}_rebuilt`
        yield* sql.unsafe(ddl.replace(/^CREATE TABLE\s+("(?:[^"]|"")*"|\S+)/i, `CREATE TABLE "${rebuilt}"`))
        yield* sql`INSERT INTO ${sql(rebuilt)} SELECT * FROM ${sql(table)}`
        yield* sql`DROP TABLE ${sql(table)}`
        yield* sql`ALTER TABLE ${sql(rebuilt)} RENAME TO ${sql(table)}`
        for (const statement of attached) yield* sql.unsafe(statement.sql)
      })
    const recency = [
      { index: `${t.sessions}_updated_idx`, table: t.sessions, columns: "updated_at, session_id DESC" },
      {
        index: `${t.sessions}_listing_idx`,
        table: t.sessions,
        columns: "workflow_name, user_id, updated_at, session_id DESC"
      },
      { index: `${t.runs}_listing_idx`, table: t.runs, columns: "workflow_name, user_id, started_at, run_id DESC" },
      { index: `${t.active}_listing_idx`, table: t.active, columns: "workflow_name, user_id, started_at, run_id DESC" }
    ]
    // dropped first, so that the rebuild of the runs table does not make its old one again
    for (const { index } of recency) yield* sql`DROP INDEX IF EXISTS ${sql(index)}`
    yield* rebuild(t.runs, (ddl) => /\bAUTOINCREMENT\b/i.test(ddl) ? ddl.replace(/\s+AUTOINCREMENT\b/i, "") : undefined)
    // a rowid table whose primary key is a unique index
    yield* rebuild(t.versions, (ddl) =>
      /\)\s*WITHOUT\s+ROWID\s*$/i.test(ddl) ? ddl.replace(/\)\s*WITHOUT\s+ROWID\s*$/i, ")") : undefined)
    for (const { columns, index, table } of recency) {
      yield* sql`CREATE INDEX ${sql(index)} ON ${sql(table)} (${sql.literal(columns)})`
    }
  })

/** The view a SQLite store writes a new session's first commit through (migration 15). */
export const firstCommitsView = (t: Tables): string => `${t.sessions}_first_commits`

/**
 * The columns of {@link firstCommitsView}: the session's row, whether it
 * keeps its version 1 (`keep_version`, 0 or 1) and that version's `changed`,
 * and its run's record (`run_id` also the session's `last_run_id`; none
 * without a record).
 *
 * @internal
 */
const firstCommitColumns = [
  "session_id",
  "workflow_name",
  "user_id",
  "state",
  "state_size",
  "committed_at",
  "keep_version",
  "changed",
  "run_id",
  "run_workflow_name",
  "run_user_id",
  "status",
  "input",
  "content",
  "error",
  "usage",
  "started_at",
  "completed_at"
] as const

/** A column of {@link firstCommitsView}. @internal */
export type FirstCommitColumn = (typeof firstCommitColumns)[number]

/** The message of a first commit that {@link firstCommits}' trigger refused. */
export const firstCommitRefused = "sessionflow: the session exists or a run is paused on it"

/**
 * Migration 15 (SQLite only): a new session's first commit as one statement,
 * which is its own transaction — an insert into a view of no rows, whose
 * `INSTEAD OF` trigger refuses it (`RAISE(ABORT)`, so nothing is written)
 * when the session exists or a run is paused on its id, and otherwise writes
 * the session's row, its version 1 (with `keep_version`) and its run's record
 * (a retried run's replaces its earlier attempt's). One statement instead of
 * five (`BEGIN`, the three inserts, `COMMIT`), each of which costs the
 * process more than SQLite's own work for it. A refused insert is done again
 * by the transactional commit, which tells which check refused it. A later
 * migration that rebuilds one of the trigger's tables drops the view first
 * and makes it again after: SQLite checks a trigger's tables when one of
 * them is renamed.
 */
const firstCommits = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const view = firstCommitsView(t)
    yield* sql`CREATE VIEW ${sql(view)} (${sql.literal(firstCommitColumns.join(", "))}) AS SELECT ${
      sql.literal(firstCommitColumns.map(() => "NULL").join(", "))
    } WHERE 0`
    yield* sql`CREATE TRIGGER ${sql(`${view}_insert`)} INSTEAD OF INSERT ON ${sql(view)}
BEGIN
  SELECT RAISE(ABORT, ${sql.literal(`'${firstCommitRefused}'`)})
  WHERE EXISTS (SELECT 1 FROM ${sql(t.sessions)} WHERE session_id = NEW.session_id)
    OR EXISTS (SELECT 1 FROM ${sql(t.active)} WHERE session_id = NEW.session_id AND status = 'paused');
  INSERT INTO ${sql(t.sessions)}
    (session_id, workflow_name, user_id, session_name, state, state_size, base_size, version, created_at, updated_at,
     last_run_id)
  VALUES (NEW.session_id, NEW.workflow_name, NEW.user_id, NULL, NEW.state, NEW.state_size, NEW.state_size, 1,
    NEW.committed_at, NEW.committed_at, NEW.run_id);
  INSERT INTO ${sql(t.versions)} (session_id, version, run_id, committed_at, changed, state, changes, listed)
  SELECT NEW.session_id, 1, NEW.run_id, NEW.committed_at, NEW.changed, NEW.state, NULL, 1 WHERE NEW.keep_version = 1
  ON CONFLICT (session_id, version) DO NOTHING;
  INSERT OR REPLACE INTO ${sql(t.runs)}
    (run_id, session_id, workflow_name, user_id, status, input, content, error, usage, started_at, completed_at)
  SELECT NEW.run_id, NEW.session_id, NEW.run_workflow_name, NEW.run_user_id, NEW.status, NEW.input, NEW.content,
    NEW.error, NEW.usage, NEW.started_at, NEW.completed_at
  WHERE NEW.status IS NOT NULL;
END`
  })

const sqlite = (sql: SqlClient.SqlClient, t: Tables) => ({
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
)`
    yield* sql`CREATE INDEX ${sql(`${t.sessions}_updated_idx`)} ON ${sql(t.sessions)} (updated_at DESC, session_id)`
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
)`
    yield* sql`CREATE INDEX ${sql(`${t.runs}_session_idx`)} ON ${sql(t.runs)} (session_id, seq)`
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
)`
    yield* sql`CREATE INDEX ${sql(`${t.active}_session_idx`)} ON ${sql(t.active)} (session_id, status)`
    yield* sql`CREATE INDEX ${sql(`${t.active}_workflow_idx`)} ON ${sql(t.active)} (workflow_name, started_at)`
  }),
  // the run whose commit made the session's current version (NULL: a state change outside a run)
  "0004_add_last_run_id": Effect.gen(function*() {
    yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN last_run_id TEXT`
  }),
  // the changes committed by `persist: "changes"` runs, with the sizes (in
  // characters) the store decides when to write the whole state from: of the
  // state column, of the last whole state written (there or as a change), of
  // the change rows
  "0005_create_changes": Effect.gen(function*() {
    yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN state_size INTEGER NOT NULL DEFAULT 0`
    yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN base_size INTEGER NOT NULL DEFAULT 0`
    yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN changes_size INTEGER NOT NULL DEFAULT 0`
    yield* sql`UPDATE ${sql(t.sessions)} SET state_size = length(state), base_size = length(state)`
    yield* sql`CREATE TABLE ${sql(t.changes)} (
  session_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  changes TEXT NOT NULL,
  PRIMARY KEY (session_id, version)
) WITHOUT ROWID`
  }),
  // see `editsBumpVersion`
  "0006_edits_bump_version": Effect.gen(function*() {
    yield* sql`CREATE TRIGGER ${sql(`${t.sessions}_state_edited`)} AFTER UPDATE OF state ON ${sql(t.sessions)}
FOR EACH ROW WHEN ${editedState(sql)}
BEGIN
  UPDATE ${sql(t.sessions)} SET version = version + 1, state_size = length(NEW.state),
    base_size = CASE WHEN base_size = state_size THEN length(NEW.state) ELSE base_size END
  WHERE session_id = NEW.session_id;
END`
    yield* sql`CREATE TRIGGER ${sql(`${t.changes}_edited`)} AFTER UPDATE OF changes ON ${sql(t.changes)}
FOR EACH ROW WHEN NEW.changes IS NOT OLD.changes
BEGIN
  UPDATE ${sql(t.sessions)} SET version = version + 1 WHERE session_id = NEW.session_id;
END`
  }),
  "0007_add_run_usage": addRunUsage(sql, t),
  "0008_listing_indexes": listingIndexes(sql, t, (table) => table),
  "0009_create_events": createEvents(sql, t),
  "0010_create_queue": createQueue(sql, t),
  "0011_create_signals": createSignals(sql, t),
  "0012_create_schedules": createSchedules(sql, t),
  "0013_create_versions": createVersions(sql, t),
  "0014_lighter_commits": lighterCommits(sql, t),
  "0015_first_commits": firstCommits(sql, t),
  "0016_pause_keys": addPauseKeys(sql, t)
})

const pg = (sql: SqlClient.SqlClient, t: Tables) => ({
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
  // The columns are added with a constant default, which rewrites no row: a session stored
  // before counts its state as 0 characters until its next whole state, so its changes are
  // written into it once they pass `minPendingChanges` (which is correct, only sooner).
  "0004_create_changes": Effect.gen(function*() {
    yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN state_size BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN changes_size BIGINT NOT NULL DEFAULT 0`
    yield* sql`CREATE TABLE ${sql(t.changes)} (
  session_id TEXT NOT NULL REFERENCES ${sql(t.sessions)} (session_id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  changes TEXT NOT NULL,
  PRIMARY KEY (session_id, version)
)`
  }),
  // The one design of kept changes on every dialect: the size of the last whole state
  // written, which may be a change row (then the state column is `null`). Until this
  // migration every last whole state is the state column, so it starts as its size.
  "0005_add_base_size": Effect.gen(function*() {
    yield* sql`ALTER TABLE ${sql(t.sessions)} ADD COLUMN base_size BIGINT NOT NULL DEFAULT 0`
    yield* sql`UPDATE ${sql(t.sessions)} SET base_size = state_size WHERE state_size <> 0`
  }),
  // see `editsBumpVersion`; the conditions are the triggers' WHEN clauses, checked without
  // calling the functions, so the store's own commits pay one comparison of integers
  "0006_edits_bump_version": Effect.gen(function*() {
    yield* sql`CREATE FUNCTION ${sql(`${t.sessions}_state_edited`)}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.version := OLD.version + 1;
  NEW.state_size := length(NEW.state);
  IF OLD.base_size = OLD.state_size THEN
    NEW.base_size := NEW.state_size;
  END IF;
  RETURN NEW;
END
$$`
    yield* sql`CREATE TRIGGER ${sql(`${local(t.sessions)}_state_edited`)} BEFORE UPDATE OF state ON ${sql(t.sessions)}
FOR EACH ROW WHEN ${editedState(sql)} EXECUTE FUNCTION ${sql(`${t.sessions}_state_edited`)}()`
    yield* sql`CREATE FUNCTION ${sql(`${t.changes}_edited`)}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE ${sql(t.sessions)} SET version = version + 1 WHERE session_id = NEW.session_id;
  RETURN NULL;
END
$$`
    yield* sql`CREATE TRIGGER ${sql(`${local(t.changes)}_edited`)} AFTER UPDATE OF changes ON ${sql(t.changes)}
FOR EACH ROW WHEN (NEW.changes IS DISTINCT FROM OLD.changes) EXECUTE FUNCTION ${sql(`${t.changes}_edited`)}()`
  }),
  "0007_add_run_usage": addRunUsage(sql, t),
  "0008_listing_indexes": listingIndexes(sql, t, local),
  "0009_create_events": createEvents(sql, t),
  "0010_create_queue": createQueue(sql, t),
  "0011_create_signals": createSignals(sql, t),
  "0012_create_schedules": createSchedules(sql, t),
  "0013_create_versions": createVersions(sql, t),
  // SQLite's tables only (see `lighterCommits`): PostgreSQL's tables are heaps (a row is
  // appended whatever its key), its identity column writes no other row, and its B-trees split
  // a full page in two wherever an entry goes
  "0014_lighter_commits": Effect.void,
  // SQLite only (see `firstCommits`): PostgreSQL's first commit is one statement of CTEs
  "0015_first_commits": Effect.void,
  "0016_pause_keys": addPauseKeys(sql, t)
})

/** The store's migrations on the client's dialect, by `<id>_<name>`. */
const migrations = (
  sql: SqlClient.SqlClient,
  t: Tables
): Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> =>
  sql.onDialectOrElse({ pg: () => pg(sql, t), orElse: () => sqlite(sql, t) })

/** The store's migrations on the client's dialect. */
const loader = (sql: SqlClient.SqlClient, t: Tables) => Migrator.fromRecord(migrations(sql, t))

/**
 * Runs the migrations a database migrated past them is missing: Migrator
 * runs only the migrations above the highest one recorded, so a migration
 * numbered below one that shipped before it (12, after 13) would never run.
 * Each is run in one transaction with its record, which it inserts first: of
 * several connections doing this at once, only the one whose insert went in
 * runs it (the others wait for it, then find it recorded).
 */
const runMissing = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const recorded = new Set(
      (yield* sql<{ id: number | string }>`SELECT migration_id AS id FROM ${sql(t.migrations)}`).map((row) =>
        Number(row.id)
      )
    )
    for (const [key, migration] of Object.entries(migrations(sql, t))) {
      const id = Number(key.slice(0, key.indexOf("_")))
      if (recorded.has(id)) continue
      const name = key.slice(key.indexOf("_") + 1)
      yield* sql.withTransaction(Effect.gen(function*() {
        const inserted = yield* sql`INSERT INTO ${sql(t.migrations)} (migration_id, name) VALUES (${id}, ${name})
ON CONFLICT (migration_id) DO NOTHING RETURNING migration_id`
        if (inserted.length > 0) {
          yield* migration.pipe(
            Effect.mapError((cause) =>
              new Migrator.MigrationError({ reason: "failed", message: `Migration "${key}" failed`, cause })
            )
          )
        }
      }))
    }
  })

/** Whether another connection holds SQLite's write lock. */
export const isBusy = (error: unknown): boolean =>
  Predicate.isTagged(error, "SqlError") &&
  Predicate.hasProperty(error, "cause") &&
  Predicate.hasProperty(error.cause, "code") &&
  typeof error.cause.code === "string" &&
  error.cause.code.startsWith("SQLITE_BUSY")

/** PostgreSQL's error code (SQLSTATE) behind a failure, if any. */
const pgCode = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; depth < 8 && Predicate.isObject(current); depth++) {
    if (Predicate.hasProperty(current, "code") && typeof current.code === "string") return current.code
    current = Predicate.hasProperty(current, "cause") ? current.cause : undefined
  }
  return undefined
}

/**
 * A PostgreSQL statement cancelled from outside (`57014`, query_canceled;
 * the store sets no `statement_timeout`): `@effect/sql-pg` cancels an
 * interrupted query with `pg_cancel_backend`, which can reach its connection
 * after that query ended, and cancel the next query sent on it — another
 * caller's.
 */
export const isCancelled = (error: unknown): boolean =>
  Predicate.isTagged(error, "SqlError") && pgCode(error) === "57014"

/**
 * Two PostgreSQL connections creating the same table, schema or migrations
 * row at once: one of them fails (duplicate table or schema, the table's
 * row type created by the other one — duplicate object —, unique
 * violation); trying again finds them created.
 */
const isCreationRace = (error: unknown): boolean => {
  const code = pgCode(error)
  return code === "42P07" || code === "42P06" || code === "42710" || code === "23505"
}

/**
 * Creates the schema and the tables or brings them to the latest migration.
 * Another connection migrating at the same time makes Migrator return at once
 * (SQLite: "already running") or fail (PostgreSQL: a creation race), before
 * that connection has committed; so the store checks that the tables are
 * there, and tries again until they are. A migration that fails (e.g. a table
 * of that name exists and is not ours) is a typed error, not a defect.
 */
export const migrate = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    if (t.schema !== undefined) yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(t.schema)}`
    yield* Migrator.make({})({ loader: loader(sql, t), table: t.migrations }).pipe(
      Effect.catchAllDefect((defect) =>
        defect instanceof Migrator.MigrationError ? Effect.fail(defect) : Effect.die(defect)
      )
    )
    const [latest] = yield* sql<{ id: number | null }>`SELECT MAX(migration_id) AS id FROM ${sql(t.migrations)}`
    if ((latest?.id ?? 0) < latestMigrationId) return yield* new rows.MigrationsPending()
    yield* runMissing(sql, t)
  }).pipe(
    Effect.retry({
      while: (error) =>
        isBusy(error) || isCreationRace(error) || (error._tag === "MigrationError" && isCreationRace(error.cause)) ||
        error._tag === "MigrationsPending",
      schedule: Schedule.spaced("20 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(250)))
    }),
    Effect.provideService(SqlClient.SqlClient, sql)
  )

/** The tables' names that exist, among the store's (SQLite: every table of the file). */
const existingTables = (sql: SqlClient.SqlClient, t: Tables) =>
  sql.onDialectOrElse({
    pg: () =>
      Effect.map(
        sql<{ sessions: string | null; runs: string | null; active: string | null; migrations: string | null }>`
SELECT to_regclass(${t.sessions})::text AS sessions, to_regclass(${t.runs})::text AS runs,
  to_regclass(${t.active})::text AS active, to_regclass(${t.migrations})::text AS migrations`,
        ([found]) =>
          new Set(
            found === undefined ? [] : [
              ...(found.sessions === null ? [] : [t.sessions]),
              ...(found.runs === null ? [] : [t.runs]),
              ...(found.active === null ? [] : [t.active]),
              ...(found.migrations === null ? [] : [t.migrations])
            ]
          )
      ),
    orElse: () =>
      Effect.map(
        sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`,
        (rows) => new Set(rows.map((row) => row.name))
      )
  })

/**
 * Checks, without creating or changing anything, that the store's tables
 * exist and are fully migrated: else the description of what is wrong.
 */
export const check = (sql: SqlClient.SqlClient, t: Tables, location: string) =>
  Effect.gen(function*() {
    const names = yield* existingTables(sql, t)
    if (!names.has(t.sessions) || !names.has(t.runs) || !names.has(t.migrations)) {
      // SQLite lists the file's other session tables (a typo is the likely cause)
      const found = sql.onDialectOrElse({
        pg: () => undefined,
        orElse: () =>
          [...names].flatMap((name) => {
            const base = name.endsWith("_migrations") ? name.slice(0, -"_migrations".length) : undefined
            return base !== undefined && names.has(base) && names.has(`${base}_runs`) ? [base] : []
          }).sort()
      })
      return `there is no session table '${local(t.sessions)}'${location} (${
        found === undefined
          ? "or it is not fully created"
          : found.length === 0
          ? "it has no session tables"
          : `its session tables: ${found.join(", ")}`
      })`
    }
    const [latest] = yield* sql<{ id: number | null }>`SELECT MAX(migration_id) AS id FROM ${sql(t.migrations)}`
    const id = latest?.id ?? 0
    if (id < latestMigrationId) {
      return `the tables of '${local(t.sessions)}'${location} are at migration ${id} of ${latestMigrationId}: ` +
        `open them once with migrations on${
          sql.onDialectOrElse({ sqlite: () => " (not read-only)", orElse: () => "" })
        } to migrate them`
    }
    return undefined
  })
