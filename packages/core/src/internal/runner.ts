/**
 * Runs: a fresh run, an idempotent run by id, and the continuation of a paused
 * or abandoned run, with leases, a step journal and pauses.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as DefaultServices from "effect/DefaultServices"
import * as Clock from "effect/Clock"
import * as EffectContext from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Tracer from "effect/Tracer"
import * as RunContext from "../RunContext.js"
import type { ContinueOptions, RunOptions, RunOutput } from "../Workflow.js"
import * as SessionState from "../SessionState.js"
import * as SessionStore from "../SessionStore.js"
import * as StepOutput from "../StepOutput.js"
import * as WorkflowError from "../WorkflowError.js"
import * as WorkflowEvent from "../WorkflowEvent.js"
import * as events from "./events.js"
import * as formatting from "./format.js"
import * as ids from "./ids.js"
import { changesProblem, copyJson, deepCopy, deepMerge, jsonProblem, storedChanges } from "./json.js"
import { type Cell, fromCell } from "./state.js"
import * as stateCache from "./stateCache.js"
import * as step from "./step.js"
import {
  type Any,
  type Context,
  decodeInput,
  decodeState,
  encodeState,
  type Error,
  type Output,
  type StateOf
} from "./workflow.js"

// -----------------------------------------------------------------------------
// models
// -----------------------------------------------------------------------------

/** @internal */
export type Durability = "run" | "step"

/** The lease of a running run when none is given. @internal */
export const defaultLeaseDuration: Duration.Duration = Duration.seconds(30)

/**
 * How long the run record of a failed or interrupted run may wait for the
 * store (a database write lock held by another process) before it is given up
 * with a logged warning. The caller of the failed run waits for this, so it is
 * short.
 */
const failedRunRecordTimeout = Duration.seconds(1)

type Sink = ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined

/** How a run starts: fresh, or from an unfinished run this process just claimed. */
type Start =
  | { readonly _tag: "Fresh"; readonly tracked: boolean; readonly durability: Durability }
  | {
    readonly _tag: "Claimed"
    readonly run: SessionStore.ActiveRun
    readonly reason: "continued" | "resumed"
    /** the answer to the question the run paused on */
    readonly answer: step.Answer | undefined
  }

interface Ids {
  readonly runId: string
  readonly sessionId: string
  readonly userId: string | undefined
}

// -----------------------------------------------------------------------------
// helpers
// -----------------------------------------------------------------------------

const jsonValue = (u: unknown): unknown => (u === undefined ? null : u)

const checkJson = (sessionId: string, what: "input" | "output" | "state", value: unknown) => {
  const problem = jsonProblem(value)
  return problem === undefined
    ? Effect.void
    : Effect.fail(new WorkflowError.NotSerializable({ sessionId, what, ...problem }))
}

/**
 * Checks a session id (`ids.problem`: not empty, at most 256 characters, no
 * control characters, well-formed Unicode), so that every store takes it and
 * gives it back unchanged.
 *
 * @internal
 */
export const checkSessionId = (sessionId: string): Effect.Effect<string, WorkflowError.InvalidSessionId> => {
  const invalid = invalidSessionId(sessionId)
  return invalid === undefined ? Effect.succeed(sessionId) : Effect.fail(invalid)
}

const invalidSessionId = (sessionId: string): WorkflowError.InvalidSessionId | undefined => {
  const reason = ids.problem(sessionId)
  return reason === undefined ? undefined : new WorkflowError.InvalidSessionId({ sessionId, reason })
}

/**
 * The state a run starts from, in encoded form: for a new session a copy of
 * the seed with the run's `sessionState` merged over it (or replacing it, with
 * `overwriteDbSessionState`); for an existing session its stored state with
 * the patch merged over it (or the patch, else the seed, replacing it). A
 * stored state is checked before a patch is merged over it, so a patch never
 * hides a stored state that does not fit.
 */
const initialState = (
  self: Any,
  sessionId: string,
  stored: Option.Option<SessionStore.StoredSession>,
  options: RunOptions<unknown> | undefined
): Effect.Effect<unknown, WorkflowError.StateDecodeError> => {
  const overwrite = options?.overwriteDbSessionState ?? self.overwriteDbSessionState
  const patch = options?.sessionState
  if (Option.isNone(stored)) {
    const seed = deepCopy(self.sessionState)
    return Effect.succeed(patch === undefined ? seed : overwrite ? deepCopy(patch) : deepMerge(seed, deepCopy(patch)))
  }
  if (overwrite) return Effect.succeed(deepCopy(patch ?? self.sessionState))
  if (patch === undefined) return Effect.succeed(stored.value.state)
  return Effect.as(decodeState(self, sessionId, stored.value.state), deepMerge(stored.value.state, deepCopy(patch)))
}

const isConflict = (error: unknown): error is WorkflowError.SessionConflict =>
  WorkflowError.isWorkflowError(error) && error._tag === "SessionConflict"

const retriesOf = (retryOnConflict: boolean | number | undefined): number =>
  retryOnConflict === true ? 100 : typeof retryOnConflict === "number" ? retryOnConflict : 0

/** A step output as the journal keeps it (without the brand). */
const outputJson = (output: StepOutput.StepOutput) => ({
  stepName: output.stepName,
  content: output.content,
  success: output.success,
  ...(output.error === undefined ? {} : { error: output.error }),
  ...(output.stop === undefined ? {} : { stop: output.stop }),
  ...(output.exhausted === undefined ? {} : { exhausted: output.exhausted })
})

const outputFromJson = (json: typeof StepOutput.StepOutputSchema.Type): StepOutput.StepOutput => StepOutput.make(json)

// -----------------------------------------------------------------------------
// one attempt
// -----------------------------------------------------------------------------

/**
 * One attempt of a run, holding the session's lock: load the session, prepare
 * the input and the initial state (or restore them from the claimed run's
 * journal), run the steps from where the run stands (journaling each
 * top-level step with `durability: "step"`, renewing the lease of a tracked
 * run), and commit; or pause; or record the failure.
 */
const attempt = (
  self: Any,
  input: unknown,
  options: RunOptions<unknown> | undefined,
  ids: Ids,
  start: Start
): Effect.Effect<RunOutput<unknown, unknown>, unknown, unknown> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const { runId, sessionId, userId } = ids
      const owner = store.owner
      const leaseMillis = Duration.toMillis(Duration.decode(options?.leaseDuration ?? defaultLeaseDuration))
      const claimed = start._tag === "Claimed" ? start.run : undefined
      const startedAt = claimed?.startedAt ?? (yield* Clock.currentTimeMillis)
      const userField = userId === undefined ? {} : { userId }
      const inputProblem = jsonProblem(input)
      const storedInput = inputProblem === undefined ? jsonValue(input) : null
      /** whether an unfinished-run entry exists for this run (so it has a lease and is ended with the commit) */
      let tracked = claimed !== undefined
      const durability: Durability = claimed?.durability ?? (start._tag === "Fresh" ? start.durability : "run")

      const record = (cause: Cause.Cause<unknown>, completedAt: number): SessionStore.RunRecord => ({
        runId,
        sessionId,
        workflowName: self.name,
        ...userField,
        status: Cause.isInterruptedOnly(cause) ? "cancelled" : "error",
        input: storedInput,
        error: formatting.causeMessage(cause),
        startedAt,
        completedAt
      })

      /** Records a run that failed or was interrupted: on the session, with its state left alone. */
      const recordFailure = (cause: Cause.Cause<unknown>, newSessionState: Option.Option<unknown>, version: number) =>
        Effect.gen(function*() {
          const run = record(cause, yield* Clock.currentTimeMillis)
          const write: Effect.Effect<void, unknown> = tracked
            ? store.endRun(runId, run, owner)
            : Effect.asVoid(
              store.commit({
                sessionId,
                workflowName: self.name,
                userId,
                expectedVersion: version,
                state: Option.getOrUndefined(newSessionState),
                run
              }).pipe(
                Effect.catchTag("SessionConflict", () =>
                  store.commit({ sessionId, workflowName: self.name, userId, expectedVersion: version, run }))
              )
            )
          // The record waits for a store lock held elsewhere for `failedRunRecordTimeout`
          // at most, even when the run was interrupted (the caller waits for this):
          // then it is given up with a warning.
          yield* write.pipe(
            Effect.interruptible,
            Effect.timeout(failedRunRecordTimeout),
            Effect.catchAll((error) => Effect.logWarning(`sessionflow: could not record failed run ${runId}`, error))
          )
        })

      // -- the session, its owner, the input, the state the run starts from -----
      // A plain run (fresh, untracked, no state patch) may start from the state
      // this store's last run of the session committed, if the store still has
      // that version; the entry is out of the cache while this run runs.
      const cacheKey = start._tag === "Fresh" && !start.tracked && options?.sessionState === undefined &&
          !(options?.overwriteDbSessionState ?? self.overwriteDbSessionState)
        ? stateCache.keyOf(self.state?.schema, self.persist === "changes")
        : undefined
      const cached = cacheKey === undefined ? undefined : stateCache.take(store, sessionId, cacheKey)
      let loaded = yield* Effect.either(restore(
        store.load(sessionId, cached === undefined ? undefined : { knownVersion: cached.version })
      ))
      let hit = false
      /**
       * the valid encoded state a run started from, as the store has it: kept
       * apart so that only what changed is encoded (typed) and committed
       * (`persist: "changes"`)
       */
      let base: { readonly state: unknown } | undefined
      if (cached !== undefined && Either.isRight(loaded) && Option.isSome(loaded.right) && loaded.right.value.unchanged === true) {
        const found = loaded.right.value
        if (stateCache.matches(cached, found)) {
          hit = true
          // the untyped state is not encoded, and a frozen one cannot be
          // changed in place: the run may have the cached state itself
          if (self.state !== undefined || cached.frozen) base = { state: cached.state }
          const state = self.state === undefined || cached.frozen ? cached.state : copyJson(cached.state)
          loaded = Either.right(Option.some({ ...found, state, unchanged: undefined }))
        } else {
          loaded = yield* Effect.either(restore(store.load(sessionId)))
        }
      }
      if (Either.isLeft(loaded)) {
        // a corrupt stored state: the session exists, so the failure is recorded (for its owner)
        const error = loaded.left
        if (error._tag === "StateDecodeError") {
          const info = yield* Effect.option(restore(store.info(sessionId)))
          if (Option.isSome(info) && Option.isSome(info.value)) {
            yield* SessionStore.checkOwner(sessionId, info.value.value.userId, userId)
            yield* recordFailure(Cause.fail(error), Option.none(), info.value.value.version)
          }
        }
        return yield* Effect.fail(error)
      }
      const stored = loaded.right
      // another user's session is never written to, not even a run record
      if (Option.isSome(stored)) yield* SessionStore.checkOwner(sessionId, stored.value.userId, userId)
      // a session with a paused run takes no other run (a new session's paused
      // run is not on a session row yet: ask for it)
      const paused = Option.isSome(stored)
        ? stored.value.pausedRunId
        : (yield* restore(store.activeRuns({ sessionId, status: "paused" })))[0]?.runId
      if (paused !== undefined && paused !== runId) {
        return yield* new WorkflowError.SessionPaused({ sessionId, runId: paused })
      }
      const version = Option.match(stored, { onNone: () => 0, onSome: (s) => s.version })
      if (claimed !== undefined && claimed.baseVersion !== version) {
        // another run committed to the session since this one started: its journal
        // is stale, so it ends here (recorded with the conflict)
        const conflict = new WorkflowError.SessionConflict({
          sessionId,
          expectedVersion: claimed.baseVersion,
          actualVersion: version
        })
        yield* recordFailure(Cause.fail(conflict), Option.none(), version)
        return yield* Effect.fail(conflict)
      }
      const prepared = yield* Effect.exit(restore(Effect.gen(function*() {
        if (inputProblem !== undefined) {
          return yield* new WorkflowError.NotSerializable({ sessionId, what: "input", ...inputProblem })
        }
        const decodedInput = yield* decodeInput(self, input)
        // a claimed run starts from its journal, else from the state it started from
        const encodedInitial = claimed === undefined
          ? yield* initialState(self, sessionId, stored, options)
          : Option.isSome(stored)
          ? stored.value.state
          : claimed.initialState ?? self.sessionState
        const encodedStart = claimed?.journal?.state ?? encodedInitial
        // a cached state was checked and encoded (so validated) when it was committed
        if (hit) return { decodedInput, encodedInitial, encodedStart, initial: encodedStart }
        if (self.state === undefined) yield* checkJson(sessionId, "state", encodedStart)
        const initial = yield* decodeState(self, sessionId, encodedStart)
        return { decodedInput, encodedInitial, encodedStart, initial }
      })))
      if (Exit.isFailure(prepared)) {
        // a run that fails before its steps is recorded on an existing session
        // (a new session has no valid state to be created with)
        if (Option.isSome(stored) || tracked) yield* recordFailure(prepared.cause, Option.none(), version)
        return yield* Effect.failCause(prepared.cause)
      }
      const { decodedInput, encodedInitial, encodedStart, initial } = prepared.value

      // -- the unfinished-run entry of a tracked run ------------------------------
      const now = yield* Clock.currentTimeMillis
      const entry = (status: SessionStore.ActiveStatus): SessionStore.ActiveRun => ({
        runId,
        sessionId,
        workflowName: self.name,
        ...userField,
        status,
        input: storedInput,
        ...(options?.additionalData === undefined ? {} : { additionalData: { ...options.additionalData } }),
        owner: status === "running" ? owner : "",
        leaseExpiresAt: status === "running" ? now + leaseMillis : 0,
        baseVersion: version,
        ...(Option.isNone(stored) ? { initialState: encodedInitial } : {}),
        durability,
        startedAt,
        updatedAt: now
      })
      if (start._tag === "Fresh" && start.tracked) {
        const existing = yield* restore(store.startRun(entry("running")))
        if (Option.isSome(existing)) return yield* runTaken(runId, sessionId, existing.value)
        tracked = true
      }

      // -- the steps ------------------------------------------------------------
      const journal = claimed?.journal
      const answers: Record<string, step.Answer> = { ...(journal?.answers as Record<string, step.Answer> | undefined) }
      const pausedOn = claimed?.pause
      if (pausedOn !== undefined && start._tag === "Claimed" && start.answer !== undefined) {
        answers[pausedOn.key] = start.answer
      }
      // the state lives in a cell the runner reads directly; a run nobody
      // listens to gets a state service that never looks for an emitter
      const cell: Cell<unknown> = { value: initial }
      const events = yield* WorkflowEvent.isEnabled
      const service = fromCell(cell, events)
      let context = EffectContext.make(SessionState.SessionState, service as SessionState.Service).pipe(
        EffectContext.add(RunContext.RunContext, {
          runId,
          sessionId,
          userId,
          workflowName: self.name,
          input: decodedInput,
          chatHistory: (history) => SessionStore.chatHistory(store, sessionId, history)
        })
      )
      if (self.state !== undefined) context = EffectContext.add(context, self.state as SessionState.StateTag<unknown, unknown>, service)
      const first = journal?.next ?? 0
      const exec = step.makeExecContext(
        events,
        step.makeQuestions(first, answers, {
          save: Effect.suspend(() => encodeState(self, sessionId, cell.value)),
          restore: (encoded) => Effect.flatMap(decodeState(self, sessionId, encoded), service.set)
        })
      )
      for (const output of journal?.completed ?? []) exec.completed.push(outputFromJson(output))
      for (const [name, json] of Object.entries(journal?.outputs ?? {})) {
        const output = outputFromJson(json)
        exec.outputs.set(name, output)
        exec.recorded.push(output)
      }
      const additionalData = claimed?.additionalData ?? options?.additionalData ?? {}

      /** where the run stands before top-level step `next`, as a journal */
      let point: SessionStore.Journal = journal ?? {
        next: 0,
        previous: decodedInput,
        completed: [],
        outputs: {},
        state: encodedStart,
        answers: {}
      }
      // Where a run that journals nothing stands is kept as references and
      // made into a journal only if the run pauses, when the state's encoded
      // form is its JSON form (treat the state as immutable: a step that
      // mutates it in place and then pauses changes the state it resumes from).
      // Other states are encoded at every step, as a journaled run's are.
      const lazyJournal = !(tracked && durability === "step") && stateCache.isJsonState(self.state?.schema)
      let lazyPoint:
        | {
          readonly next: number
          readonly previous: unknown
          readonly completed: number
          /** how many outputs `exec.recorded` held (see `step.outputsAt`) */
          readonly outputs: number
          readonly state: unknown
        }
        | undefined
      const journalAt = (next: number, previous: unknown): Effect.Effect<void, unknown> | undefined => {
        if (lazyJournal) {
          lazyPoint = { next, previous, completed: exec.completed.length, outputs: exec.recorded.length, state: cell.value }
          step.advanceQuestions(exec.questions, next)
          return undefined
        }
        return Effect.gen(function*() {
          const encoded = yield* encodeState(self, sessionId, cell.value)
          point = {
            next,
            previous,
            completed: exec.completed.map(outputJson),
            outputs: Object.fromEntries([...exec.outputs].map(([name, output]) => [name, outputJson(output)])),
            state: encoded,
            answers: {}
          }
          step.advanceQuestions(exec.questions, next)
          if (tracked && durability === "step") yield* store.updateRun(runId, owner, { journal: point })
        })
      }

      const steps = Effect.suspend(() =>
        step.runFrom(
          self.steps,
          first,
          journal?.previous ?? decodedInput,
          (_, previous) => step.nextInput(exec, decodedInput, previous, additionalData),
          exec,
          journalAt
        )
      )

      // a tracked run renews its lease while it runs; losing the run (taken over,
      // cancelled) interrupts its steps
      const leased = <A, E, R>(self: Effect.Effect<A, E, R>) =>
        !tracked ? self : Effect.raceFirst(
          self,
          Effect.flatMap(Clock.currentTimeMillis, (at) => store.updateRun(runId, owner, { leaseExpiresAt: at + leaseMillis })).pipe(
            Effect.catchTag("SessionStoreError", (error) => Effect.logWarning(`sessionflow: could not renew the lease of run ${runId}`, error)),
            Effect.repeat(Schedule.spaced(Duration.millis(Math.max(1, Math.floor(leaseMillis / 3))))),
            Effect.delay(Duration.millis(Math.max(1, Math.floor(leaseMillis / 3)))),
            Effect.zipRight(Effect.never)
          )
        )

      // The run's services and questions are set here and put back below (as
      // `Effect.provide` and `Effect.locally` would, at a fraction of the cost):
      // this region is uninterruptible and `Effect.exit` takes every outcome of
      // the steps, so nothing skips the put-back.
      const outerContext = yield* FiberRef.getAndUpdate(FiberRef.currentContext, (outer) => EffectContext.merge(outer, context))
      const outerQuestions = yield* FiberRef.getAndSet(step.currentQuestions, exec.questions)
      const exit = yield* Effect.map(Effect.exit(restore(
        steps.pipe(
          leased,
          Effect.flatMap((output) =>
            Effect.gen(function*() {
              const state = cell.value
              const changed = base === undefined || self.state === undefined
                ? undefined
                : stateCache.encodeFrom(self.state.schema, base.state, state)
              const encoded = changed === undefined ? yield* encodeState(self, sessionId, state) : changed.encoded
              // with `persist: "changes"`, on an existing session: the changes
              // from the state the run started from, when the store has it as
              // it is (only their values are new, so only they are checked),
              // else one change that sets the whole state
              const changes: ReadonlyArray<WorkflowEvent.StateChange> | undefined =
                self.persist !== "changes" || Option.isNone(stored)
                  ? undefined
                  : base !== undefined
                  ? storedChanges(base.state, encoded)
                  : [{ op: "set", path: [], value: encoded }]
              if (changes === undefined || base === undefined) {
                yield* checkJson(sessionId, "state", encoded)
              } else {
                const problem = changesProblem(changes, encoded)
                if (problem !== undefined) yield* new WorkflowError.NotSerializable({ sessionId, what: "state", ...problem })
              }
              yield* checkJson(sessionId, "output", output.content)
              return { output, state, encoded, changes }
            })
          )
        )
      )), (exit) => (self.persist === "changes" ? explainFrozen(exit) : exit))
      yield* FiberRef.set(FiberRef.currentContext, outerContext)
      yield* FiberRef.set(step.currentQuestions, outerQuestions)

      if (Exit.isSuccess(exit)) {
        const { changes, encoded, output, state } = exit.value
        // interruptible: a store waiting for a lock held elsewhere can be
        // interrupted there, having written nothing (its write itself is atomic)
        const committed = yield* restore(store.commit({
          sessionId,
          workflowName: self.name,
          userId,
          expectedVersion: version,
          state: encoded,
          changes,
          run: {
            runId,
            sessionId,
            workflowName: self.name,
            ...userField,
            status: "completed",
            input: storedInput,
            content: jsonValue(output.content),
            startedAt,
            completedAt: yield* Clock.currentTimeMillis
          },
          ends: tracked ? { runId, owner } : undefined
        })).pipe(Effect.catchTag("SessionNotFound", (error) => Effect.die(error)))
        if (cacheKey !== undefined && Option.isSome(stored)) {
          stateCache.put(store, sessionId, cacheKey, { version: committed, createdAt: stored.value.createdAt, state: encoded })
        }
        return {
          runId,
          sessionId,
          userId,
          workflowName: self.name,
          status: "completed" as const,
          content: output.content,
          stepOutputs: exec.completed,
          state
        }
      }

      // -- a pause: the run waits, with its journal at the step that asked ------
      const pause = step.pauseOf(exit.cause)
      if (pause !== undefined && !Cause.isInterrupted(exit.cause)) {
        const pausedAt = yield* Clock.currentTimeMillis
        const waiting: SessionStore.Pause = {
          path: [...pause.path],
          key: pause.key,
          payload: pause.payload,
          ...(pause.checkpoint === undefined ? {} : { checkpoint: pause.checkpoint }),
          pausedAt
        }
        const journalPoint: SessionStore.Journal = lazyPoint === undefined
          ? { ...point, answers: exec.questions.answers }
          : {
            next: lazyPoint.next,
            previous: lazyPoint.previous,
            completed: exec.completed.slice(0, lazyPoint.completed).map(outputJson),
            outputs: Object.fromEntries(
              Object.entries(step.outputsAt(exec, lazyPoint.outputs)).map(([name, output]) => [name, outputJson(output)])
            ),
            state: yield* encodeState(self, sessionId, lazyPoint.state),
            answers: exec.questions.answers
          }
        yield* restore(
          tracked
            ? store.updateRun(runId, owner, { status: "paused", owner: "", leaseExpiresAt: 0, journal: journalPoint, pause: waiting })
            : Effect.flatMap(
              store.startRun({ ...entry("paused"), journal: journalPoint, pause: waiting }),
              (existing): Effect.Effect<void, WorkflowError.RunError | WorkflowError.RunPaused> =>
                Option.isNone(existing) ? Effect.void : runTaken(runId, sessionId, existing.value)
            )
        )
        yield* WorkflowEvent.emit({ _tag: "RunPaused", stepPath: [...pause.path], payload: pause.payload })
        return yield* new WorkflowError.RunPaused({ runId, sessionId, path: [...pause.path], payload: pause.payload })
      }

      // -- an answer the pausing step could not decode: the run waits again --------
      const failure = Cause.failureOption(exit.cause)
      if (
        claimed?.pause !== undefined && start._tag === "Claimed" && start.answer !== undefined &&
        Option.exists(failure, (error) => isTagged(error, "ResponseDecodeError"))
      ) {
        yield* restore(store.updateRun(runId, owner, {
          status: "paused",
          owner: "",
          leaseExpiresAt: 0,
          ...(claimed.journal === undefined ? {} : { journal: claimed.journal }),
          pause: claimed.pause
        }))
        return yield* Effect.failCause(exit.cause)
      }

      // -- a failure: recorded, nothing of the state committed --------------------
      if (Option.exists(failure, (error) => isTagged(error, "RunLost"))) {
        // the run is someone else's now: nothing is recorded in its name
        return yield* Effect.failCause(exit.cause)
      }
      // a new session is created with its initial state to hold the record
      yield* recordFailure(exit.cause, Option.isNone(stored) ? Option.some(encodedInitial) : Option.none(), version)
      return yield* Effect.failCause(exit.cause)
    })
  )

/**
 * With `persist: "changes"` committed states are frozen: a step that changes
 * one in place dies with V8's `TypeError` ("Cannot add property 3, object is
 * not extensible"); the defect then says what happened and what to do.
 */
const explainFrozen = <A>(exit: Exit.Exit<A, unknown>): Exit.Exit<A, unknown> => {
  if (Exit.isSuccess(exit)) return exit
  const defect = Cause.dieOption(exit.cause)
  if (
    Option.isNone(defect) || !(defect.value instanceof TypeError) ||
    !/read only|read-only|not extensible|Cannot (add|assign|delete|define)/.test(defect.value.message)
  ) return exit
  return Exit.die(
    new Error(
      `a step changed the session state in place (${defect.value.message}); with persist: "changes" ` +
        "committed states are frozen: update the state immutably, e.g. SessionState.update((s) => ({ ...s, items: [...s.items, item] }))",
      { cause: defect.value }
    )
  )
}

const isTagged = (u: unknown, tag: string): boolean =>
  typeof u === "object" && u !== null && (u as { readonly _tag?: unknown })._tag === tag

/** Another run with this id exists: it is running elsewhere (or waits), or it completed meanwhile. */
const runTaken = (runId: string, sessionId: string, existing: SessionStore.RunLookup) =>
  existing._tag === "Active"
    ? existing.run.status === "paused"
      ? Effect.fail(
        new WorkflowError.RunPaused({
          runId,
          sessionId,
          path: existing.run.pause?.path ?? [],
          payload: existing.run.pause?.payload
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
    : Effect.fail(new WorkflowError.RunLost({ runId, description: "a run with this id completed meanwhile" }))

// -----------------------------------------------------------------------------
// runs
// -----------------------------------------------------------------------------

/** Runs `body` with the run's emitter; emits the terminal events around it. */
const withEvents = <A, E, R>(
  sink: Sink,
  ids: { readonly runId: string; readonly sessionId: string },
  opening: WorkflowEvent.Payload | undefined,
  body: Effect.Effect<RunOutput<A, unknown>, E, R>
): Effect.Effect<RunOutput<A, unknown>, E, R> =>
  sink === undefined
    ? Effect.withFiberRuntime((fiber) => isQuiet(fiber, sink) ? body : withSink(sink, ids, opening, body))
    : withSink(sink, ids, opening, body)

/**
 * Nobody listens to a run without a sink outside of any run: events already
 * go nowhere, at the empty path, so its body runs as it is.
 */
const isQuiet = (fiber: Fiber.RuntimeFiber<unknown, unknown>, sink: Sink): boolean =>
  sink === undefined && fiber.getFiberRef(events.currentEmitter) === events.noopEmitter &&
  fiber.getFiberRef(events.currentPath).length === 0

const withSink = <A, E, R>(
  sink: Sink,
  ids: { readonly runId: string; readonly sessionId: string },
  opening: WorkflowEvent.Payload | undefined,
  body: Effect.Effect<RunOutput<A, unknown>, E, R>
) =>
  Effect.gen(function*() {
    if (opening !== undefined) yield* WorkflowEvent.emit(opening)
    const output = yield* body.pipe(
      Effect.onExit((exit) => {
        if (Exit.isSuccess(exit)) return Effect.void
        if (Cause.isInterruptedOnly(exit.cause)) return WorkflowEvent.emit({ _tag: "RunCancelled" })
        const failure = Cause.failureOption(exit.cause)
        // a pause already said so with RunPaused
        if (Option.isSome(failure) && isTagged(failure.value, "RunPaused")) return Effect.void
        return WorkflowEvent.emit({ _tag: "RunFailed", error: formatting.causeMessage(exit.cause) })
      })
    )
    yield* WorkflowEvent.emit({ _tag: "RunCompleted", content: output.content })
    return output
  }).pipe(events.emitTo(ids, sink))

const recordConflict = (self: Any, input: unknown, ids: Ids, error: WorkflowError.SessionConflict) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const now = yield* Clock.currentTimeMillis
    yield* store.commit({
      sessionId: ids.sessionId,
      workflowName: self.name,
      userId: ids.userId,
      expectedVersion: error.actualVersion,
      run: {
        runId: ids.runId,
        sessionId: ids.sessionId,
        workflowName: self.name,
        ...(ids.userId === undefined ? {} : { userId: ids.userId }),
        status: "error",
        input: jsonProblem(input) === undefined ? jsonValue(input) : null,
        error: formatting.errorMessage(error),
        startedAt: now,
        completedAt: now
      }
    })
  }).pipe(Effect.timeout(failedRunRecordTimeout), Effect.catchAll(() => Effect.void))

/** The output of a run that completed earlier, for an idempotent run by id. */
const replay = (self: Any, record: SessionStore.RunRecord) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const stored = yield* store.load(record.sessionId)
    const state = Option.isSome(stored) ? yield* decodeState(self, record.sessionId, stored.value.state) : undefined
    return {
      runId: record.runId,
      sessionId: record.sessionId,
      userId: record.userId,
      workflowName: record.workflowName,
      status: "completed" as const,
      content: record.content,
      stepOutputs: [],
      state
    }
  })

type Typed<W> = Effect.Effect<
  RunOutput<Output<W>, SessionState.Type<StateOf<W>>>,
  Error<W> | WorkflowError.RunError,
  Context<W> | SessionStore.SessionStore
>

const nativeTracer = EffectContext.get(DefaultServices.liveServices, Tracer.Tracer)

/**
 * `self` in a span named `name` when the fiber traces: a tracer other than
 * Effect's built-in one is installed and tracing is enabled. Without one the
 * span would be built and dropped on every run (a run is the hot path), so
 * it is not made.
 *
 * @internal
 */
export const withRunSpan = (name: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) =>
    fiber.currentTracer === nativeTracer || !fiber.getFiberRef(FiberRef.currentTracerEnabled)
      ? self
      : Effect.withSpan(self, name)
  )

/**
 * Runs a workflow once; `sink` receives its events (none when undefined).
 * With `runId`, a run that completed before is replayed, one that runs
 * elsewhere is `RunInProgress`, an abandoned one is resumed.
 *
 * @internal
 */
export const run = <W extends Any>(self: W, input: unknown, options: RunOptions<unknown> | undefined, sink: Sink): Typed<W> =>
  Effect.withFiberRuntime((fiber): Effect.Effect<RunOutput<unknown, unknown>, unknown, unknown> => {
    const sessionId = options?.sessionId ?? self.sessionId ?? crypto.randomUUID()
    const userId = options?.userId ?? self.userId
    const runId = options?.runId ?? crypto.randomUUID()
    const ids = { runId, sessionId, userId }
    const durability = options?.durability ?? self.durability
    const tracked = options?.runId !== undefined || durability === "step"
    const retries = retriesOf(options?.retryOnConflict)
    const fresh = (store: SessionStore.Service) => {
      const once = store.withSessionLock(sessionId)(attempt(self, input, options, ids, { _tag: "Fresh", tracked, durability }))
      return (retries === 0 ? once : Effect.retry(once, { times: retries, while: isConflict })).pipe(
        Effect.tapError((error) => isConflict(error) ? recordConflict(self, input, ids, error) : Effect.void)
      )
    }
    // a run with an id may have run before: replayed, resumed or refused
    const byId = (store: SessionStore.Service) =>
      Effect.gen(function*() {
        const known = yield* store.getRun(runId)
        if (Option.isSome(known)) {
          const found = known.value
          if (found._tag === "Recorded" && found.record.status === "completed") {
            if (found.record.sessionId !== sessionId || found.record.workflowName !== self.name) {
              return yield* new WorkflowError.RunNotFound({
                runId,
                description: `the id was used by a run of workflow '${found.record.workflowName}' on session '${found.record.sessionId}'`
              })
            }
            return yield* replay(self, found.record)
          }
          if (found._tag === "Active") {
            const now = yield* Clock.currentTimeMillis
            if (found.run.status === "running" && found.run.leaseExpiresAt < now) {
              // abandoned: carry on from its journal
              return yield* resumeRun(self, runId, options, sink, undefined)
            }
            return yield* runTaken(runId, sessionId, found)
          }
        }
        return yield* fresh(store)
      })
    const body = Effect.flatMap(SessionStore.SessionStore, (store) => {
      const invalid = invalidSessionId(sessionId)
      return invalid !== undefined ? Effect.fail(invalid) : options?.runId === undefined ? fresh(store) : byId(store)
    })
    if (isQuiet(fiber, sink)) return body
    return withSink(sink, ids, {
      _tag: "RunStarted",
      workflowName: self.name,
      input,
      ...(userId === undefined ? {} : { userId })
    }, body)
  }) as Typed<W>

/**
 * Carries on an unfinished run this process claims: a paused one (with the
 * answer to its question) or an abandoned one (its lease expired), from its
 * journal. If the session changed since the run started, `SessionConflict`,
 * unless `retryOnConflict`: then the run starts over on the new state (with
 * the same id).
 *
 * @internal
 */
export const resumeRun = <W extends Any>(
  self: W,
  runId: string,
  options: ContinueOptions | undefined,
  sink: Sink,
  answer: ((run: SessionStore.ActiveRun) => Effect.Effect<step.Answer, WorkflowError.ResponseDecodeError>) | undefined
): Typed<W> =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const found = yield* store.getRun(runId)
    if (Option.isNone(found) || found.value._tag !== "Active") {
      return yield* new WorkflowError.RunNotFound({
        runId,
        description: Option.isSome(found) && found.value._tag === "Recorded"
          ? `the run has ended (${found.value.record.status})`
          : "no unfinished run has this id"
      })
    }
    const active = found.value.run
    if (active.workflowName !== self.name) {
      return yield* new WorkflowError.RunNotFound({ runId, description: `the run belongs to workflow '${active.workflowName}'` })
    }
    if (active.userId !== undefined) yield* SessionStore.checkOwner(active.sessionId, active.userId, options?.userId ?? self.userId)
    if (answer !== undefined && active.status !== "paused") {
      return yield* new WorkflowError.RunNotFound({ runId, description: "the run is not paused" })
    }
    const given = answer === undefined ? undefined : yield* answer(active)
    const reason = answer === undefined ? "resumed" as const : "continued" as const
    const ids = { runId, sessionId: active.sessionId, userId: active.userId }
    const leaseMillis = Duration.toMillis(Duration.decode(options?.leaseDuration ?? defaultLeaseDuration))
    const retries = retriesOf(options?.retryOnConflict)
    const body = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* store.claimRun(runId, { owner: store.owner, now, leaseExpiresAt: now + leaseMillis })
      yield* WorkflowEvent.emit({ _tag: "RunResumed", workflowName: self.name, fromStep: claimed.journal?.next ?? 0, reason })
      return yield* store.withSessionLock(active.sessionId)(
        attempt(self, active.input, { ...options, sessionId: active.sessionId }, ids, {
          _tag: "Claimed",
          run: claimed,
          reason,
          answer: given
        })
      ).pipe(
        Effect.catchIf(
          (error) => isConflict(error) && retries > 0,
          () =>
            // the session moved on (the run was ended with the conflict): it starts
            // over on the session's new state, under the same id
            run(self, active.input, {
              sessionId: active.sessionId,
              userId: active.userId,
              runId,
              durability: active.durability,
              retryOnConflict: retries - 1,
              ...(active.additionalData === undefined ? {} : { additionalData: active.additionalData })
            }, sink)
        )
      )
    })
    return yield* withEvents(sink, ids, undefined, body)
  }) as Typed<W>

