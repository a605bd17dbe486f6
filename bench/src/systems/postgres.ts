/**
 * PostgreSQL for the persisted workloads: every system opened on a "file"
 * gets a fresh schema of the bench database instead (named after the file),
 * dropped when the system closes. The floor is one raw `pg` upsert per run
 * (optionally after a read of the row), LangGraph.js runs on its
 * `PostgresSaver`.
 */
import { basename } from "node:path"
import pg from "pg"
import type { BenchState } from "../workload.ts"
import { runner } from "./floorRunner.ts"
import type { Runner } from "./types.ts"

/** The bench database: `SESSIONFLOW_BENCH_DATABASE_URL`, else the local server's `test` database. */
export const databaseUrl = (): string =>
  process.env["SESSIONFLOW_BENCH_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** Connections per system (the size of `@effect/sql-pg`'s and `pg`'s default pools). */
export const connections = 10

/** Whether the bench database accepts connections; the reason when it does not. */
export const reachable = async (): Promise<string | undefined> => {
  const client = new pg.Client({ connectionString: databaseUrl(), connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query("SELECT 1")
    return undefined
  } catch (error) {
    return `PostgreSQL at ${databaseUrl().replace(/\/\/[^@/]*@/, "//")} is not reachable: ${String(error)}`
  } finally {
    await client.end().catch(() => {})
  }
}

/** A fresh schema named after `file`, and how to drop it. */
export const freshSchema = async (
  file: string
): Promise<{ readonly schema: string; readonly drop: () => Promise<void> }> => {
  const schema = `bench_${basename(file).toLowerCase().replace(/\.db$/, "").replace(/[^a-z0-9]+/g, "_")}`.slice(0, 63)
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: databaseUrl() })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; CREATE SCHEMA "${schema}"`)
  return { schema, drop: () => admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`) }
}

export interface FloorOptions {
  readonly file: string
  /** Read the row (SELECT + JSON.parse) at the start of every run, instead of keeping the state in memory. */
  readonly read?: boolean | undefined
}

/** The floor on PostgreSQL: the steps over an object, then one upsert of the state's JSON text. */
export const floor = async (options: FloorOptions): Promise<Runner> => {
  const { drop, schema } = await freshSchema(options.file)
  const db = new pg.Pool({ connectionString: databaseUrl(), max: connections, options: `-c search_path=${schema}` })
  await db.query("CREATE TABLE sessions (session_id TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL)")
  const load = async (sessionId: string): Promise<BenchState | undefined> => {
    const { rows } = await db.query<{ state: string }>({
      name: "load",
      text: "SELECT state FROM sessions WHERE session_id = $1",
      values: [sessionId]
    })
    return rows[0] === undefined ? undefined : (JSON.parse(rows[0].state) as BenchState)
  }
  const persist = (sessionId: string, state: BenchState) =>
    db.query({
      name: "upsert",
      text: "INSERT INTO sessions (session_id, state) VALUES ($1, $2) " +
        "ON CONFLICT (session_id) DO UPDATE SET state = excluded.state",
      values: [sessionId, JSON.stringify(state)]
    })
  const prefill = () => {
    throw new Error("the PostgreSQL floor keeps no history")
  }
  const close = async () => {
    await db.end()
    await drop()
  }
  return runner({ load, persist, prefill, close }, options.read === true)
}
