/**
 * The rules every store follows, written once: how a listing's search folds
 * text, how many versions a session keeps and what each changed, how a run's
 * events are kept as JSON and which end its log, when a session's run records
 * are trimmed. `SessionStore` re-exports them, with their docs, for the stores
 * of the other packages; the memory store takes them from here.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { EventRetention, HistoryOptions, QueuedRun, RunRecord } from "../../SessionStore.js"
import * as WorkflowError from "../../WorkflowError.js"
import * as WorkflowEvent from "../../WorkflowEvent.js"
import * as json from "../json.js"

/** @internal */
export const foldSearch = (text: string): string => text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())

/** @internal */
export const defaultHistory: HistoryOptions = { keep: 20 }

/** @internal */
export const keptVersions = (history: HistoryOptions | undefined): number => {
  const keep = (history ?? defaultHistory).keep
  if (keep === "none") return 0
  if (keep === "all") return Infinity
  if (Number.isNaN(keep)) return keptVersions(defaultHistory)
  return Math.max(0, Math.floor(keep))
}

/** @internal */
export const diffStates: (prev: unknown, next: unknown) => ReadonlyArray<WorkflowEvent.StateChange> = json.storedChanges

/** @internal */
export const changedKeys = (changes: ReadonlyArray<WorkflowEvent.StateChange>): ReadonlyArray<string> | undefined => {
  const keys = new Set<string>()
  for (const change of changes) {
    const first = change.path[0]
    if (first === undefined) return undefined
    keys.add(String(first))
  }
  return [...keys]
}

/** @internal */
export const versionNotFound = (sessionId: string, version: number, latest: number): WorkflowError.VersionNotFound =>
  new WorkflowError.VersionNotFound({
    sessionId,
    version,
    latest,
    reason: Number.isInteger(version) && version >= 1 && version <= latest ? "not-kept" : "missing"
  })

/** @internal */
export const isFinalEvent = (event: WorkflowEvent.WorkflowEvent): boolean =>
  event.path.length === 0 &&
  (event._tag === "RunCompleted" || event._tag === "RunFailed" || event._tag === "RunCancelled")

const EventJson = Schema.parseJson(WorkflowEvent.WorkflowEvent)
const encodeEventJson = Schema.encode(EventJson)
const decodeEventJson = Schema.decodeUnknown(EventJson)

/** @internal */
export const encodeEvent = (
  event: WorkflowEvent.WorkflowEvent
): Effect.Effect<string, WorkflowError.SessionStoreError> =>
  encodeEventJson(event).pipe(
    Effect.catchAllDefect((cause) => Effect.fail(cause)),
    Effect.mapError((cause) =>
      new WorkflowError.SessionStoreError({
        method: "appendEvents",
        description: `cannot encode event ${event.seq} (${event._tag}) of run '${event.runId}' as JSON`,
        cause
      })
    )
  )

/** @internal */
export const decodeEvent = (
  runId: string,
  text: unknown
): Effect.Effect<WorkflowEvent.WorkflowEvent, WorkflowError.SessionStoreError> =>
  Effect.mapError(decodeEventJson(text), (cause) =>
    new WorkflowError.SessionStoreError({
      method: "readEvents",
      description: `a stored event of run '${runId}' is not a workflow event: ${cause.message}`,
      cause
    }))

/** @internal */
export const defaultKeepRuns = 1000

/** @internal */
export const keepRunsEvery = 100

/** @internal */
export const trimsAt = (keepRuns: number | "all", version: number): boolean =>
  keepRuns !== "all" && version % keepRunsEvery === 0

/** @internal */
export const checkKeepRuns = (
  method: string,
  keepRuns: number | "all" | undefined
): Effect.Effect<number | "all", WorkflowError.SessionStoreError> =>
  keepRuns === undefined
    ? Effect.succeed(defaultKeepRuns)
    : keepRuns === "all" || (Number.isSafeInteger(keepRuns) && keepRuns >= 1)
    ? Effect.succeed(keepRuns)
    : Effect.fail(
      new WorkflowError.SessionStoreError({
        method,
        description: `keepRuns must be a whole number from 1, or "all" (got ${String(keepRuns)})`
      })
    )

/** @internal */
export const defaultEventRetention: EventRetention = { maxEvents: 10_000, keepFor: 60 * 60 * 1000 }

const droppedError = "abandoned: its caller stopped while it waited in the session's queue; it never ran"

/** @internal */
export const droppedEvent = (
  run: QueuedRun,
  record: RunRecord,
  seq: number
): { readonly event: WorkflowEvent.WorkflowEvent; readonly retention: EventRetention } | undefined => {
  const startedWith = run.startedWith ?? run.carry?.startedWith
  if (startedWith?.events !== "stored") return undefined
  const base = { runId: run.runId, sessionId: run.sessionId, seq, path: [], timestamp: record.completedAt }
  return {
    event: record.status === "cancelled"
      ? { ...base, _tag: "RunCancelled" }
      : { ...base, _tag: "RunFailed", error: record.error ?? record.status },
    retention: {
      maxEvents: startedWith.maxEvents ?? defaultEventRetention.maxEvents,
      keepFor: startedWith.keepFor ?? defaultEventRetention.keepFor
    }
  }
}

/** @internal */
export const droppedRecord = (run: QueuedRun, now: number): RunRecord => ({
  runId: run.runId,
  sessionId: run.sessionId,
  workflowName: run.workflowName,
  ...(run.userId === undefined ? {} : { userId: run.userId }),
  status: "abandoned",
  input: run.input,
  error: droppedError,
  startedAt: run.enqueuedAt,
  completedAt: now
})
