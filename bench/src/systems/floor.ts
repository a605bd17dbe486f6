/**
 * The physical floor: the same step functions called by a plain async loop
 * over an in-memory object, and, when persisted, one raw better-sqlite3
 * upsert of the final state's JSON per run (WAL, synchronous=NORMAL unless
 * told otherwise). No framework, no history, no checks; no load per run
 * either, unless `read` (then each run first reads and parses the session's
 * row, as a store that keeps nothing between runs must).
 */
import Database from "better-sqlite3"
import { pool } from "../util.ts"
import { advance, type BenchState, emptyState, STEPS } from "../workload.ts"
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

type AsyncStep = (s: BenchState) => Promise<BenchState>

const steps: ReadonlyArray<AsyncStep> = Array.from({ length: STEPS }, () => async (s: BenchState) => advance(s))

export const make = async (options: Options): Promise<Runner> => {
  const sessions = new Map<string, BenchState>()
  let persist: (sessionId: string, state: BenchState) => void = () => {}
  let load: (sessionId: string) => BenchState | undefined = () => undefined
  let prefill: (sessionId: string, runs: number) => void = () => {}
  let close = () => {}
  if (options.filename !== undefined) {
    const db = new Database(options.filename)
    db.pragma("journal_mode = WAL")
    db.pragma(`synchronous = ${options.synchronous ?? "NORMAL"}`)
    db.exec("CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL)")
    const select = db.prepare<[string], { state: string }>("SELECT state FROM sessions WHERE session_id = ?")
    load = (sessionId) => {
      const row = select.get(sessionId)
      return row === undefined ? undefined : (JSON.parse(row.state) as BenchState)
    }
    const upsert = db.prepare(
      "INSERT INTO sessions (session_id, state) VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET state = excluded.state"
    )
    if (options.history === true) {
      db.exec(`CREATE TABLE IF NOT EXISTS runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, run_id TEXT NOT NULL, completed_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS runs_session_idx ON runs (session_id, seq)`)
      const insertRun = db.prepare("INSERT INTO runs (session_id, run_id, completed_at) VALUES (?, ?, ?)")
      let runSeq = Date.now()
      const commit = db.transaction((sessionId: string, json: string) => {
        upsert.run(sessionId, json)
        insertRun.run(sessionId, `run-${runSeq++}`, Date.now())
      })
      persist = (sessionId, state) => commit(sessionId, JSON.stringify(state))
      prefill = db.transaction((sessionId: string, runs: number) => {
        for (let i = 0; i < runs; i++) insertRun.run(sessionId, `prefill-${runSeq++}`, Date.now())
      })
    } else {
      persist = (sessionId, state) => upsert.run(sessionId, JSON.stringify(state))
    }
    close = () => db.close()
  }
  const runOnce = async (sessionId: string, from?: BenchState) => {
    // the state lives in memory (a session written by an earlier process is read once), unless `read`
    let state = from ?? (options.read === true ? undefined : sessions.get(sessionId)) ?? load(sessionId) ??
      emptyState()
    for (const step of steps) state = await step(state)
    if (options.read !== true) sessions.set(sessionId, state)
    persist(sessionId, state)
  }
  return {
    run: async (sessionId, runs) => {
      for (let i = 0; i < runs; i++) await runOnce(sessionId)
    },
    seed: (sessionId, state) => runOnce(sessionId, state),
    runSessions: (sessionIds, concurrency) => pool(sessionIds, concurrency, (id) => runOnce(id)),
    prefillHistory: async (sessionId, runs) => prefill(sessionId, runs),
    counter: async (sessionId) => (options.read === true ? load(sessionId) : sessions.get(sessionId) ?? load(sessionId))?.counter ?? 0,
    close: async () => close()
  }
}
