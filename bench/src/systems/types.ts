import type { BenchState } from "../workload.ts"

/** One system under test, bound to one store (one database file or one in-memory store). */
export interface Runner {
  /** `runs` runs of the workflow, one after the other, on one session. */
  readonly run: (sessionId: string, runs: number) => Promise<void>
  /** One run on a new session that starts from `state` (creates the session). */
  readonly seed: (sessionId: string, state: BenchState) => Promise<void>
  /** One run on each session, at most `concurrency` at a time. */
  readonly runSessions: (sessionIds: ReadonlyArray<string>, concurrency: number) => Promise<void>
  /** Adds `runs` earlier runs to the session's history as fast as the system allows, leaving its state alone. */
  readonly prefillHistory: (sessionId: string, runs: number) => Promise<void>
  /** The session's stored counter, to check that the work was done. */
  readonly counter: (sessionId: string) => Promise<number>
  readonly close: () => Promise<void>
}
