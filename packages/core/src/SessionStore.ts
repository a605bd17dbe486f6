/**
 * Persistence of sessions: their state, name, owner and run history.
 *
 * A backend implements a few primitives ({@link Backend}); {@link make} adds
 * per-session serialisation inside the process. Across processes, backends
 * use optimistic concurrency: every state commit names the version it was
 * based on, and a commit based on a stale version fails with
 * `SessionConflict` and writes nothing.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ids from "./internal/ids.js"
import * as json from "./internal/json.js"
import * as idGuard from "./internal/store/idGuard.js"
import * as memory from "./internal/store/memoryStore.js"
import * as owners from "./internal/store/owner.js"
import * as rules from "./internal/store/rules.js"
import * as RunLifecycle from "./RunLifecycle.js"
import { StepOutputSchema } from "./StepOutput.js"
import type { SessionConflict, SessionOwnershipError, StateDecodeError } from "./WorkflowError.js"
import * as WorkflowError from "./WorkflowError.js"
import type { StateChange } from "./WorkflowEvent.js"
import type * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * The longest session or run id (in UTF-16 code units) every store takes.
 *
 * @since 0.1.0
 * @category ids
 */
export const maxIdLength: number = ids.maxLength

/**
 * A session or run id as every store takes it: 1 to {@link maxIdLength}
 * characters of well-formed Unicode without control characters (no NUL, no
 * newline). Runs on a session id outside it fail with `InvalidSessionId`, and
 * every operation given a run id outside it (a run with `runId`, a continue,
 * resume, cancel, signal, status or event log) with `InvalidRunId`; servers
 * refuse such ids at their edge with this Schema.
 *
 * @since 0.1.0
 * @category ids
 */
export const Id: Schema.Schema<string> = Schema.String.pipe(
  Schema.filter((id) => {
    const problem = ids.problem(id)
    return problem === undefined || ids.describe("session or run", id, problem)
  })
).annotations({ identifier: "Id", description: `1 to ${ids.maxLength} characters, no control characters` })

/**
 * @since 0.1.0
 * @category models
 */
export const RunStatus = Schema.Literal("completed", "error", "cancelled", "abandoned")

/**
 * @since 0.1.0
 * @category models
 */
export type RunStatus = typeof RunStatus.Type

/**
 * The tokens a run's model calls used, summed over every call of every agent
 * (team members included), as the providers reported them (a count a
 * provider did not report counts as 0).
 *
 * @since 0.1.0
 * @category models
 */
export const RunUsage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  totalTokens: Schema.Number,
  /** when a provider reported them */
  reasoningTokens: Schema.optional(Schema.Number),
  cachedInputTokens: Schema.optional(Schema.Number),
  /** how many model calls the run made */
  modelCalls: Schema.Number
})

/**
 * @since 0.1.0
 * @category models
 */
export type RunUsage = typeof RunUsage.Type

/**
 * One run of a session, as kept in its history.
 *
 * @since 0.1.0
 * @category models
 */
export const RunRecord = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  status: RunStatus,
  input: Schema.Unknown,
  content: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.String),
  /** the tokens its model calls used (a completed run that called a model) */
  usage: Schema.optional(RunUsage),
  /** epoch milliseconds */
  startedAt: Schema.Number,
  /** epoch milliseconds */
  completedAt: Schema.Number
})

/**
 * @since 0.1.0
 * @category models
 */
export type RunRecord = typeof RunRecord.Type

/**
 * What a store knows of a session, without its state.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionInfo {
  readonly sessionId: string
  readonly workflowName: string
  readonly userId: string | undefined
  readonly name: string | undefined
  /** incremented by every committed state change; 1 after the first commit */
  readonly version: number
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * A session with its state (parsed JSON, not yet decoded with a Schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredSession extends SessionInfo {
  /** `undefined` when `unchanged` */
  readonly state: unknown
  /**
   * `true` when the load was given a `knownVersion` and the session is still
   * at that version: its state was then not read (`state` is `undefined`).
   */
  readonly unchanged?: boolean | undefined
  /** the id of the session's paused run, if it has one (it then takes no new run) */
  readonly pausedRunId?: string | undefined
  /**
   * the session's running runs, and the run of its queue that has its turn,
   * with their owner and lease (read by {@link Backend.findSession} only): a
   * run with `onBusy: "reject"` is refused before its work while one runs
   * elsewhere under a live lease
   */
  readonly running?: ReadonlyArray<RunningRun> | undefined
}

/**
 * A run that runs on a session, as {@link Backend.findSession} reads it.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunningRun {
  readonly runId: string
  readonly owner: string
  /** epoch milliseconds */
  readonly leaseExpiresAt: number
  /** `true` for the run of the session's queue that has its turn (the others are its unfinished runs, oldest first) */
  readonly queued?: true | undefined
}

/**
 * A session as {@link Backend.findSession} finds it: stored (`Stored`, as
 * `load` reads it), or not stored yet (`New`) with the unfinished runs on its
 * id, oldest first: its first runs (running, paused or waiting), none for an
 * id no run has used.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionFound =
  | { readonly _tag: "Stored"; readonly session: StoredSession }
  | {
    readonly _tag: "New"
    readonly runs: ReadonlyArray<ActiveRun>
    /** the run of the session's queue that has its turn, if any (see `StoredSession.running`) */
    readonly running?: ReadonlyArray<RunningRun> | undefined
  }

/**
 * @since 0.1.0
 * @category models
 */
export interface FindSessionOptions extends LoadOptions {
  /**
   * `false`: the state is not read (nor parsed, so a corrupt one does not
   * matter), as by `info`: a stored session comes back as with a
   * `knownVersion` equal to its version (`unchanged: true`, no `state`).
   * Default `true`.
   */
  readonly state?: boolean | undefined
}

// -----------------------------------------------------------------------------
// unfinished runs
// -----------------------------------------------------------------------------

/**
 * The statuses of an unfinished run: `running` (an owner holds its lease) or
 * `paused` (waiting for a person).
 *
 * @since 0.1.0
 * @category runs
 */
export const ActiveStatus = Schema.Literal("running", "paused")

/**
 * @since 0.1.0
 * @category runs
 */
export type ActiveStatus = typeof ActiveStatus.Type

/**
 * A point an unfinished run continues from: the index of its next top-level
 * step, the content that step receives, every step output so far (and the
 * workflow's by name), the (encoded) state at that point, and the answers
 * given to questions asked inside the next step (by question key).
 *
 * @since 0.1.0
 * @category runs
 */
export const Journal = Schema.Struct({
  next: Schema.Number,
  previous: Schema.Unknown,
  completed: Schema.Array(StepOutputSchema),
  /** the workflow's step outputs by name (what the next step sees as `previousStepOutputs`) */
  outputs: Schema.Record({ key: Schema.String, value: StepOutputSchema }),
  state: Schema.Unknown,
  answers: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  /** the tokens the run's model calls used so far */
  usage: Schema.optional(RunUsage),
  /** the signals the run has taken so far (their `seq`, see {@link StoredSignal}) */
  signals: Schema.optional(Schema.Array(Schema.Number))
})

/**
 * @since 0.1.0
 * @category runs
 */
export type Journal = typeof Journal.Type

/**
 * What a paused run waits for: a person's answer (`question`, given with
 * `Workflow.continue`), the end of a durable sleep (`sleep`, `Step.sleep`),
 * or a signal (`signal`, `Step.waitFor`, sent with `Workflow.signal`).
 *
 * @since 0.1.0
 * @category runs
 */
export const PauseKind = Schema.Literal("question", "sleep", "signal")

/**
 * @since 0.1.0
 * @category runs
 */
export type PauseKind = typeof PauseKind.Type

/**
 * Why a run is paused: the step that asked (its path and question key), what
 * it asked (`payload`), and private data the asking code continues from (e.g.
 * an agent's conversation); what it waits for (`kind`, absent: a question;
 * `signal`, the name of the signal it waits for); and when it wakes by itself
 * (`wakeAt`: the end of its sleep, or its timeout; `timeoutAt`: the timeout
 * of a question or a wait), which `DurableRuns` and `Workflow.recover` look at.
 *
 * @since 0.1.0
 * @category runs
 */
export const Pause = Schema.Struct({
  path: Schema.Array(Schema.String),
  key: Schema.String,
  payload: Schema.Unknown,
  checkpoint: Schema.optional(Schema.Unknown),
  /** epoch milliseconds */
  pausedAt: Schema.Number,
  /** absent: `"question"` */
  kind: Schema.optional(PauseKind),
  /** the signal a `"signal"` pause waits for */
  signal: Schema.optional(Schema.String),
  /**
   * epoch milliseconds: when the run is due to be woken (a sleep's
   * end, a timeout, or at once for a signal that came as it paused)
   */
  wakeAt: Schema.optional(Schema.Number),
  /** epoch milliseconds: when a question or a wait for a signal times out */
  timeoutAt: Schema.optional(Schema.Number),
  /**
   * the answer of the continue that took the run from this pause, recorded as
   * it took it (the run is `running` then): a run whose process died while
   * continuing goes on with this answer, whoever carries it on
   */
  answer: Schema.optional(Schema.Unknown)
})

/**
 * @since 0.1.0
 * @category runs
 */
export type Pause = typeof Pause.Type

/**
 * The shape of the workflow an unfinished run was started by: its `version`
 * (if it declares one), its step tree, one line per step in order (`path
 * kind`, the path the step names from the top level down, joined by `/`),
 * and a fingerprint of those lines. A run is carried on only by a workflow of
 * the same shape (see `WorkflowError.WorkflowChanged`).
 *
 * @since 0.1.0
 * @category runs
 */
export const WorkflowShape = Schema.Struct({
  version: Schema.optional(Schema.String),
  fingerprint: Schema.String,
  steps: Schema.Array(Schema.String)
})

/**
 * @since 0.1.0
 * @category runs
 */
export type WorkflowShape = typeof WorkflowShape.Type

/**
 * What a run was started with that whoever carries it on (a continue, a
 * resume, the `DurableRuns` supervisor, a cluster runner) must carry it on
 * with: its event log (`events: "stored"`, with its retention), its lease
 * (`leaseMillis`), what it does at a busy session (`onBusy`), and its retries
 * on a conflict. A carrying-on call's own option wins where it gives one.
 *
 * @since 0.1.0
 * @category runs
 */
export const StartedWith = Schema.Struct({
  events: Schema.optional(Schema.Literal("stored")),
  /** the run's event retention (see {@link EventRetention}) */
  maxEvents: Schema.optional(Schema.Number),
  keepFor: Schema.optional(Schema.Number),
  leaseMillis: Schema.optional(Schema.Number),
  onBusy: Schema.optional(Schema.Literal("reject", "enqueue", "interrupt")),
  retryOnConflict: Schema.optional(Schema.Number)
})

/**
 * @since 0.1.0
 * @category runs
 */
export type StartedWith = typeof StartedWith.Type

/**
 * An unfinished run, as the store keeps it while it runs or waits: who runs it
 * (`owner`) and until when (`leaseExpiresAt`: a running run whose lease has
 * expired is abandoned), the session version it started from, its journal and
 * its pause.
 *
 * @since 0.1.0
 * @category runs
 */
export const ActiveRun = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  status: ActiveStatus,
  input: Schema.Unknown,
  additionalData: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** who runs it; empty while paused */
  owner: Schema.String,
  /** epoch milliseconds; 0 while paused */
  leaseExpiresAt: Schema.Number,
  /** the session version the run started from (0: a new session) */
  baseVersion: Schema.Number,
  /** the state a new session starts from (encoded), kept to create it on commit */
  initialState: Schema.optional(Schema.Unknown),
  /** whether each top-level step is journaled */
  durability: Schema.Literal("run", "step"),
  /** the shape of the workflow that started it (absent on runs stored before shapes were recorded) */
  shape: Schema.optional(WorkflowShape),
  journal: Schema.optional(Journal),
  pause: Schema.optional(Pause),
  /** what it was started with (absent on runs stored before it was kept, or started with the defaults) */
  startedWith: Schema.optional(StartedWith),
  /** epoch milliseconds */
  startedAt: Schema.Number,
  /** epoch milliseconds */
  updatedAt: Schema.Number
})

/**
 * @since 0.1.0
 * @category runs
 */
export type ActiveRun = typeof ActiveRun.Type

// -----------------------------------------------------------------------------
// queued runs
// -----------------------------------------------------------------------------

/**
 * The statuses of a queued run (see `Workflow.RunOptions.onBusy`):
 * `waiting` for its turn, or `running` (it has its turn: the session's
 * queue lets no other run start until it leaves).
 *
 * @since 0.1.0
 * @category queue
 */
export const QueueStatus = Schema.Literal("waiting", "running")

/**
 * @since 0.1.0
 * @category queue
 */
export type QueueStatus = typeof QueueStatus.Type

/**
 * What a queued background run (`Workflow.start` with `onBusy: "enqueue"`)
 * is carried on with when its caller stops before its turn: the options that
 * make it the same run, so that whoever takes it over (see
 * {@link Backend.adoptQueued}: `DurableRuns`, another caller of the session's
 * queue) runs it as its starter would have.
 *
 * @since 0.1.0
 * @category queue
 */
export const QueuedCarry = Schema.Struct({
  sessionState: Schema.optional(Schema.Unknown),
  overwriteDbSessionState: Schema.optional(Schema.Boolean),
  additionalData: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  durability: Schema.optional(Schema.Literal("run", "step")),
  startedWith: Schema.optional(StartedWith)
})

/**
 * @since 0.1.0
 * @category queue
 */
export type QueuedCarry = typeof QueuedCarry.Type

/**
 * A run in a session's queue: a run given `onBusy: "enqueue"` that waits
 * for its turn or has it. Its caller holds it with a lease it renews while
 * it waits and runs (`owner`, `leaseExpiresAt`): an entry whose lease
 * expired (its caller's process died) is dropped by the next caller that
 * looks at the queue, so it never blocks the queue for long. `ticket` is its
 * place: larger than the ticket of every run queued before it in the store.
 *
 * @since 0.1.0
 * @category queue
 */
export const QueuedRun = Schema.Struct({
  runId: Schema.String,
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optional(Schema.String),
  input: Schema.Unknown,
  ticket: Schema.Number,
  status: QueueStatus,
  owner: Schema.String,
  /** epoch milliseconds */
  leaseExpiresAt: Schema.Number,
  /** epoch milliseconds */
  enqueuedAt: Schema.Number,
  /**
   * present for a background run: what it is carried on with when its caller
   * stops before its turn (it is then taken over, never dropped)
   */
  carry: Schema.optional(QueuedCarry),
  /**
   * what the run was started with, where it matters before its turn: a run
   * that keeps its events (`events: "stored"`) and is dropped from the queue
   * gets its log's terminal event (see {@link droppedEvent})
   */
  startedWith: Schema.optional(StartedWith)
})

/**
 * @since 0.1.0
 * @category queue
 */
export type QueuedRun = typeof QueuedRun.Type

/**
 * What {@link Backend.enqueueRun} is given: a queued run without its place
 * and status (it starts `waiting`).
 *
 * @since 0.1.0
 * @category queue
 */
export type NewQueuedRun = Omit<QueuedRun, "ticket" | "status">

/**
 * The record of a queued run dropped from its session's queue because its
 * caller stopped (its lease expired, or its process is gone): `abandoned`,
 * nothing of it ran.
 *
 * @since 0.1.0
 * @category queue
 */
export const droppedRecord: (run: QueuedRun, now: number) => RunRecord = rules.droppedRecord

/**
 * The event log's end of a queued run that leaves its session's queue
 * before it started, ended by `record` (dropped: see {@link droppedRecord};
 * or cancelled), with the retention it was started with: at `seq` (after
 * the log's last event: 0 for a run that never ran; a plain run has no entry
 * to say it ran), `RunCancelled` for a cancelled run, else `RunFailed`
 * — for a run that keeps its events (`startedWith.events: "stored"`), none
 * for the others. A store appends it as it records the run, so that the
 * log's followers see the end.
 *
 * @since 0.1.0
 * @category queue
 */
export const droppedEvent: (
  run: QueuedRun,
  record: RunRecord,
  seq: number
) => { readonly event: WorkflowEvent.WorkflowEvent; readonly retention: EventRetention } | undefined =
  rules.droppedEvent

/**
 * What {@link Backend.takeQueueTurn} found: `"taken"`, the run has its turn
 * (now or already); `"waiting"`, a run queued before it, or one that has its
 * turn, is still there; `"lost"`, the run is not in the queue with that owner
 * (its lease expired and another caller dropped it, or it left).
 *
 * @since 0.1.0
 * @category queue
 */
export type QueueTurn = "taken" | "waiting" | "lost"

/**
 * @since 0.1.0
 * @category queue
 */
export interface QueueFilter {
  readonly sessionId?: string | undefined
  readonly workflowName?: string | undefined
  /** only this run (a run is queued once at most) */
  readonly runId?: string | undefined
}

/**
 * A run in its session's queue with its place: `position`, how many runs of
 * the queue are ahead of it (0: the first, whose turn has come or comes as
 * soon as the session is free).
 *
 * @since 0.1.0
 * @category queue
 */
export interface QueuePlace {
  readonly _tag: "Queued"
  readonly run: QueuedRun
  readonly position: number
}

/**
 * Where a run is in the store: unfinished or recorded ({@link RunLookup}),
 * or waiting in its session's queue ({@link QueuePlace}).
 *
 * @since 0.1.0
 * @category queue
 */
export type RunPlace = RunLookup | QueuePlace

/**
 * What the store knows of a run, its queue included: unfinished or recorded
 * as {@link Backend.getRun} finds it, else its place in its session's queue
 * (then two more reads: its entry of the queue, and its session's queue). A
 * run that leaves the queue while it is looked for (it ended) is found
 * recorded.
 *
 * @since 0.1.0
 * @category queue
 */
export const findRun = (
  store: Backend,
  runId: string
): Effect.Effect<Option.Option<RunPlace>, WorkflowError.SessionStoreError> =>
  Effect.gen(function*() {
    const known: Option.Option<RunPlace> = yield* store.getRun(runId)
    if (Option.isSome(known)) return known
    const [queued] = yield* store.queuedRuns({ runId })
    // not queued (now): never was, or it left the queue since the first read, having ended
    if (queued === undefined) return yield* store.getRun(runId)
    const queue = yield* store.queuedRuns({ sessionId: queued.sessionId })
    const position = queue.filter((other) => other.runId !== runId && other.ticket < queued.ticket).length
    return Option.some({ _tag: "Queued" as const, run: queued, position })
  })

// -----------------------------------------------------------------------------
// schedules
// -----------------------------------------------------------------------------

/**
 * A workflow's schedule as the store keeps it (see the `Schedules` module):
 * its cron expression and the next tick not fired yet. The process that fires
 * a tick moves `nextTick` on with {@link Backend.claimScheduleTick}, so each
 * tick is fired by one process only.
 *
 * @since 0.1.0
 * @category schedules
 */
export const StoredSchedule = Schema.Struct({
  workflowName: Schema.String,
  name: Schema.String,
  cron: Schema.String,
  /** epoch milliseconds: the next tick, not fired yet */
  nextTick: Schema.Number,
  /** epoch milliseconds: when a tick was last fired */
  lastFiredAt: Schema.optional(Schema.Number),
  /** epoch milliseconds */
  updatedAt: Schema.Number
})

/**
 * @since 0.1.0
 * @category schedules
 */
export type StoredSchedule = typeof StoredSchedule.Type

/**
 * What {@link Backend.putSchedule} is given.
 *
 * @since 0.1.0
 * @category schedules
 */
export interface NewSchedule {
  readonly workflowName: string
  readonly name: string
  readonly cron: string
  /** the first tick, used when the schedule is new or its cron changed */
  readonly nextTick: number
  /** epoch milliseconds */
  readonly now: number
}

/**
 * @since 0.1.0
 * @category schedules
 */
export interface ScheduleFilter {
  readonly workflowName?: string | undefined
}

/**
 * The state of an unfinished run, as the run lifecycle names it: `running`
 * (a process holds its lease), `paused` (waiting for a person's answer),
 * `sleeping` (until its `pause.wakeAt`) or `waiting` (for a signal). A
 * paused, sleeping or waiting run is stored as `status: "paused"`: it holds
 * no fiber, no memory and no owner.
 *
 * @since 0.1.0
 * @category runs
 */
export type RunState = "running" | "paused" | "sleeping" | "waiting"

/**
 * The {@link RunState} of an unfinished run.
 *
 * @since 0.1.0
 * @category runs
 */
export const runState = (run: ActiveRun): RunState => RunLifecycle.stateOfActive(run) as RunState

/**
 * Whether a continue may answer the run's pause now: it is paused, or a
 * process of this host that is gone was continuing it from its pause (see
 * {@link ownerGone}; the continue then carries it on).
 *
 * @since 0.1.0
 * @category runs
 */
export const awaitsAnswer = (run: ActiveRun): boolean =>
  run.status === "paused" || (run.pause !== undefined && run.status === "running" && ownerGone(run.owner))

/**
 * What a caller is told of a run id whose run ended (completed, failed,
 * cancelled, abandoned): `RunEnded` with its recorded status and, when it
 * failed, its recorded error. Such a run never runs again under its id.
 *
 * @since 0.1.0
 * @category runs
 */
export const runEnded = (record: RunRecord): WorkflowError.RunEnded =>
  new WorkflowError.RunEnded({
    runId: record.runId,
    sessionId: record.sessionId,
    status: record.status,
    ...(record.error === undefined ? {} : { error: record.error })
  })

/**
 * Whether the process that holds a run's lease (its `owner`, see
 * {@link Service.owner}) is known to be gone: the owner names this host and
 * a process id that no process of this host has (`process.kill(pid, 0)` finds
 * none). Its run may be taken over at once (`Workflow.run` or
 * `Workflow.resume` with its id, `DurableRuns`) instead of after its
 * lease. An owner on another host is never known to be gone: its runs wait
 * for their lease to expire.
 *
 * @since 0.1.0
 * @category runs
 */
export const ownerGone = (owner: string): boolean => owners.gone(owner)

/**
 * Whether an unfinished run was abandoned at `now` (epoch milliseconds): it
 * is running, and its lease expired or its owner is gone (see
 * {@link ownerGone}). Such a run is carried on from its journal by the next
 * run or resume with its id, or by `DurableRuns`.
 *
 * @since 0.1.0
 * @category runs
 */
export const isAbandoned = (run: ActiveRun, now: number): boolean =>
  run.status === "running" && (run.leaseExpiresAt < now || ownerGone(run.owner))

/**
 * A signal sent to an unfinished run (`Workflow.signal`), as the store keeps
 * it until the run ends: its `name`, its `value` (the encoded form its
 * `Step.waitFor` Schema decodes), and its `seq`, 1, 2, … in the order the
 * run's signals were stored.
 *
 * @since 0.1.0
 * @category runs
 */
export const StoredSignal = Schema.Struct({
  runId: Schema.String,
  seq: Schema.Number,
  name: Schema.String,
  value: Schema.Unknown,
  /** epoch milliseconds */
  createdAt: Schema.Number
})

/**
 * @since 0.1.0
 * @category runs
 */
export type StoredSignal = typeof StoredSignal.Type

/**
 * What a store knows of a run id: an unfinished run, or a record in a
 * session's history.
 *
 * @since 0.1.0
 * @category runs
 */
export type RunLookup =
  | { readonly _tag: "Active"; readonly run: ActiveRun }
  | { readonly _tag: "Recorded"; readonly record: RunRecord }

/**
 * What {@link Backend.updateRun} may change.
 *
 * @since 0.1.0
 * @category runs
 */
export interface RunUpdate {
  readonly status?: ActiveStatus | undefined
  readonly owner?: string | undefined
  readonly leaseExpiresAt?: number | undefined
  /** a run that starts over on the session's new state (after a conflict) */
  readonly baseVersion?: number | undefined
  readonly shape?: WorkflowShape | undefined
  /** `null` removes the journal */
  readonly journal?: Journal | null | undefined
  /** `null` removes the pause */
  readonly pause?: Pause | null | undefined
  /** what a continuation carries it on with from now on (e.g. its event log turned on) */
  readonly startedWith?: StartedWith | undefined
}

/**
 * @since 0.1.0
 * @category runs
 */
export interface ActiveFilter {
  readonly sessionId?: string | undefined
  readonly workflowName?: string | undefined
  readonly status?: ActiveStatus | undefined
  /**
   * only paused runs due to wake by this time (epoch milliseconds): their
   * `pause.wakeAt` is at or before it
   */
  readonly dueBy?: number | undefined
}

/**
 * One atomic write to a session.
 *
 * - `state` present: the new state (JSON-serialisable). It is written only if
 *   the stored version still equals `expectedVersion` (0 = the session must
 *   not exist yet), else `SessionConflict`.
 * - `state` absent: the state is left alone (no version check); the session
 *   must exist.
 * - `run` present: the run record is appended to the session's history (a
 *   run that ended never runs again under its id, so there is no earlier
 *   record with its id; one there would be replaced, never kept twice).
 * - `ends` present: the unfinished run with that id, owned by that owner, is
 *   removed in the same write (with its signals); when it is not there (any
 *   more) with that owner, `RunLost` and nothing is written.
 * - A state commit to a session with a paused run (other than `ends`) fails
 *   with `SessionPaused`.
 * - A session owned by a user accepts commits from that user only.
 * - `changes` present (with `state`, on an existing session): the changes
 *   that turn the state at `expectedVersion` into `state` (a workflow with
 *   `persist: "changes"` sends them; a run that does not know the stored state
 *   as it is sends one change that sets the whole state: path `[]`). A
 *   backend may keep them instead of the whole state, so that the write does
 *   not grow with the state; its loads (and watchers) must then see exactly
 *   `state`, and it writes the whole state again when the kept changes
 *   outweigh it. A backend that ignores them writes `state` as usual.
 *
 * @since 0.1.0
 * @category models
 */
export interface Commit {
  readonly sessionId: string
  readonly workflowName: string
  readonly userId?: string | undefined
  readonly expectedVersion: number
  readonly state?: unknown
  readonly changes?: ReadonlyArray<StateChange> | undefined
  readonly run?: RunRecord | undefined
  readonly ends?: { readonly runId: string; readonly owner: string } | undefined
  /**
   * How many versions of the session the store keeps (see
   * {@link HistoryOptions}); default: the store's own (`history` option),
   * else {@link defaultHistory}
   */
  readonly history?: HistoryOptions | undefined
}

/**
 * Where a page of a session listing ends: its last session's `updatedAt`
 * and id. The next page is the sessions after it in the listing's order, so
 * pages hold still while sessions are added or updated.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionCursor {
  readonly updatedAt: number
  readonly sessionId: string
}

/**
 * The key a cursor of a paged listing names: its last item's number (a
 * session's `updatedAt`, a run's `startedAt`) and id.
 *
 * @since 0.1.0
 * @category models
 */
export type CursorKey = readonly [number, string]

/**
 * A cursor for clients (HTTP's `next`, the CLI's `--after`): `key`, opaque
 * (base64url of its JSON).
 *
 * @since 0.1.0
 * @category models
 */
export const encodeCursor = (key: CursorKey): string => Encoding.encodeBase64Url(JSON.stringify(key))

const isId = Schema.is(Id)

/**
 * The key a cursor made by {@link encodeCursor} names; none for any other
 * text.
 *
 * @since 0.1.0
 * @category models
 */
export const decodeCursor = (cursor: string): Option.Option<CursorKey> => {
  const text = Encoding.decodeBase64UrlString(cursor)
  if (text._tag === "Left") return Option.none()
  try {
    const key = JSON.parse(text.right) as unknown
    return Array.isArray(key) && key.length === 2 && Number.isSafeInteger(key[0]) && typeof key[1] === "string" &&
        isId(key[1])
      ? Option.some([key[0] as number, key[1]])
      : Option.none()
  } catch {
    return Option.none()
  }
}

/**
 * Which sessions a listing reads, in its order (most recently updated first,
 * ties by session id in code point order), a page at a time with `limit`
 * and `after`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ListFilter {
  readonly workflowName?: string | undefined
  /** only this user's sessions; `null`: only the sessions without an owner */
  readonly userId?: string | null | undefined
  /** only sessions updated at or after this time (epoch milliseconds) */
  readonly updatedSince?: number | undefined
  /**
   * only sessions whose id or name contains this text, the letters A to Z
   * matched in either case (any other character as it is: the same on every
   * store)
   */
  readonly search?: string | undefined
  /** only the sessions after this one in the listing's order (the `next` of the page before) */
  readonly after?: SessionCursor | undefined
  /** at most this many rows (sessions and broken ones); the listing's `next` then says where the rest starts */
  readonly limit?: number | undefined
}

/**
 * Text with the letters A to Z made lower case, and nothing else changed: how
 * a listing's `search` and what it looks in are compared (a store's database
 * does the same in its query).
 *
 * @since 0.1.0
 * @category models
 */
export const foldSearch: (text: string) => string = rules.foldSearch

/**
 * A session a store cannot read (e.g. a row whose version is not a number),
 * reported by {@link Backend.list} instead of failing the whole listing.
 *
 * @since 0.1.0
 * @category models
 */
export interface BrokenSession {
  readonly sessionId: string
  readonly error: WorkflowError.SessionStoreError
}

/**
 * The sessions a listing found: the readable ones, most recently updated
 * first, and the broken ones; with a `limit` that cut the listing short,
 * `next`, where the rest starts.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionListing {
  readonly sessions: ReadonlyArray<SessionInfo>
  readonly broken: ReadonlyArray<BrokenSession>
  readonly next?: SessionCursor | undefined
}

/**
 * Where a page of a run listing ends: its last run's `startedAt` and id.
 *
 * @since 0.1.0
 * @category runs
 */
export interface RunCursor {
  readonly startedAt: number
  readonly runId: string
}

/**
 * Which runs {@link Backend.listRuns} reads: unfinished and recorded ones
 * together, most recently started first, ties by run id in code point order,
 * a page at a time with `limit` and `after`.
 *
 * @since 0.1.0
 * @category runs
 */
export interface RunListFilter {
  readonly workflowName?: string | undefined
  /** only this user's runs (the run's `userId`); `null`: only runs without a user */
  readonly userId?: string | null | undefined
  readonly sessionId?: string | undefined
  /** only runs with this status: an unfinished one's (`running`, `paused`) or a record's */
  readonly status?: ActiveStatus | RunStatus | undefined
  /** only the runs after this one in the listing's order (the `next` of the page before) */
  readonly after?: RunCursor | undefined
  /** at most this many runs; the listing's `next` then says where the rest starts */
  readonly limit?: number | undefined
}

/**
 * A page of runs: each as {@link Backend.getRun} gives it (a run id is
 * unfinished or recorded, never both: a run that ended never starts again);
 * with a `limit` that cut the listing short, `next`.
 *
 * @since 0.1.0
 * @category runs
 */
export interface RunListing {
  readonly runs: ReadonlyArray<RunLookup>
  readonly next?: RunCursor | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RunsOptions {
  /** only the most recent `limit` runs (still oldest first), counted after the `status` filter */
  readonly limit?: number | undefined
  /** only runs with this status */
  readonly status?: RunStatus | undefined
}

/**
 * One exchange of a conversation: a completed run's input and output.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChatTurn {
  readonly runId: string
  /** the run's input, as stored */
  readonly input: unknown
  /** the run's content (its last step's output), as stored */
  readonly output: unknown
  /** epoch milliseconds */
  readonly completedAt: number
}

/**
 * The conversation of a session so far: its completed runs' inputs and
 * outputs, oldest first; `lastRuns` keeps only the most recent ones (failed
 * and cancelled runs are left out before counting).
 *
 * @since 0.1.0
 * @category history
 */
export const chatHistory = (
  store: Backend,
  sessionId: string,
  options?: { readonly lastRuns?: number | undefined }
): Effect.Effect<ReadonlyArray<ChatTurn>, WorkflowError.SessionStoreError> =>
  options?.lastRuns !== undefined && options.lastRuns <= 0
    ? Effect.succeed([])
    : Effect.map(
      store.runs(sessionId, { status: "completed", limit: options?.lastRuns }),
      (runs) =>
        runs.map((run) => ({ runId: run.runId, input: run.input, output: run.content, completedAt: run.completedAt }))
    )

// -----------------------------------------------------------------------------
// versions
// -----------------------------------------------------------------------------

/**
 * How many committed versions of a session a store keeps, to read the state
 * as it was at one of them or to fork the session from it: `"none"`, `"all"`,
 * or the last N (a whole number from 1). A store keeps each version as the
 * changes from the version before (so its cost grows with what a commit
 * changed, not with the state), and the whole state now and then: at the
 * session's first kept version, when the changes since the last whole state
 * outweigh it, and at least once every N versions, so that dropping the
 * versions older than the last N never needs more than the rows kept. A
 * session keeps at most 2N rows, one whole state among the newest N.
 *
 * @since 0.1.0
 * @category versions
 */
export type HistoryKeep = "none" | "all" | number

/**
 * @since 0.1.0
 * @category versions
 */
export interface HistoryOptions {
  readonly keep: HistoryKeep
}

/**
 * The history a store keeps when neither the workflow nor the store says:
 * the last 20 versions of each session. Its cost: per commit, one row with the
 * changes the commit made (a commit that sends its whole state, `persist:
 * "state"`, is compared with the version before it, which the store reads
 * first), and about one whole state per 20 commits; so a session holds at
 * most two whole states and the changes of its last 40 commits.
 *
 * @since 0.1.0
 * @category versions
 */
export const defaultHistory: HistoryOptions = rules.defaultHistory

/**
 * The number of versions to keep (`Infinity` for all, 0 for none): a number
 * below 1 keeps none, a fraction is rounded down, `NaN` is the default.
 *
 * @since 0.1.0
 * @category versions
 */
export const keptVersions: (history: HistoryOptions | undefined) => number = rules.keptVersions

/**
 * A kept version of a session: the run whose commit made it (undefined for a
 * change outside a run, or the session's creation by a run that did not
 * complete), when, and a summary of the change: the top-level keys of the
 * state it changed (undefined when the store cannot tell: the whole state
 * was replaced by one that is not an object, or the version before is not kept).
 *
 * @since 0.1.0
 * @category versions
 */
export const VersionInfo = Schema.Struct({
  version: Schema.Number,
  runId: Schema.optional(Schema.String),
  /** epoch milliseconds */
  committedAt: Schema.Number,
  changed: Schema.optional(Schema.Array(Schema.String))
}).annotations({ identifier: "VersionInfo" })

/**
 * @since 0.1.0
 * @category versions
 */
export type VersionInfo = typeof VersionInfo.Type

/**
 * A new session made from a kept version of another one (see
 * {@link Backend.fork}).
 *
 * @since 0.1.0
 * @category versions
 */
export interface ForkRequest {
  readonly sessionId: string
  readonly version: number
  readonly newSessionId: string
  /** the new session's owner */
  readonly userId?: string | undefined
}

/**
 * The changes from one state to another as a store keeps them for a version
 * (without the values they replace).
 *
 * @since 0.1.0
 * @category versions
 */
export const diffStates: (prev: unknown, next: unknown) => ReadonlyArray<StateChange> = rules.diffStates

/**
 * The summary of a version: the top-level keys its changes touch, in the
 * order they first appear; undefined when a change replaces the whole state.
 *
 * @since 0.1.0
 * @category versions
 */
export const changedKeys: (changes: ReadonlyArray<StateChange>) => ReadonlyArray<string> | undefined = rules.changedKeys

/**
 * `VersionNotFound` for a version a session (now at `latest`) does not keep:
 * `missing` when it was never committed, else `not-kept`.
 *
 * @since 0.1.0
 * @category versions
 */
export const versionNotFound: (sessionId: string, version: number, latest: number) => WorkflowError.VersionNotFound =
  rules.versionNotFound

/**
 * Whether a version row holding changes should hold the whole state
 * instead: the changes since the last whole state (`pendingSize` characters
 * over `pendingCount` versions, this one's `size` not included) would
 * outweigh it (`baseSize`), or the rows since it reach the number kept, or
 * the changes replace the whole state.
 *
 * @since 0.1.0
 * @category versions
 */
export const versionNeedsWholeState = (options: {
  readonly keep: number
  readonly baseSize: number
  readonly pendingSize: number
  readonly pendingCount: number
  readonly size: number
  readonly changes: ReadonlyArray<StateChange>
}): boolean =>
  options.changes.some((change) => change.path.length === 0) ||
  options.pendingCount + 1 >= options.keep ||
  options.pendingSize + options.size > Math.max(options.baseSize, 256)

// -----------------------------------------------------------------------------
// watching
// -----------------------------------------------------------------------------

/**
 * A committed change to a session, as a watcher sees it.
 *
 * @since 0.1.0
 * @category watching
 */
export interface SessionChange {
  readonly sessionId: string
  readonly workflowName: string
  /** the version after the commit (strictly increasing along one watch stream) */
  readonly version: number
  /**
   * How many committed versions this change stands for besides its own: the
   * versions committed after the stream's previous change (or after it
   * started, for its first change) that it did not emit, because they were
   * committed before the store read the session. 0 for the starting point and
   * whenever no version was coalesced; so `version - skipped - 1` is the
   * previous version the stream emitted (0 before the first).
   */
  readonly skipped: number
  /** the committed state (parsed JSON, not decoded) */
  readonly state: unknown
  /** the run whose commit made this version; undefined for a state change outside a run (updateSessionState) */
  readonly runId: string | undefined
  /** epoch milliseconds */
  readonly updatedAt: number
}

/**
 * @since 0.1.0
 * @category watching
 */
export interface WatchOptions {
  /**
   * how often a polling backend (SQLite) reads the version (default 250
   * millis); PostgreSQL, told of commits, reads this often too as a safety net
   * (default 5 seconds); the memory backend ignores it
   */
  readonly pollInterval?: Duration.DurationInput | undefined
}

/**
 * How often a polling backend reads a watched session's version when no
 * `pollInterval` is given.
 *
 * @since 0.1.0
 * @category watching
 */
export const defaultPollInterval: Duration.DurationInput = "250 millis"

/**
 * @since 0.1.0
 * @category models
 */
export interface LoadOptions {
  /**
   * A version of the session whose state the caller already has: when the
   * stored version is still this one, the backend may skip reading and
   * parsing the state and answer with `unchanged: true` (a backend that
   * ignores it returns the state as usual).
   */
  readonly knownVersion?: number | undefined
}

// -----------------------------------------------------------------------------
// event logs
// -----------------------------------------------------------------------------

/**
 * How much of a run's event log a store keeps: at most `maxEvents` events per
 * run (the oldest are dropped beyond it), and a run's events for `keepFor`
 * milliseconds after the run ended (its `RunCompleted`, `RunFailed` or
 * `RunCancelled` was stored; a paused run keeps its events until it ends).
 * The writer of a log gives it with every append; a store removes what is
 * past it when a run's log grows past `maxEvents` and when a run ends.
 *
 * @since 0.1.0
 * @category event logs
 */
export interface EventRetention {
  readonly maxEvents: number
  /** milliseconds */
  readonly keepFor: number
}

/**
 * The retention of event logs when a run is given none: 10,000 events per
 * run, kept for an hour after the run ended.
 *
 * @since 0.1.0
 * @category event logs
 */
export const defaultEventRetention: EventRetention = rules.defaultEventRetention

/**
 * @since 0.1.0
 * @category event logs
 */
export interface ReadEventsOptions {
  /** only events with a greater `seq` (default: from the first kept event) */
  readonly after?: number | undefined
  /** at most this many events (default 1,000) */
  readonly limit?: number | undefined
  /** the last `limit` events (still in order) instead of the first */
  readonly latest?: boolean | undefined
}

/**
 * The events that end a run's log: `RunCompleted`, `RunFailed`,
 * `RunCancelled` at the run's top level (`RunPaused` ends the run's stream,
 * not its log: a continue appends after it).
 *
 * @since 0.1.0
 * @category event logs
 */
export const isFinalEvent: (event: WorkflowEvent.WorkflowEvent) => boolean = rules.isFinalEvent

/**
 * An event as a store keeps it: JSON text of its `WorkflowEvent` encoding.
 * An event that does not fit the Schema, or holds a value JSON cannot say, is
 * a `SessionStoreError`.
 *
 * @since 0.1.0
 * @category event logs
 */
export const encodeEvent: (
  event: WorkflowEvent.WorkflowEvent
) => Effect.Effect<string, WorkflowError.SessionStoreError> = rules.encodeEvent

/**
 * A stored event's JSON text, decoded with the `WorkflowEvent` Schema; a row
 * that does not decode is a `SessionStoreError`.
 *
 * @since 0.1.0
 * @category event logs
 */
export const decodeEvent: (
  runId: string,
  text: unknown
) => Effect.Effect<WorkflowEvent.WorkflowEvent, WorkflowError.SessionStoreError> = rules.decodeEvent

// -----------------------------------------------------------------------------
// pruning
// -----------------------------------------------------------------------------

/**
 * What {@link Backend.prune} removes: the run records (with their stored
 * events) of a workflow's sessions (or of one session) that ended before
 * `endedBefore`, or that are beyond the `keepLast` most recent records of
 * their session — a record either rule names goes. Without either rule,
 * nothing is removed. Sessions, their states and unfinished runs stay.
 *
 * @since 0.1.0
 * @category pruning
 */
export interface PruneRequest {
  readonly workflowName?: string | undefined
  readonly sessionId?: string | undefined
  /** epoch milliseconds: records of runs that ended (`completedAt`) before it go */
  readonly endedBefore?: number | undefined
  /** each session keeps its most recent `keepLast` records (0: none) */
  readonly keepLast?: number | undefined
}

/**
 * What a prune removed, by kind of row. A store that keeps more kinds of
 * history may prune them with the same request and say so in more fields.
 *
 * @since 0.1.0
 * @category pruning
 */
export interface PruneResult {
  /** run records */
  readonly runs: number
  /** stored events of those runs */
  readonly events: number
}

/**
 * How many run records a session keeps when its store is given no
 * `keepRuns`: the 1,000 most recent. A store removes the older ones (with
 * their stored events) at every {@link keepRunsEvery}th state commit of the
 * session (its version a multiple of it), in one indexed `DELETE` of the
 * session's oldest records: so a session holds at most 1,000 records plus
 * those of the runs since its last such commit (99 completed runs, and any
 * failed or cancelled ones, which commit no state). `Workflow.prune` removes
 * more, by age or count.
 *
 * @since 0.1.0
 * @category pruning
 */
export const defaultKeepRuns: 1000 = rules.defaultKeepRuns

/**
 * How often (in state commits of a session) a store trims the session's
 * records to its `keepRuns`.
 *
 * @since 0.1.0
 * @category pruning
 */
export const keepRunsEvery: 100 = rules.keepRunsEvery

/**
 * Whether a state commit that made `version` of a session trims its records
 * to `keepRuns` (a number; `"all"` never trims).
 *
 * @since 0.1.0
 * @category pruning
 */
export const trimsAt: (keepRuns: number | "all", version: number) => boolean = rules.trimsAt

/**
 * A store's `keepRuns` option checked: a whole number from 1, or `"all"`
 * (default {@link defaultKeepRuns}); anything else is a `SessionStoreError`.
 *
 * @since 0.1.0
 * @category pruning
 */
export const checkKeepRuns: (
  method: string,
  keepRuns: number | "all" | undefined
) => Effect.Effect<number | "all", WorkflowError.SessionStoreError> = rules.checkKeepRuns

/**
 * The primitives a backend implements.
 *
 * @since 0.1.0
 * @category models
 */
export interface Backend {
  /**
   * None when the session does not exist; `StateDecodeError` (corrupt) when its
   * state is not JSON. With `knownVersion` (see {@link LoadOptions}), a session
   * at that version comes back without its state, `unchanged: true`.
   */
  readonly load: (
    sessionId: string,
    options?: LoadOptions | undefined
  ) => Effect.Effect<Option.Option<StoredSession>, WorkflowError.SessionStoreError | StateDecodeError>
  /** What the store knows of a session without its state (its state is not read, so a corrupt one does not matter). */
  readonly info: (sessionId: string) => Effect.Effect<Option.Option<SessionInfo>, WorkflowError.SessionStoreError>
  /**
   * A session, or, when it is not stored yet, the unfinished runs on its id,
   * in one read: what a run's admission checks (a session's owner, a new
   * session's first run, a paused run holding either, a run running on it)
   * need before the run starts. A stored session is as `load` reads it with
   * the same options (its `pausedRunId` included), and its `running` runs;
   * with `state: false` its state is not read.
   */
  readonly findSession: (
    sessionId: string,
    options?: FindSessionOptions | undefined
  ) => Effect.Effect<SessionFound, WorkflowError.SessionStoreError | StateDecodeError>
  /** Returns the session's version after the commit. */
  readonly commit: (
    commit: Commit
  ) => Effect.Effect<
    number,
    | WorkflowError.SessionStoreError
    | SessionConflict
    | SessionOwnershipError
    | WorkflowError.SessionNotFound
    | WorkflowError.SessionPaused
    | WorkflowError.RunLost
  >
  /**
   * Registers a run that starts, unless a run with its id is unfinished or
   * has ended (completed, failed, cancelled, abandoned: a run that ended
   * never runs again under its id): then nothing is written and that run is
   * returned. A run id outside {@link Id} is `InvalidRunId` (checked by
   * {@link make} for every backend).
   */
  readonly startRun: (
    run: ActiveRun
  ) => Effect.Effect<Option.Option<RunLookup>, WorkflowError.SessionStoreError | WorkflowError.InvalidRunId>
  /** The unfinished run with this id, else its record, else none. */
  readonly getRun: (runId: string) => Effect.Effect<Option.Option<RunLookup>, WorkflowError.SessionStoreError>
  /**
   * Changes an unfinished run owned by `owner` (its lease, journal, pause,
   * status or owner; its base version and shape when it starts over after a
   * conflict). `RunLost` when it is not there (any more) with that
   * owner: another process took it over, or it was cancelled.
   */
  readonly updateRun: (
    runId: string,
    owner: string,
    update: RunUpdate
  ) => Effect.Effect<void, WorkflowError.SessionStoreError | WorkflowError.RunLost>
  /**
   * Takes over an unfinished run that is paused, or running with a lease that
   * expired before `now`: it becomes `running`, owned by `owner` until
   * `leaseExpiresAt`, in one conditional write. Exactly one of several
   * concurrent claims wins; the others fail with `RunInProgress`. With
   * `pause` (a continue answering that pause), only a run paused at exactly
   * that pause (its `key`) is taken: a run paused elsewhere, or abandoned
   * while running, fails with `PauseMismatch` and is left as it is.
   * With `from`, a running run still owned by `from` is taken whatever its
   * lease (its owner is known to be gone, see {@link ownerGone}); with `pause`
   * too, only while its pause (the one the gone owner was continuing from) is
   * that pause: of several claims from the same owner one wins, the others
   * find the new owner's lease. `RunNotFound` when there is no such run.
   */
  readonly claimRun: (
    runId: string,
    claim: {
      readonly owner: string
      readonly now: number
      readonly leaseExpiresAt: number
      readonly pause?: string | undefined
      /** the run's current owner, known to be gone: taken even while its lease lasts */
      readonly from?: string | undefined
    }
  ) => Effect.Effect<
    ActiveRun,
    | WorkflowError.SessionStoreError
    | WorkflowError.RunInProgress
    | WorkflowError.RunNotFound
    | WorkflowError.PauseMismatch
  >
  /**
   * Stores a signal for the unfinished run `runId` (see {@link StoredSignal}),
   * under the next `seq` of the run's signals, which it returns. `RunNotFound`
   * when no unfinished run has this id (a run that ended takes no signal).
   */
  readonly addSignal: (
    runId: string,
    name: string,
    value: unknown
  ) => Effect.Effect<number, WorkflowError.SessionStoreError | WorkflowError.RunNotFound>
  /** The signals stored for a run (only those named `name`, when given), by `seq`. */
  readonly signals: (
    runId: string,
    options?: { readonly name?: string | undefined }
  ) => Effect.Effect<ReadonlyArray<StoredSignal>, WorkflowError.SessionStoreError>
  /** Unfinished runs, oldest first. */
  readonly activeRuns: (
    filter: ActiveFilter
  ) => Effect.Effect<ReadonlyArray<ActiveRun>, WorkflowError.SessionStoreError>
  /**
   * Ends an unfinished run without changing the session's state: removes it
   * and appends `record` (cancelled, abandoned, error) to the session's
   * history (creating the session with the run's `initialState` when it does
   * not exist yet), and its signals with it. With `owner`, only if the run is still that owner's
   * (`RunLost` otherwise); without, whoever runs it. `RunNotFound` when there is
   * no such run.
   */
  readonly endRun: (
    runId: string,
    record: RunRecord,
    owner?: string | undefined
  ) => Effect.Effect<void, WorkflowError.SessionStoreError | WorkflowError.RunLost | WorkflowError.RunNotFound>
  /**
   * Most recently updated first, ties by session id (code point order); rows
   * that cannot be read are listed apart, in `broken`. With `limit`, at most
   * that many rows are read, and `next` is set when more follow; `after`
   * starts after a session (keyset paging: a page reads only its rows).
   */
  readonly list: (filter: ListFilter) => Effect.Effect<SessionListing, WorkflowError.SessionStoreError>
  /** The session, its name and its history; false when it did not exist. */
  readonly remove: (sessionId: string) => Effect.Effect<boolean, WorkflowError.SessionStoreError>
  readonly setName: (
    sessionId: string,
    name: string
  ) => Effect.Effect<void, WorkflowError.SessionStoreError | WorkflowError.SessionNotFound>
  /**
   * A page of a workflow's runs, unfinished and recorded, most recently
   * started first (see {@link RunListFilter}); reads only the page's rows.
   */
  readonly listRuns: (filter: RunListFilter) => Effect.Effect<RunListing, WorkflowError.SessionStoreError>
  /** Oldest first. */
  readonly runs: (
    sessionId: string,
    options: RunsOptions
  ) => Effect.Effect<ReadonlyArray<RunRecord>, WorkflowError.SessionStoreError>
  /**
   * The kept versions of a session (see {@link HistoryOptions}), oldest
   * first; none for a session that does not exist or keeps none.
   */
  readonly versions: (sessionId: string) => Effect.Effect<ReadonlyArray<VersionInfo>, WorkflowError.SessionStoreError>
  /**
   * The state (parsed JSON, not decoded) of a session as committed at a
   * kept version; none when the version is not kept (or never was).
   */
  readonly loadVersion: (
    sessionId: string,
    version: number
  ) => Effect.Effect<Option.Option<unknown>, WorkflowError.SessionStoreError | StateDecodeError>
  /**
   * Creates a session from a kept version of another, in one write: its
   * state is the state at that version, its version that version, its
   * workflow the other's, and its kept versions the other's up to that one
   * (so its history starts where the other's was); no run record is copied.
   * `SessionNotFound` when the session does not exist, `VersionNotFound`
   * when the version is not kept, `SessionExists` when the new id is taken.
   * Returns what the store knows of the new session.
   */
  readonly fork: (
    request: ForkRequest
  ) => Effect.Effect<
    SessionInfo,
    | WorkflowError.SessionStoreError
    | WorkflowError.SessionNotFound
    | WorkflowError.VersionNotFound
    | WorkflowError.SessionExists
    | StateDecodeError
  >
  /**
   * The committed changes to a session, from this store and from every other
   * store over the same database (another process).
   *
   * - The stream first emits the session's current version when the session
   *   exists (a starting point), then the later committed versions, in order:
   *   versions are strictly increasing, and a watcher is never silently
   *   behind. Several commits that land before the store reads the session
   *   arrive as one change, the latest, whose `skipped` says how many
   *   versions it coalesced (the same rule on every store: the memory store
   *   never coalesces, SQLite may between two polls, PostgreSQL when commits
   *   come faster than its reads); the latest committed version always
   *   arrives.
   * - A session that does not exist yet emits nothing until it is created:
   *   its first commit arrives as version 1. (A session created by a first
   *   run that failed or was cancelled arrives as version 1 with its initial
   *   state and no `runId`.)
   * - Commits that do not change the state (a run record without a state,
   *   `setName`) emit nothing; neither does `remove`. A session removed and
   *   created again is reported again only from a version above the last one
   *   the stream emitted.
   * - `runId` is the run whose commit made the version, undefined for a state
   *   change outside a run.
   * - A stored state that is not JSON fails the stream with `StateDecodeError`.
   * - The stream never ends by itself: interrupt it.
   *
   * The memory backend publishes each commit to its watchers as it happens;
   * the SQLite backend reads the session's version every `pollInterval`
   * (default {@link defaultPollInterval}) and loads the session only when the
   * version changed; it fails with `SessionStoreError` at once for a
   * `pollInterval` that is not a positive, finite duration. The PostgreSQL
   * backend (`@sessionflow/store-pg`) is notified of each commit
   * (`LISTEN`/`NOTIFY`) and reads the session then; when its listening
   * connection is lost it listens again on a new one and reads the session
   * (so the versions committed meanwhile arrive, coalesced), and fails with
   * `SessionStoreError` only when it cannot listen again within its
   * `relistenTimeout` (default 30 seconds).
   */
  readonly watch: (
    sessionId: string,
    options?: WatchOptions
  ) => Stream.Stream<SessionChange, WorkflowError.SessionStoreError | StateDecodeError>
  /**
   * Appends events to a run's log, in one write: their `seq`s follow the
   * ones stored (an event whose run and `seq` are stored already replaces
   * nothing and is dropped). A log ends with its terminal event (see
   * {@link isFinalEvent}): nothing is appended after it, and of two terminal
   * events written at once one is kept. Then removes what is past `retention`: the
   * run's oldest events beyond `maxEvents`, and, when the batch ends the run
   * (see {@link isFinalEvent}), the logs of runs that ended more than
   * `keepFor` ago. Readers following the run are told (see `watchEvents`).
   */
  readonly appendEvents: (
    runId: string,
    events: ReadonlyArray<WorkflowEvent.WorkflowEvent>,
    retention: EventRetention
  ) => Effect.Effect<void, WorkflowError.SessionStoreError>
  /** A run's stored events with a `seq` above `after`, in order, at most `limit`. */
  readonly readEvents: (
    runId: string,
    options?: ReadEventsOptions
  ) => Effect.Effect<ReadonlyArray<WorkflowEvent.WorkflowEvent>, WorkflowError.SessionStoreError>
  /**
   * Wake-ups for a reader following a run's log: one as soon as the store
   * listens (the reader reads then), then one whenever events of the run may
   * have been appended, by this store or another over the same database. A
   * wake-up may find nothing new; after every append there is one. The memory
   * backend is told of each append; the SQLite backend wakes every
   * `pollInterval` (default {@link defaultPollInterval}); PostgreSQL is
   * notified (`LISTEN`/`NOTIFY`) and also wakes every `pollInterval`
   * (default 5 seconds) as a safety net. Never ends by itself.
   */
  readonly watchEvents: (
    runId: string,
    options?: WatchOptions
  ) => Stream.Stream<void, WorkflowError.SessionStoreError>
  /**
   * Removes run records and their stored events, as the request says (see
   * {@link PruneRequest}), in batches (a prune of many rows does not hold a
   * lock for long); returns how many rows of each kind went.
   */
  readonly prune: (request: PruneRequest) => Effect.Effect<PruneResult, WorkflowError.SessionStoreError>
  /**
   * Puts a run at the end of its session's queue, `waiting`; returns its
   * ticket (larger than every ticket given before by this store's database).
   * A run id already queued is a `SessionStoreError`.
   */
  readonly enqueueRun: (run: NewQueuedRun) => Effect.Effect<number, WorkflowError.SessionStoreError>
  /**
   * One look at a session's queue by the caller of a queued run, in one
   * atomic write: renews the run's lease (`leaseExpiresAt`) if it is still
   * queued on `sessionId` with `owner` (else `"lost"`); drops the session's
   * entries whose lease expired before `now` — but a background run's (with
   * `carry`) that never started, which waits to be taken over (see
   * {@link adoptQueued}) — each that never started
   * recorded as `abandoned` on its session when the session exists (a
   * session is not created for it: that would move a first run running on
   * it); then gives the run its
   * turn (`running`) when no other entry of the session is running, none was
   * queued before it, and no other unfinished run of the session (running,
   * abandoned, paused) holds it (`"taken"`, also when it had its turn
   * already), else `"waiting"`. Of several callers at once, at most one
   * entry of a session is running.
   */
  readonly takeQueueTurn: (
    sessionId: string,
    runId: string,
    turn: { readonly owner: string; readonly now: number; readonly leaseExpiresAt: number }
  ) => Effect.Effect<QueueTurn, WorkflowError.SessionStoreError>
  /**
   * Removes a run from its session's queue (with `owner`: only while it is
   * that owner's); whether it was there. With `ended`, the run's record is
   * written in the same write when it was there and never started, on its
   * session if it exists (as a dropped entry's is, see {@link takeQueueTurn}).
   * Callers waiting in the session's queue are woken
   * (see {@link watchQueue}).
   */
  readonly leaveQueue: (
    sessionId: string,
    runId: string,
    owner?: string | undefined,
    ended?: RunRecord | undefined
  ) => Effect.Effect<boolean, WorkflowError.SessionStoreError>
  /**
   * Takes over a queued background run (one with `carry`) whose caller
   * stopped, in one conditional write: only while it is still `from`'s and
   * that caller's lease expired before `now` (or, with `gone`, whatever its
   * lease: `from` is known to be gone), it becomes `owner`'s until
   * `leaseExpiresAt`, keeping its place; the run as taken over, or none when
   * another took it first, it left, or it is no background run.
   */
  readonly adoptQueued: (
    sessionId: string,
    runId: string,
    adopt: {
      readonly from: string
      readonly owner: string
      readonly now: number
      readonly leaseExpiresAt: number
      readonly gone?: boolean | undefined
    }
  ) => Effect.Effect<Option.Option<QueuedRun>, WorkflowError.SessionStoreError>
  /** The queued runs (waiting and running), in ticket order (arrival order). */
  readonly queuedRuns: (filter: QueueFilter) => Effect.Effect<ReadonlyArray<QueuedRun>, WorkflowError.SessionStoreError>
  /**
   * Wake-ups for the callers waiting in a session's queue: one as soon as the
   * store listens, then one whenever a run may have left it (the memory backend is told at once; PostgreSQL is
   * notified, and also wakes every `pollInterval`, default 5 seconds; SQLite
   * wakes every `pollInterval`, default 250 millis). A wake-up may find
   * nothing changed. Never ends by itself.
   */
  readonly watchQueue: (
    sessionId: string,
    options?: WatchOptions
  ) => Stream.Stream<void, WorkflowError.SessionStoreError>
  /**
   * Stores a schedule if the store has none of that workflow and name, or
   * replaces it when its cron expression changed (its next tick then the
   * given one); a schedule stored with the same cron is left as it is (its
   * next tick, possibly past, kept). Returns the schedule as stored.
   */
  readonly putSchedule: (schedule: NewSchedule) => Effect.Effect<StoredSchedule, WorkflowError.SessionStoreError>
  /**
   * Claims a schedule's tick, in one conditional write: moves its next tick
   * from `tick` to `next` (and records `now` as when it fired) only if it is
   * still `tick`; whether it did. Of several callers claiming one tick, exactly
   * one gets `true`.
   */
  readonly claimScheduleTick: (
    workflowName: string,
    name: string,
    claim: { readonly tick: number; readonly next: number; readonly now: number }
  ) => Effect.Effect<boolean, WorkflowError.SessionStoreError>
  /** The stored schedules, by workflow name then name. */
  readonly schedules: (
    filter: ScheduleFilter
  ) => Effect.Effect<ReadonlyArray<StoredSchedule>, WorkflowError.SessionStoreError>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Service extends Backend {
  /**
   * Who this store is, as an owner of runs (unique per store instance, so two
   * stores over one database act like two processes): `<host>:<pid>:<uuid>`,
   * naming its host and process so that a process of the same host can tell
   * when it is gone (see {@link ownerGone}).
   */
  readonly owner: string
  /**
   * Runs `self` while holding this process's lock on the session, so runs on
   * one session in one process happen one after the other. Taking the lock
   * again from inside `self` (a step running its own session) is a defect
   * with a clear message, not a deadlock.
   */
  readonly withSessionLock: (
    sessionId: string
  ) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class SessionStore extends Context.Tag("@sessionflow/core/SessionStore")<SessionStore, Service>() {}

/**
 * A session read ahead (see {@link readSession}): what was found, and `ahead`,
 * which runs an effect whose first `findSession` of the session on this
 * store that the read answers is given it instead of reading the store.
 *
 * @since 0.1.0
 * @category reading
 */
export interface SessionRead {
  readonly found: SessionFound
  readonly ahead: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

interface ReadAhead {
  readonly reader: Service["findSession"]
  readonly sessionId: string
  readonly found: SessionFound
  /** whether the read was made without the state (`state: false`) */
  readonly withoutState: boolean
  used: boolean
}

/** The read ahead of the effect running, if any (shared by the fibers it forks: it answers once). */
const readAhead = FiberRef.unsafeMake<ReadAhead | undefined>(undefined)

/**
 * Whether a read ahead is what the store would answer `findSession(sessionId,
 * options)` with: a new session's read answers any call; a stored session's
 * read without its state answers a call without it, or one that knows its
 * version (the store would answer `unchanged`, without the state); a stored
 * session's read with its state, none (its options are not kept).
 */
const answers = (ahead: ReadAhead, sessionId: string, options: FindSessionOptions | undefined): boolean => {
  if (ahead.used || ahead.sessionId !== sessionId) return false
  if (ahead.found._tag === "New") return true
  if (!ahead.withoutState) return false
  return options?.state === false || options?.knownVersion === ahead.found.session.version
}

/**
 * Reads a session (`findSession`) for a caller that checks it before running
 * an effect on it — a server's admission checks before a run — and gives the
 * read to that effect: the first `findSession` of the session inside
 * `read.ahead(effect)`, on the same store, is answered with it when the read
 * is what the store would answer (a new session's read answers any call; a
 * stored session's read without its state, a call without it or one that
 * knows its version, as a run starting from a cached state does). So the run
 * does not read the session again. Later calls, and calls the read does not
 * answer, read the store; so does a run that waits for the session's lock
 * (another run of it in this process: the session may change meanwhile), and
 * one whose commit finds the session changed since (a conflict) when it tries
 * again. Give it only to an effect that reads the session at once: not to a
 * run that waits in the session's queue (`onBusy: "enqueue"`) or cancels the
 * runs on it first (`"interrupt"`).
 *
 * @since 0.1.0
 * @category reading
 */
export const readSession = (
  store: Service,
  sessionId: string,
  options?: FindSessionOptions | undefined
): Effect.Effect<SessionRead, WorkflowError.SessionStoreError | StateDecodeError> =>
  Effect.map(store.findSession(sessionId, options), (found): SessionRead => ({
    found,
    ahead: (effect) =>
      Effect.locally(effect, readAhead, {
        reader: store.findSession,
        sessionId,
        found,
        withoutState: options?.state === false,
        used: false
      })
  }))

/**
 * Builds a store from a backend's primitives, adding per-session
 * serialisation within the process, and the one rule of ids for every
 * backend: a session or run id outside {@link Id} (NUL, a lone surrogate,
 * more than {@link maxIdLength} characters) is refused by a write or a watch
 * with `SessionStoreError` (a run registered under a bad run id with
 * `InvalidRunId`) and found by no read, so no store keeps an id it would not
 * give back exactly.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (primitives: Backend): Service => {
  const backend = idGuard.guard(primitives)
  // this store's `findSession`: a read ahead made through it (see `readSession`) answers it
  const findSession: Service["findSession"] = (sessionId, options) =>
    Effect.flatMap(FiberRef.get(readAhead), (ahead) => {
      if (ahead === undefined || ahead.reader !== findSession || !answers(ahead, sessionId, options)) {
        return backend.findSession(sessionId, options)
      }
      ahead.used = true
      return Effect.succeed(ahead.found)
    })
  const locks = new Map<string, SessionLock>()
  // the sessions whose lock the current fiber (or one of its ancestors) holds,
  // innermost first: taking such a lock again would wait for ever, so it is
  // refused instead
  const held = FiberRef.unsafeMake<HeldLocks | undefined>(undefined)
  // the runs this store appended events to, for its own readers: they learn of
  // them at once, whatever the backend's own wake-ups (a SQLite poll)
  const appended = Effect.runSync(PubSub.unbounded<string>())
  // the sessions whose queue this store changed, for its own waiting callers
  const dequeued = Effect.runSync(PubSub.unbounded<string>())
  return {
    ...backend,
    findSession,
    leaveQueue: (sessionId, runId, owner, ended) =>
      Effect.tap(
        backend.leaveQueue(sessionId, runId, owner, ended),
        (left) => left ? PubSub.publish(dequeued, sessionId) : Effect.void
      ),
    watchQueue: (sessionId, options) =>
      Stream.unwrapScoped(Effect.map(PubSub.subscribe(dequeued), (local) =>
        Stream.merge(
          backend.watchQueue(sessionId, options),
          Stream.fromQueue(local).pipe(Stream.filter((id) => id === sessionId), Stream.as(undefined))
        ))),
    appendEvents: (runId, events, retention) =>
      events.length === 0
        ? Effect.void
        : Effect.zipRight(backend.appendEvents(runId, events, retention), PubSub.publish(appended, runId)),
    watchEvents: (runId, options) =>
      Stream.unwrapScoped(Effect.map(PubSub.subscribe(appended), (local) =>
        // subscribed before the backend's first wake-up, after which the reader reads
        Stream.merge(
          backend.watchEvents(runId, options),
          Stream.fromQueue(local).pipe(Stream.filter((id) => id === runId), Stream.as(undefined))
        ))),
    owner: owners.make(),
    withSessionLock: (sessionId) => (self) =>
      // Uninterruptible but for the wait and `self`; `Effect.exit` takes every
      // outcome, so the lock, its user count and the held list are always put back.
      Effect.uninterruptibleMask((restore) =>
        Effect.withFiberRuntime((fiber) => {
          const outer = fiber.getFiberRef(held)
          if (isHeld(outer, sessionId)) {
            return Effect.dieMessage(
              `SessionStore.withSessionLock: session '${sessionId}' is already locked by this run ` +
                "(a step ran a workflow or changed the session it is running in); use another session"
            )
          }
          let entry = locks.get(sessionId)
          if (entry === undefined) {
            entry = { busy: false, users: 0, waiters: new Set() }
            locks.set(sessionId, entry)
          }
          entry.users++
          const lock = entry
          let taken = false
          // takes the lock when it is free (at once: no Effect when nobody holds
          // it), else waits (interruptibly) to be woken and tries again
          const take = (): Effect.Effect<void> => {
            if (!lock.busy) {
              lock.busy = true
              taken = true
              return Effect.void
            }
            // the session may change while this waits: a read made before is not given to `self`
            const ahead = fiber.getFiberRef(readAhead)
            if (ahead !== undefined && ahead.sessionId === sessionId) ahead.used = true
            return Effect.flatMap(restore(waitFor(lock)), take)
          }
          return Effect.zipRight(
            FiberRef.set(held, { sessionId, outer }),
            Effect.flatMap(Effect.exit(Effect.zipRight(take(), restore(self))), (exit) => {
              if (taken) letGo(lock)
              lock.users--
              if (lock.users === 0) locks.delete(sessionId)
              return Effect.zipRight(FiberRef.set(held, outer), exit)
            })
          )
        })
      )
  }
}

/** This process's lock on one session. */
interface SessionLock {
  /** whether a run holds it */
  busy: boolean
  /** the runs that hold it or wait for it: the lock is forgotten when none do */
  users: number
  /** how to wake each run waiting for it */
  readonly waiters: Set<() => void>
}

/** Waits until the lock is let go (interruptibly: an interrupted wait leaves the queue). */
const waitFor = (lock: SessionLock): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const wake = () => resume(Effect.void)
    lock.waiters.add(wake)
    return Effect.sync(() => {
      lock.waiters.delete(wake)
    })
  })

/**
 * Lets the lock go and wakes every waiting run: the first of them to run
 * takes it and the others wait again (so a waiter interrupted as it is woken
 * loses no wake-up).
 */
const letGo = (lock: SessionLock): void => {
  lock.busy = false
  if (lock.waiters.size === 0) return
  const waiting = [...lock.waiters]
  lock.waiters.clear()
  for (const wake of waiting) wake()
}

/** The sessions whose lock a fiber holds, innermost first. */
interface HeldLocks {
  readonly sessionId: string
  readonly outer: HeldLocks | undefined
}

const isHeld = (held: HeldLocks | undefined, sessionId: string): boolean => {
  for (let at = held; at !== undefined; at = at.outer) if (at.sessionId === sessionId) return true
  return false
}

/**
 * Checks that `userId` may use a session owned by `ownerId`.
 *
 * @since 0.1.0
 * @category ownership
 */
export const checkOwner = (
  sessionId: string,
  ownerId: string | undefined,
  userId: string | undefined
): Effect.Effect<void, SessionOwnershipError> =>
  ownerId === undefined || ownerId === userId
    ? Effect.void
    : Effect.fail(
      new WorkflowError.SessionOwnershipError({ sessionId, ownerId, ...(userId === undefined ? {} : { userId }) })
    )

/**
 * Parses a stored state: JSON text, else a `StateDecodeError` (`corrupt`)
 * naming the session. Backends use it so that corrupt rows fail the same way
 * everywhere.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseState = (sessionId: string, raw: unknown): Effect.Effect<unknown, StateDecodeError> =>
  typeof raw === "string"
    ? Effect.try({
      try: () => JSON.parse(raw) as unknown,
      catch: (cause) =>
        new WorkflowError.StateDecodeError({
          sessionId,
          reason: "corrupt",
          description: "stored state is not valid JSON",
          cause
        })
    })
    : Effect.fail(
      new WorkflowError.StateDecodeError({
        sessionId,
        reason: "corrupt",
        description: `stored state is not JSON text (found ${raw === null ? "NULL" : typeof raw})`
      })
    )

/**
 * Applies a commit's `changes` to a state the caller owns (e.g. one just
 * parsed), in place, and returns the result: what a backend that keeps
 * changes does when it loads a session. A change that does not fit the state
 * (its path leads nowhere) is a `StateDecodeError` (`corrupt`) naming the
 * session.
 *
 * @since 0.1.0
 * @category parsing
 */
export const applyChanges = (
  sessionId: string,
  state: unknown,
  changes: ReadonlyArray<StateChange>
): Effect.Effect<unknown, StateDecodeError> =>
  Effect.try({
    try: () => json.applyChanges(state, changes, { copy: false }),
    catch: (cause) =>
      new WorkflowError.StateDecodeError({
        sessionId,
        reason: "corrupt",
        description: `the stored changes do not fit the stored state: ${
          cause instanceof Error ? cause.message : String(cause)
        }`,
        cause
      })
  })

/**
 * An in-memory backend. States and unfinished runs are kept as private deep
 * copies of the committed JSON values (and records as JSON text), so no caller
 * can mutate a stored value by accident, and what is committed must be JSON
 * that reads back as the same value. Two stores made over one backend behave like two processes over
 * one database.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryBackend: (options?: MemoryOptions) => Backend = memory.makeMemoryBackend

/**
 * @since 0.1.0
 * @category constructors
 */
export interface MemoryOptions {
  /** the run records each session keeps (default {@link defaultKeepRuns}; `"all"`: every one) */
  readonly keepRuns?: number | "all" | undefined
  /** the versions kept of a session whose workflow does not say (default {@link defaultHistory}) */
  readonly history?: HistoryOptions | undefined
}

/**
 * Orders session or run ids by code point: the order of their UTF-8 bytes,
 * in which SQL stores compare them (`<` on strings orders by UTF-16 code unit,
 * which differs where a character above U+FFFF meets one in U+E000–U+FFFF).
 * Listings order ties by it.
 *
 * @since 0.1.0
 * @category ordering
 */
export const compareIds: (a: string, b: string) => number = ids.compare

/**
 * Most recently updated first; ties by session id, in code point order (the
 * order of UTF-8 bytes, as SQL stores compare ids).
 *
 * @since 0.1.0
 * @category ordering
 */
export const byRecency = (a: SessionInfo, b: SessionInfo): number =>
  b.updatedAt - a.updatedAt || ids.compare(a.sessionId, b.sessionId)

/**
 * A fresh in-memory store each time the layer is built.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.sync(SessionStore, () => make(makeMemoryBackend()))

/**
 * A fresh in-memory store each time the layer is built, with options (e.g.
 * the history it keeps of sessions whose workflow does not say).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemoryWith = (options: MemoryOptions): Layer.Layer<SessionStore> =>
  Layer.sync(SessionStore, () => make(makeMemoryBackend(options)))
