/**
 * The databases the SQL store's tests run on: a fresh SQLite file, or a fresh
 * schema of the local PostgreSQL, each with the store's layers and a client
 * of the test's own for assertions in SQL.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { type SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import type { SessionStore, WorkflowError } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqlSessionStore } from "@sessionflow/store-sql"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Layer, Redacted, type Scope } from "effect"
import { freshSchema, testUrl } from "../store-pg/pg.js"

export interface StoreOptions {
  readonly table?: string | undefined
  readonly migrate?: boolean | undefined
}

/** One fresh database. */
export interface Database {
  /** the options that put a store in this database (PostgreSQL: its schema) */
  readonly options: { readonly schema?: string | undefined }
  /** the store on a connection (pool) of its own, opened by its driver package */
  readonly layer: (options?: StoreOptions) => Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError>
  /** a client of the test's own on the database */
  readonly client: Layer.Layer<SqlClient.SqlClient, unknown>
  /** `SqlSessionStore.layer` on a client of its own, that client provided too (for assertions in SQL) */
  readonly withClient: (
    options?: StoreOptions
  ) => Layer.Layer<SessionStore.SessionStore | SqlClient.SqlClient, unknown>
  /** a client that renames every column and table it is given (the store must not be affected) */
  readonly transformingClient: Layer.Layer<SqlClient.SqlClient, unknown>
  /** a table's name as SQL reaches it (qualified with the schema on PostgreSQL) */
  readonly table: (name: string) => string
  /** the names of the database's tables, sorted */
  readonly tables: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<string>, unknown>
  /** makes every insert of a run whose id is 'bad' into `table` fail */
  readonly refuseBadRuns: (sql: SqlClient.SqlClient, table: string) => Effect.Effect<void, unknown>
}

export interface Dialect {
  readonly name: "SQLite" | "PostgreSQL"
  /** the names of the store's migrations, as they shipped on this database */
  /** the names of the migrations, in order (their ids: 1 to 14) */
  readonly migrations: ReadonlyArray<string>
  /** a fresh database, removed when the scope closes */
  readonly fresh: Effect.Effect<Database, unknown, Scope.Scope>
}

const tempFile = Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-" }))
  .pipe(
    Effect.map((dir) => `${dir}/sessions.db`),
    Effect.provide(NodeFileSystem.layer)
  )

const sqlite: Dialect = {
  name: "SQLite",
  migrations: [
    "create_sessions",
    "create_runs",
    "create_active",
    "add_last_run_id",
    "create_changes",
    "edits_bump_version",
    "add_run_usage",
    "listing_indexes",
    "create_events",
    "create_queue",
    "create_signals",
    "create_schedules",
    "create_versions",
    "lighter_commits",
    "first_commits",
    "pause_keys"
  ],
  fresh: Effect.map(tempFile, (filename): Database => {
    const client = SqliteClient.layer({ filename })
    return {
      options: {},
      layer: (options) => SqliteSessionStore.layer({ filename, ...options }),
      client,
      withClient: (options) => SqlSessionStore.layer(options).pipe(Layer.provideMerge(client)),
      transformingClient: SqliteClient.layer({
        filename,
        transformQueryNames: (name) => `renamed_${name}`,
        transformResultNames: (name) => `renamed_${name}`
      }),
      table: (name) => name,
      tables: (sql) =>
        Effect.map(
          sql<
            { name: string }
          >`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`,
          (rows) => rows.map((row) => row.name)
        ),
      refuseBadRuns: (sql, table) =>
        Effect.asVoid(sql.unsafe(`CREATE TRIGGER refuse_bad BEFORE INSERT ON ${table}
WHEN NEW.run_id = 'bad' BEGIN SELECT RAISE(ABORT, 'refused'); END`))
    }
  })
}

export const pg: Dialect = {
  name: "PostgreSQL",
  migrations: [
    "create_sessions",
    "create_runs",
    "create_active",
    "create_changes",
    "add_base_size",
    "edits_bump_version",
    "add_run_usage",
    "listing_indexes",
    "create_events",
    "create_queue",
    "create_signals",
    "create_schedules",
    "create_versions",
    "lighter_commits",
    "first_commits",
    "pause_keys"
  ],
  fresh: Effect.map(freshSchema, (schema): Database => {
    const client = PgClient.layer({ url: Redacted.make(testUrl), applicationName: "sessionflow-test" })
    return {
      options: { schema },
      layer: (options) => PgSessionStore.layer({ url: testUrl, schema, ...options }),
      client,
      withClient: (options) => SqlSessionStore.layer({ schema, ...options }).pipe(Layer.provideMerge(client)),
      transformingClient: PgClient.layer({
        url: Redacted.make(testUrl),
        transformQueryNames: (name) => `renamed_${name}`,
        transformResultNames: (name) => `renamed_${name}`
      }),
      table: (name) => `${schema}.${name}`,
      tables: (sql) =>
        Effect.map(
          sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables
WHERE table_schema = ${schema} ORDER BY table_name`,
          (rows) => rows.map((row) => row.table_name)
        ),
      refuseBadRuns: (sql, table) =>
        Effect.gen(function*() {
          yield* sql.unsafe(`CREATE FUNCTION ${schema}.refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.run_id = 'bad' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$`)
          yield* sql.unsafe(`CREATE TRIGGER refuse_bad BEFORE INSERT ON ${table}
FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse_bad()`)
        })
    }
  })
}

export const dialects: ReadonlyArray<Dialect> = [sqlite, pg]

/** A run record of session `sessionId`. */
export const run = (sessionId: string, runId: string): SessionStore.RunRecord => ({
  runId,
  sessionId,
  workflowName: "wf",
  status: "completed",
  input: { message: runId },
  content: `done ${runId}`,
  startedAt: 1,
  completedAt: 2
})

/**
 * A session's row as the kept changes are decided by (its sizes as numbers: PostgreSQL returns
 * BIGINT as text), and its kept changes, oldest first; `table` qualifies a table's name.
 */
export const sessionRows = (sql: SqlClient.SqlClient, table: (name: string) => string) => ({
  rowOf: (sessionId: string) =>
    Effect.map(
      sql<{ state: string; version: number; state_size: unknown; base_size: unknown; changes_size: unknown }>`
        SELECT state, version, state_size, base_size, changes_size FROM ${sql(table("sessionflow_sessions"))}
        WHERE session_id = ${sessionId}`,
      ([row]) => ({
        state: row!.state,
        version: row!.version,
        state_size: Number(row!.state_size),
        base_size: Number(row!.base_size),
        changes_size: Number(row!.changes_size)
      })
    ),
  keptChanges: (sessionId: string) =>
    Effect.map(
      sql<{ version: number; changes: string }>`SELECT version, changes FROM ${
        sql(table("sessionflow_sessions_changes"))
      }
        WHERE session_id = ${sessionId} ORDER BY version`,
      (rows) => rows.map((row) => [row.version, JSON.parse(row.changes)] as const)
    )
})
