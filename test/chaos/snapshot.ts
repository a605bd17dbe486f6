/**
 * What the store holds at the end of a chaos run, read through the public
 * `SessionStore` API: every session (state, version, run records), the
 * unfinished and queued runs, and the stored event log of every run the
 * history names.
 */
import { SessionStore } from "@sessionflow/core"
import { Effect } from "effect"

interface SnapshotSession {
  readonly sessionId: string
  readonly version: number
  readonly state: unknown
  readonly runs: ReadonlyArray<SessionStore.RunRecord>
}

export interface SnapshotEvent {
  readonly seq: number
  readonly _tag: string
  /** it ends the run's log (`SessionStore.isFinalEvent`) */
  readonly final: boolean
}

export interface Snapshot {
  readonly t: number
  readonly sessions: ReadonlyArray<SnapshotSession>
  readonly active: ReadonlyArray<SessionStore.ActiveRun>
  readonly queued: ReadonlyArray<SessionStore.QueuedRun>
  /** by run id: its stored events' `seq` and `_tag`, in `seq` order */
  readonly events: Readonly<Record<string, ReadonlyArray<SnapshotEvent>>>
}

export const takeSnapshot = (runIds: Iterable<string>) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const listing = yield* store.list({})
    const sessions = yield* Effect.forEach(listing.sessions, (info) =>
      Effect.gen(function*() {
        const loaded = yield* store.load(info.sessionId)
        const runs = yield* store.runs(info.sessionId, {})
        return {
          sessionId: info.sessionId,
          version: loaded._tag === "Some" ? loaded.value.version : info.version,
          state: loaded._tag === "Some" ? loaded.value.state : undefined,
          runs
        }
      }))
    const active = yield* store.activeRuns({})
    const queued = yield* store.queuedRuns({})
    const ids = new Set(runIds)
    for (const session of sessions) for (const run of session.runs) ids.add(run.runId)
    for (const run of active) ids.add(run.runId)
    const events: Record<string, ReadonlyArray<SnapshotEvent>> = {}
    for (const runId of ids) {
      const read = yield* store.readEvents(runId, { limit: 100_000 })
      if (read.length > 0) {
        events[runId] = read.map((event) => ({
          seq: event.seq,
          _tag: event._tag,
          final: SessionStore.isFinalEvent(event)
        }))
      }
    }
    const snapshot: Snapshot = { t: Date.now(), sessions, active, queued, events }
    return snapshot
  })
