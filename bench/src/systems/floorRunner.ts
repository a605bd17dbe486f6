/**
 * The floor's runs, whatever keeps its sessions: the same step functions
 * called by a plain async loop over an in-memory object. (Apart from the
 * SQLite floor, so that a process measuring the PostgreSQL floor does not
 * load better-sqlite3.)
 */
import { pool } from "../util.ts"
import { advance, type BenchState, emptyState, STEPS } from "../workload.ts"
import type { Runner } from "./types.ts"

type AsyncStep = (s: BenchState) => Promise<BenchState>

const steps: ReadonlyArray<AsyncStep> = Array.from({ length: STEPS }, () => async (s: BenchState) => advance(s))

/** Where a floor keeps its sessions between processes (nothing: in memory only). */
export interface Storage {
  readonly load: (sessionId: string) => BenchState | undefined | Promise<BenchState | undefined>
  readonly persist: (sessionId: string, state: BenchState) => unknown
  readonly prefill: (sessionId: string, runs: number) => unknown
  readonly close: () => unknown
}

/**
 * The floor's runs over `storage`: the state lives in memory (a session
 * written by an earlier process is read once), unless `read`, then every run
 * reads it first; each run ends with one `persist`.
 */
export const runner = (storage: Storage, read: boolean): Runner => {
  const sessions = new Map<string, BenchState>()
  const runOnce = async (sessionId: string, from?: BenchState) => {
    // a synchronous storage (SQLite, memory) costs no extra turn of the event loop
    let state = from ?? (read ? undefined : sessions.get(sessionId))
    if (state === undefined) {
      const loaded = storage.load(sessionId)
      state = (loaded instanceof Promise ? await loaded : loaded) ?? emptyState()
    }
    for (const step of steps) state = await step(state)
    if (!read) sessions.set(sessionId, state)
    const persisted = storage.persist(sessionId, state)
    if (persisted instanceof Promise) await persisted
  }
  return {
    run: async (sessionId, runs) => {
      for (let i = 0; i < runs; i++) await runOnce(sessionId)
    },
    seed: (sessionId, state) => runOnce(sessionId, state),
    runSessions: (sessionIds, concurrency) => pool(sessionIds, concurrency, (id) => runOnce(id)),
    prefillHistory: async (sessionId, runs) => {
      await storage.prefill(sessionId, runs)
    },
    counter: async (sessionId) =>
      ((read ? undefined : sessions.get(sessionId)) ?? (await storage.load(sessionId)))?.counter ?? 0,
    close: async () => {
      await storage.close()
    }
  }
}
