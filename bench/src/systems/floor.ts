/**
 * The physical floor: the same step functions called by a plain async loop
 * over an in-memory object, and, when persisted, one raw better-sqlite3
 * upsert of the final state's JSON per run (WAL, synchronous=NORMAL unless
 * told otherwise). No framework, no history, no checks; no load per run
 * either, unless `read` (then each run first reads and parses the session's
 * row, as a store that keeps nothing between runs must).
 */
import Database from "better-sqlite3"
import type { BenchState } from "../workload.ts"
import { runner } from "./floorRunner.ts"
import type { Runner } from "./types.ts"

export interface Options {
  /** `undefined`: in memory only; else the SQLite file. */
  readonly filename?: string | undefined
  readonly synchronous?: "NORMAL" | "FULL" | undefined
  /** Read the state from SQLite at the start of every run (read + upsert), instead of keeping it in memory. */
  readonly read?: boolean | undefined
  /** Also append a run row to a history table in the same transaction (for the history-growth workload). */
  readonly history?: boolean | undefined
}

export const make = async (options: Options): Promise<Runner> => {
  if (options.filename === undefined) {
    return runner({ load: () => undefined, persist: () => {}, prefill: () => {}, close: () => {} }, false)
  }
  const db = new Database(options.filename)
  db.pragma("journal_mode = WAL")
  db.pragma(`synchronous = ${options.synchronous ?? "NORMAL"}`)
  db.exec("CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL)")
  const select = db.prepare<[string], { state: string }>("SELECT state FROM sessions WHERE session_id = ?")
  const load = (sessionId: string) => {
    const row = select.get(sessionId)
    return row === undefined ? undefined : (JSON.parse(row.state) as BenchState)
  }
  const upsert = db.prepare(
    "INSERT INTO sessions (session_id, state) VALUES (?, ?) ON " +
      "CONFLICT (session_id) DO UPDATE SET state = excluded.state"
  )
  const close = () => db.close()
  if (options.history !== true) {
    return runner({
      load,
      persist: (sessionId, state) => upsert.run(sessionId, JSON.stringify(state)),
      prefill: () => {},
      close
    }, options.read === true)
  }
  db.exec(
    `CREATE TABLE IF NOT EXISTS runs
  (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, run_id TEXT NOT NULL,
   completed_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS runs_session_idx ON runs (session_id, seq)`
  )
  const insertRun = db.prepare("INSERT INTO runs (session_id, run_id, completed_at) VALUES (?, ?, ?)")
  let runSeq = Date.now()
  const commit = db.transaction((sessionId: string, json: string) => {
    upsert.run(sessionId, json)
    insertRun.run(sessionId, `run-${runSeq++}`, Date.now())
  })
  const prefill = db.transaction((sessionId: string, runs: number) => {
    for (let i = 0; i < runs; i++) insertRun.run(sessionId, `prefill-${runSeq++}`, Date.now())
  })
  return runner(
    { load, persist: (sessionId, state) => commit(sessionId, JSON.stringify(state)), prefill, close },
    options.read === true
  )
}
