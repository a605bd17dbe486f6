/**
 * The record of one attempt of a run, as its phases hand it on (see
 * `runner.ts`): what is fixed when the attempt starts ({@link Attempt}), and
 * what `open` adds ({@link Opened}). Records are never changed: a phase that
 * learns something returns a new one.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { YieldWrap } from "effect/Utils"
import * as SessionStore from "../../SessionStore.js"
import type * as StepOutput from "../../StepOutput.js"
import type { ContinueOptions, RunOptions } from "../../Workflow.js"
import * as WorkflowError from "../../WorkflowError.js"
import type * as WorkflowEvent from "../../WorkflowEvent.js"
import { jsonProblem } from "../json.js"
import type { Answer } from "../step/questions.js"
import type * as stateCache from "../store/stateCache.js"
import type { Any } from "../workflow/model.js"

/** @internal */
type Durability = "run" | "step"

/**
 * The lease of a running run when none is given: short, so that the id of a
 * run whose process died is carried on (by a run with its id, `resume` or
 * `recover`) soon after; a live run renews it every third of it.
 *
 * @internal
 */
const defaultLeaseDuration: Duration.Duration = Duration.seconds(10)

/** @internal */
export const leaseMillisOf = (options: RunOptions<unknown> | ContinueOptions | undefined): number =>
  Duration.toMillis(Duration.decode(options?.leaseDuration ?? defaultLeaseDuration))

/**
 * What a run keeps of its options, so that whoever carries it on (a continue,
 * a resume, a supervisor, a cluster runner) does it the same way; undefined
 * when every option is the default.
 *
 * @internal
 */
export const startedWithOf = (
  options: RunOptions<unknown> | ContinueOptions | undefined
): SessionStore.StartedWith | undefined => {
  if (options === undefined) return undefined
  const retention = options.eventRetention
  const startedWith: Record<string, unknown> = {}
  if (options.events === "stored") {
    startedWith.events = "stored"
    if (retention?.maxEvents !== undefined) startedWith.maxEvents = retention.maxEvents
    if (retention?.keepFor !== undefined) startedWith.keepFor = Duration.toMillis(Duration.decode(retention.keepFor))
  }
  if (options.leaseDuration !== undefined) startedWith.leaseMillis = leaseMillisOf(options)
  if ("onBusy" in options && options.onBusy !== undefined) startedWith.onBusy = options.onBusy
  const retries = retriesOf(options.retryOnConflict)
  if (retries > 0) startedWith.retryOnConflict = retries
  return Object.keys(startedWith).length === 0 ? undefined : startedWith as SessionStore.StartedWith
}

/**
 * The options a run is carried on with: the caller's, and, where the caller
 * gives none, what the run was started with (its event log stays on once on).
 *
 * @internal
 */
export const carriedOptions = (
  options: ContinueOptions | undefined,
  startedWith: SessionStore.StartedWith | undefined
): ContinueOptions | undefined => {
  if (startedWith === undefined) return options
  const stored = startedWith.events === "stored" && options?.events !== "stored"
  return {
    ...options,
    ...(stored
      ? {
        events: "stored" as const,
        eventRetention: {
          ...(startedWith.maxEvents === undefined ? {} : { maxEvents: startedWith.maxEvents }),
          ...(startedWith.keepFor === undefined ? {} : { keepFor: Duration.millis(startedWith.keepFor) }),
          ...options?.eventRetention
        }
      }
      : {}),
    ...(options?.leaseDuration === undefined && startedWith.leaseMillis !== undefined
      ? { leaseDuration: Duration.millis(startedWith.leaseMillis) }
      : {}),
    ...(options?.retryOnConflict === undefined && startedWith.retryOnConflict !== undefined
      ? { retryOnConflict: startedWith.retryOnConflict }
      : {})
  }
}

/** Where a run's events go (nowhere when undefined). @internal */
export type Sink = ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined

/** How an attempt starts: fresh, or from an unfinished run this process just claimed. @internal */
export type Start =
  | {
    readonly _tag: "Fresh"
    readonly tracked: boolean
    readonly durability: Durability
    /**
     * the next attempt of a tracked run after a conflict: its unfinished-run
     * entry is still this store's, and the attempt takes it over anew
     */
    readonly retried?: boolean | undefined
  }
  | {
    readonly _tag: "Claimed"
    readonly run: SessionStore.ActiveRun
    readonly reason: "continued" | "resumed"
    /** the answer to the question the run paused on */
    readonly answer: Answer | undefined
  }

/** @internal */
export interface Ids {
  readonly runId: string
  readonly sessionId: string
  readonly userId: string | undefined
}

/** `Effect.uninterruptibleMask`'s `restore`: the attempt is uninterruptible except where it waits. @internal */
export type Restore = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * A phase of an attempt: a generator the attempt's `Effect.gen` delegates to
 * with `yield*`, so that a phase costs no Effect operation of its own (a run
 * is the hot path).
 *
 * @internal
 */
export type Phase<A> = Generator<YieldWrap<Effect.Effect<unknown, unknown, unknown>>, A, unknown>

/**
 * What an attempt knows before it reads the session.
 *
 * @internal
 */
export interface Attempt {
  readonly self: Any
  readonly store: SessionStore.Service
  readonly ids: Ids
  /** the run input, encoded */
  readonly input: unknown
  readonly options: RunOptions<unknown> | undefined
  readonly start: Start
  /** the unfinished run this attempt carries on */
  readonly claimed: SessionStore.ActiveRun | undefined
  readonly startedAt: number
  /** what makes the input not JSON, if anything */
  readonly inputProblem: JsonProblem | undefined
  /** the input as it is recorded (null when it is not JSON) */
  readonly storedInput: unknown
  readonly durability: Durability
  readonly leaseMillis: number
  /** whether an unfinished-run entry exists for this run (so it has a lease and is ended with the commit) */
  readonly tracked: boolean
  /**
   * how many more attempts a conflict gets (`retryOnConflict`): while there
   * are some, a tracked run's conflict is not recorded, its entry stays this
   * store's for the next attempt, so the run does not end in between
   */
  readonly retriesLeft: number
  /** whether the run is traced (a tracer is installed): its steps are then spans */
  readonly traced: boolean
}

/**
 * An attempt that holds its session: the stored session, the input and the
 * state the steps start from.
 *
 * @internal
 */
export interface Opened extends Attempt {
  readonly stored: Option.Option<SessionStore.StoredSession>
  /** the session's version the run commits over (0: a new session) */
  readonly version: number
  /** the state cache entry a plain run puts its committed state under */
  readonly cacheKey: stateCache.Key | undefined
  /**
   * the valid encoded state the run started from, as the store has it: kept
   * apart so that only what changed is encoded (typed) and committed
   * (`persist: "changes"`)
   */
  readonly base: { readonly state: unknown } | undefined
  readonly decodedInput: unknown
  /** the state the run started from, before its journal (encoded) */
  readonly encodedInitial: unknown
  /** the state the steps start from (encoded): the journal's, else the initial one */
  readonly encodedStart: unknown
  /** the same, decoded */
  readonly initial: unknown
}

/**
 * An attempt and what opening it found, as an `Opened`. Every field is
 * listed, in one order, so that every opened attempt has one shape: a spread
 * of the attempt made objects the engine then reads slowly.
 *
 * @internal
 */
export const opened = (
  attempt: Attempt,
  found: Omit<Opened, keyof Attempt>,
  tracked: boolean = attempt.tracked
): Opened => ({
  self: attempt.self,
  store: attempt.store,
  ids: attempt.ids,
  input: attempt.input,
  options: attempt.options,
  start: attempt.start,
  claimed: attempt.claimed,
  startedAt: attempt.startedAt,
  inputProblem: attempt.inputProblem,
  storedInput: attempt.storedInput,
  durability: attempt.durability,
  leaseMillis: attempt.leaseMillis,
  tracked,
  retriesLeft: attempt.retriesLeft,
  traced: attempt.traced,
  stored: found.stored,
  version: found.version,
  cacheKey: found.cacheKey,
  base: found.base,
  decodedInput: found.decodedInput,
  encodedInitial: found.encodedInitial,
  encodedStart: found.encodedStart,
  initial: found.initial
})

/** @internal */
export const jsonValue = (u: unknown): unknown => (u === undefined ? null : u)

/** @internal */
type JsonProblem = NonNullable<ReturnType<typeof jsonProblem>>

/** The input as a run record keeps it: null when it is not JSON. @internal */
export const storedInputOf = (input: unknown): unknown => jsonProblem(input) === undefined ? jsonValue(input) : null

/** @internal */
export const checkJson = (sessionId: string, what: WorkflowError.NotSerializable["what"], value: unknown) => {
  const problem = jsonProblem(value)
  return problem === undefined
    ? Effect.void
    : Effect.fail(new WorkflowError.NotSerializable({ sessionId, what, ...problem }))
}

/** @internal */
export const isTagged = (u: unknown, tag: string): boolean =>
  typeof u === "object" && u !== null && (u as { readonly _tag?: unknown })._tag === tag

/** @internal */
export const isConflict = (error: unknown): error is WorkflowError.SessionConflict =>
  WorkflowError.isWorkflowError(error) && error._tag === "SessionConflict"

/** @internal */
export const retriesOf = (retryOnConflict: boolean | number | undefined): number =>
  retryOnConflict === true ? 100 : typeof retryOnConflict === "number" ? retryOnConflict : 0

/**
 * How long the run record of a failed or interrupted run may wait for the
 * store (a database write lock held by another process) before it is given up
 * with a logged warning. The caller of the failed run waits for this, so it is
 * short.
 *
 * @internal
 */
export const failedRunRecordTimeout = Duration.seconds(1)

/** A step output as the journal keeps it (without the brand). @internal */
export const outputJson = (output: StepOutput.StepOutput) => ({
  stepName: output.stepName,
  content: output.content,
  success: output.success,
  ...(output.error === undefined ? {} : { error: output.error }),
  ...(output.stop === undefined ? {} : { stop: output.stop }),
  ...(output.exhausted === undefined ? {} : { exhausted: output.exhausted })
})

/**
 * `RunLost` for a run this process held that another write ended or took
 * over, saying which.
 *
 * @internal
 */
export const lostRun = (store: SessionStore.Service, runId: string) =>
  Effect.flatMap(
    Effect.orElseSucceed(store.getRun(runId), () => Option.none<SessionStore.RunLookup>()),
    (found) =>
      Effect.fail(
        new WorkflowError.RunLost({
          runId,
          description: Option.isNone(found)
            ? "the run is no longer unfinished"
            : found.value._tag === "Recorded"
            ? `the run has ended elsewhere (${found.value.record.status})`
            : `the run is now owned by ${found.value.run.owner === "" ? "nobody (paused)" : found.value.run.owner}`
        })
      )
  )

/**
 * What a `RunPaused` error or event says of the pause besides its question:
 * what it waits for, and until when.
 *
 * @internal
 */
export const pausedFields = (pause: SessionStore.Pause | undefined) => ({
  ...(pause?.kind === undefined ? {} : { kind: pause.kind }),
  ...(pause?.signal === undefined ? {} : { signal: pause.signal }),
  ...(pause?.kind === "sleep" && pause.wakeAt !== undefined ? { wakeAt: pause.wakeAt } : {}),
  ...(pause?.timeoutAt === undefined ? {} : { timeoutAt: pause.timeoutAt })
})

/** Another run with this id exists: it is running elsewhere (or waits), or it completed meanwhile. @internal */
export const runTaken = (runId: string, sessionId: string, existing: SessionStore.RunLookup) =>
  existing._tag === "Active"
    ? existing.run.status === "paused"
      ? Effect.fail(
        new WorkflowError.RunPaused({
          runId,
          sessionId,
          path: existing.run.pause?.path ?? [],
          key: existing.run.pause?.key ?? "",
          payload: existing.run.pause?.payload,
          ...pausedFields(existing.run.pause)
        })
      )
      : Effect.fail(
        new WorkflowError.RunInProgress({
          runId,
          sessionId: existing.run.sessionId,
          owner: existing.run.owner,
          leaseExpiresAt: existing.run.leaseExpiresAt
        })
      )
    : existing.record.status === "completed"
    ? Effect.fail(new WorkflowError.RunLost({ runId, description: "a run with this id completed meanwhile" }))
    : Effect.fail(SessionStore.runEnded(existing.record))
