/**
 * Runs: a fresh run, an idempotent run by id, and the continuation of a paused
 * or abandoned run. Each attempt of a run holds its session's lock and goes
 * through four phases over one immutable record of the run:
 *
 * - `open` (open.ts): read the session (or the state cache), check its owner,
 *   a paused run holding it, a claimed run's base version; decode the input
 *   and the state the steps start from;
 * - `track` (track.ts): register a tracked fresh run's entry and lease;
 * - `execute` (execute.ts): run the steps from where the run stands, with its
 *   journal (journal.ts) and lease (lease.ts);
 * - `settle` (settle.ts): commit, pause, or record the failure.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import type * as Stream from "effect/Stream"
import type * as SessionState from "../../SessionState.js"
import * as SessionStore from "../../SessionStore.js"
import type { ContinueOptions, RunOptions, RunOutput } from "../../Workflow.js"
import * as WorkflowError from "../../WorkflowError.js"
import * as WorkflowEvent from "../../WorkflowEvent.js"
import * as events from "../events.js"
import * as formatting from "../format.js"
import * as idRules from "../ids.js"
import { jsonProblem } from "../json.js"
import type { Answer } from "../step/questions.js"
import * as tracing from "../tracing.js"
import { usageAttributes } from "../usage.js"
import { type Any, type Context, decodeState, type Error, type Output, type StateOf } from "../workflow/model.js"
import { currentBackground, currentLogGate, registered } from "./background.js"
import * as busy from "./busy.js"
import * as eventLog from "./eventLog.js"
import { execute } from "./execute.js"
import { recordedAnswer, withAnswer } from "./journal.js"
import { isCancellation, isRefusedAnswer } from "./lease.js"
import {
  type Attempt,
  carriedOptions,
  checkJson,
  type Ids,
  isConflict,
  isTagged,
  jsonValue,
  leaseMillisOf,
  retriesOf,
  runTaken,
  type Sink,
  type Start,
  startedWithOf
} from "./model.js"
import { claim, continuedByGone, open, unfinished } from "./open.js"
import { recordConflict, settle } from "./settle.js"
import { checkShape } from "./shape.js"
import { track } from "./track.js"

/**
 * Checks a session id (`idRules.problem`: not empty, at most 256 characters,
 * no control characters, well-formed Unicode), so that every store takes it
 * and gives it back unchanged.
 *
 * @internal
 */
export const checkSessionId = (sessionId: string): Effect.Effect<string, WorkflowError.InvalidSessionId> => {
  const reason = idRules.problem(sessionId)
  return reason === undefined
    ? Effect.succeed(sessionId)
    : Effect.fail(new WorkflowError.InvalidSessionId({ sessionId, reason }))
}

/**
 * Checks a run id by the same rules as a session id (`InvalidRunId`), before
 * any store sees it.
 *
 * @internal
 */
export const checkRunId = (runId: string): Effect.Effect<string, WorkflowError.InvalidRunId> => {
  const reason = idRules.problem(runId)
  return reason === undefined ? Effect.succeed(runId) : Effect.fail(new WorkflowError.InvalidRunId({ runId, reason }))
}

// -----------------------------------------------------------------------------
// one attempt
// -----------------------------------------------------------------------------

/**
 * One attempt of a run, holding the session's lock: open → track → execute →
 * settle. It is uninterruptible except where it waits (the store, the
 * steps), so that what it wrote and what it reports agree.
 */
const attempt = (
  self: Any,
  input: unknown,
  options: RunOptions<unknown> | undefined,
  ids: Ids,
  start: Start,
  retriesLeft: number,
  traced: boolean
): Untyped =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const claimed = start._tag === "Claimed" ? start.run : undefined
      const inputProblem = jsonProblem(input)
      const begun: Attempt = {
        self,
        store: yield* SessionStore.SessionStore,
        ids,
        input,
        options,
        start,
        claimed,
        startedAt: claimed?.startedAt ?? (yield* Clock.currentTimeMillis),
        inputProblem,
        storedInput: inputProblem === undefined ? jsonValue(input) : null,
        durability: claimed?.durability ?? (start._tag === "Fresh" ? start.durability : "run"),
        leaseMillis: leaseMillisOf(options),
        tracked: claimed !== undefined || (start._tag === "Fresh" && start.retried === true),
        retriesLeft,
        traced
      }
      const opened = yield* open(begun, restore)
      const run = yield* track(opened, restore)
      return yield* settle(run, yield* execute(run, restore), restore)
    })
  )

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
        if (Cause.isInterruptedOnly(exit.cause)) {
          // a background run stopped with its scope is not cancelled: recovery carries it on
          return Effect.flatMap(
            FiberRef.get(currentBackground),
            (background) => background === undefined ? WorkflowEvent.emit({ _tag: "RunCancelled" }) : Effect.void
          )
        }
        const failure = Cause.failureOption(exit.cause)
        if (Option.isSome(failure) && isCancellation(failure.value)) return WorkflowEvent.emit({ _tag: "RunCancelled" })
        // a pause already said so with RunPaused (so did a refused answer: the run waits again)
        if (Option.isSome(failure) && (isTagged(failure.value, "RunPaused") || isRefusedAnswer(failure.value))) {
          return Effect.void
        }
        return WorkflowEvent.emit({ _tag: "RunFailed", error: formatting.causeMessage(exit.cause) })
      })
    )
    yield* WorkflowEvent.emit({ _tag: "RunCompleted", content: output.content })
    return output
  }).pipe(events.emitTo(ids, sink))

/**
 * A run's events as a `Stream`, from one of the running functions given a
 * sink. The stream ends after the run's last event; a pause is not a failure
 * of the stream (it ends with `RunPaused`).
 *
 * @internal
 */
export const eventStream = <E, R>(
  body: (sink: (event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) => Effect.Effect<unknown, E, R>
): Stream.Stream<WorkflowEvent.WorkflowEvent, Exclude<E, WorkflowError.RunPaused>, R> =>
  events.toStream((offer: (event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) =>
    body(offer).pipe(
      // a pause ends the stream (after its RunPaused event): it is not among the stream's failures
      Effect.catchIf((error) => WorkflowError.isWorkflowError(error) && error._tag === "RunPaused", () => Effect.void)
    ) as Effect.Effect<unknown, Exclude<E, WorkflowError.RunPaused>, R>
  )

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
      state,
      ...(record.usage === undefined ? {} : { usage: record.usage })
    }
  })

/** A run at its workflow's types. */
type Typed<W> = Effect.Effect<
  RunOutput<Output<W>, SessionState.Type<StateOf<W>>>,
  Error<W> | WorkflowError.RunError,
  Context<W> | SessionStore.SessionStore
>

/** A run as the runner handles it. */
type Untyped = Effect.Effect<RunOutput<unknown, unknown>, unknown, unknown>

/**
 * A run put back at its workflow's types: the one place they are asserted.
 * The runner handles a workflow's steps as `Workflow.make` stores them (any
 * steps), and their content, errors and requirements are the workflow's:
 * `make` and `andThen` checked each step against them. `RunPaused`, which the
 * runner raises itself, comes only from a step that paused, which has it in
 * its error type.
 */
const atTypes = <W extends Any>(run: Untyped): Typed<W> => run as Typed<W>

/**
 * A run in its span (when the fiber traces, see `tracing.ts`): its ids and
 * durability, and how it ended, with the tokens it used.
 */
const runSpan = <E, R>(
  self: Any,
  ids: Ids,
  durability: string,
  body: Effect.Effect<RunOutput<unknown, unknown>, E, R>
): Effect.Effect<RunOutput<unknown, unknown>, E, R> =>
  tracing.traced(
    Effect.onExit(body, (exit) => Effect.annotateCurrentSpan(runEnd(exit))),
    "Workflow.run",
    { ...tracing.runAttributes({ ...ids, workflowName: self.name }), [tracing.attr.durability]: durability }
  )

const runEnd = (exit: Exit.Exit<RunOutput<unknown, unknown>, unknown>): tracing.Attributes => {
  if (Exit.isSuccess(exit)) return { [tracing.attr.runOutcome]: "completed", ...usageAttributes(exit.value.usage) }
  const failure = Cause.failureOption(exit.cause)
  return {
    [tracing.attr.runOutcome]: Option.exists(failure, (error) => isTagged(error, "RunPaused"))
      ? "paused"
      : Cause.isInterruptedOnly(exit.cause) || Option.exists(failure, isCancellation)
      ? "cancelled"
      : "error"
  }
}

/**
 * Runs a workflow once; `sink` receives its events (none when undefined).
 * With `runId`, a run that completed before is replayed, one that runs
 * elsewhere is `RunInProgress`, an abandoned one is resumed.
 *
 * @internal
 */
export const run = <W extends Any>(
  self: W,
  input: unknown,
  options: RunOptions<unknown> | undefined,
  sink: Sink
): Typed<W> =>
  atTypes(Effect.withFiberRuntime((fiber): Untyped => {
    const traced = tracing.isTracing(fiber)
    const userId = options?.userId ?? self.userId
    const ids: Ids = {
      runId: options?.runId ?? crypto.randomUUID(),
      sessionId: options?.sessionId ?? self.sessionId ?? crypto.randomUUID(),
      userId
    }
    // a run given an id writes its log only once it is its caller's (see `eventLog.storing`)
    const gate: eventLog.LogGate = { open: options?.runId === undefined }
    const logged = eventLog.storing(options, ids.runId, options?.runId !== undefined, sink, gate)
    const opened = (body: Untyped): Untyped =>
      isQuiet(fiber, logged) ? body : withSink(logged, ids, {
        _tag: "RunStarted",
        workflowName: self.name,
        input,
        ...(userId === undefined ? {} : { userId })
      }, body)
    const checked = Effect.zipRight(checkSessionId(ids.sessionId), checkRunId(ids.runId))
    const run = Effect.flatMap(SessionStore.SessionStore, (store): Untyped => {
      const fresh = freshRun(self, input, options, ids, store, traced)
      if (options?.runId === undefined) return opened(Effect.zipRight(checked, fresh))
      // a run by id opens as what it turns out to be: a resumed run with its own
      // events (RunResumed, its end), anything else as a run that starts
      return Effect.matchEffect(Effect.zipRight(checked, byId(self, options, ids, sink, store, fresh)), {
        onFailure: (error) => opened(Effect.fail(error)),
        onSuccess: (decided) => decided._tag === "Resumed" ? decided.run : opened(decided.run)
      })
    })
    const onBusy = options?.onBusy ?? "reject"
    const events: Untyped = onBusy === "enqueue"
      ? Effect.zipRight(
        checked,
        busy.enqueued(
          self,
          ids,
          input,
          leaseMillisOf(options),
          run,
          (held) => resumeRun(self, held.runId, { userId: held.userId }, undefined, undefined),
          (queued) => adopted(self, queued),
          fiber.getFiberRef(currentBackground) === undefined ? undefined : carryOf(options),
          startedWithOf(options)
        )
      )
      : onBusy === "interrupt"
      ? Effect.zipRight(checked, busy.interrupting(self, ids, run))
      : run
    const gated = releasing(
      options,
      Effect.locally(events, currentLogGate, () => {
        gate.open = true
      })
    )
    return traced ? runSpan(self, ids, options?.durability ?? self.durability, gated) : gated
  }))

/**
 * What a queued background run is carried on with when its caller stops
 * before its turn (see `SessionStore.QueuedCarry`).
 */
const carryOf = (options: RunOptions<unknown> | undefined): SessionStore.QueuedCarry => {
  const startedWith = startedWithOf(options)
  return {
    ...(options?.sessionState === undefined ? {} : { sessionState: options.sessionState }),
    ...(options?.overwriteDbSessionState === undefined
      ? {}
      : { overwriteDbSessionState: options.overwriteDbSessionState }),
    ...(options?.additionalData === undefined ? {} : { additionalData: { ...options.additionalData } }),
    ...(options?.durability === undefined ? {} : { durability: options.durability }),
    ...(startedWith === undefined ? {} : { startedWith })
  }
}

/**
 * A queued background run taken over from its stopped caller (see
 * `SessionStore.Backend.adoptQueued`), run as its starter would have: in
 * the background, in the session's queue at its place (its entry, now this
 * store's, is not queued again), with the options it was queued with.
 *
 * @internal
 */
export const adopted = <W extends Any>(self: W, queued: SessionStore.QueuedRun) => {
  const carry = queued.carry
  const startedWith = carry?.startedWith
  const options: RunOptions<unknown> = {
    runId: queued.runId,
    sessionId: queued.sessionId,
    ...(queued.userId === undefined ? {} : { userId: queued.userId }),
    onBusy: "enqueue",
    ...(carry?.sessionState === undefined ? {} : { sessionState: carry.sessionState }),
    ...(carry?.overwriteDbSessionState === undefined ? {} : { overwriteDbSessionState: carry.overwriteDbSessionState }),
    ...(carry?.additionalData === undefined ? {} : { additionalData: carry.additionalData }),
    ...(carry?.durability === undefined ? {} : { durability: carry.durability }),
    ...carriedOptions(undefined, startedWith)
  }
  return run(self, queued.input, options, undefined).pipe(
    Effect.locally(busy.currentAdopted, queued.runId),
    Effect.locally(currentBackground, { registered: Deferred.unsafeMake<void, unknown>(FiberId.none) })
  )
}

/**
 * A run whose caller releases it when interrupted (`onInterrupt: "release"`)
 * runs as a background run does: an interruption leaves it unfinished, its
 * lease given up, for whoever carries it on next.
 */
const releasing = <A, E, R>(
  options: { readonly onInterrupt?: "cancel" | "release" | undefined } | undefined,
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  options?.onInterrupt === "release"
    ? Effect.flatMap(
      FiberRef.get(currentBackground),
      (background) =>
        background !== undefined
          ? self
          : Effect.locally(self, currentBackground, { registered: Deferred.unsafeMake<void, unknown>(FiberId.none) })
    )
    : self

/** A fresh attempt under the session's lock, again on a conflict when the run may retry. */
const freshRun = (
  self: Any,
  input: unknown,
  options: RunOptions<unknown> | undefined,
  ids: Ids,
  store: SessionStore.Service,
  traced: boolean
): Untyped => {
  const durability = options?.durability ?? self.durability
  const tracked = options?.runId !== undefined || durability === "step"
  const attempts = attemptsOf(
    self,
    input,
    options,
    ids,
    store,
    { _tag: "Fresh", tracked, durability },
    retriesOf(options?.retryOnConflict),
    traced
  )
  // a tracked run recorded its conflict when it ended (its last attempt's)
  return tracked
    ? attempts
    : Effect.tapError(attempts, (error) => isConflict(error) ? recordConflict(self, input, ids, error) : Effect.void)
}

/**
 * The attempts of a run under the session's lock: the first from `start`,
 * then, after a conflict, up to `retries` more on the session's new state. A
 * tracked run stays unfinished in between (its entry this store's, its
 * conflict not recorded), so that it never ends and starts again: the next
 * attempt takes its entry over anew, and fails with `RunLost` if the run was
 * cancelled or taken over meanwhile.
 */
const attemptsOf = (
  self: Any,
  input: unknown,
  options: RunOptions<unknown> | undefined,
  ids: Ids,
  store: SessionStore.Service,
  start: Start,
  retries: number,
  traced: boolean
): Untyped => {
  const once = store.withSessionLock(ids.sessionId)(
    busy.interruptibleRun(store, ids, attempt(self, input, options, ids, start, retries, traced))
  )
  if (retries === 0) return once
  const tracked = start._tag === "Claimed" || start.tracked
  const durability = start._tag === "Claimed" ? start.run.durability : start.durability
  return Effect.catchIf(
    once,
    (error) => isConflict(error) || isTagged(error, "SessionBusy"),
    (error) => {
      // a run refused as busy before it was tracked has no entry to take over yet
      const retried = isConflict(error) ? tracked : start._tag === "Fresh" ? start.retried : tracked
      return Effect.zipRight(
        isConflict(error) ? conflictBackoff(retriesOf(options?.retryOnConflict) - retries) : busyBackoff,
        attemptsOf(
          self,
          input,
          options,
          ids,
          store,
          { _tag: "Fresh", tracked, durability, retried },
          retries - 1,
          traced
        )
      )
    }
  )
}

/** The wait before the next attempt of a run refused as busy: the other run goes on for a while. */
const busyBackoff: Effect.Effect<void> = Effect.flatMap(
  Random.nextIntBetween(100, 301),
  (millis) => Effect.sleep(Duration.millis(millis))
)

/**
 * The wait before the next attempt after `done` conflicts (0: the first
 * retry goes at once): a random time up to 2 ms × 2^done, at most half a
 * second ("full jitter"), so that runs racing for one session do not meet
 * again at once, round after round, and starve.
 */
const conflictBackoff = (done: number): Effect.Effect<void> =>
  done <= 0
    ? Effect.void
    : Effect.flatMap(
      Random.nextIntBetween(0, Math.min(500, 2 * 2 ** Math.min(done, 16)) + 1),
      (millis) => millis === 0 ? Effect.void : Effect.sleep(Duration.millis(millis))
    )

/**
 * A run with an id may have run before: replayed, resumed or refused; else
 * `fresh`. What to run: a resumed run emits its own events (from `sink`), the
 * others are the caller's to open.
 */
const byId = (
  self: Any,
  options: RunOptions<unknown> | undefined,
  { runId, sessionId }: Ids,
  sink: Sink,
  store: SessionStore.Service,
  fresh: Untyped
): Effect.Effect<{ readonly _tag: "Resumed" | "Other"; readonly run: Untyped }, unknown> =>
  Effect.gen(function*() {
    const other = (run: Untyped) => ({ _tag: "Other" as const, run })
    const known = yield* store.getRun(runId)
    if (Option.isNone(known)) return other(fresh)
    const found = known.value
    if (found._tag === "Recorded" && found.record.status === "completed") {
      if (found.record.sessionId !== sessionId || found.record.workflowName !== self.name) {
        return yield* new WorkflowError.RunNotFound({
          runId,
          description:
            `the id was used by a run of workflow '${found.record.workflowName}' on session '${found.record.sessionId}'`
        })
      }
      return other(replay(self, found.record))
    }
    // a failed, cancelled or abandoned run never runs again under its id
    if (found._tag === "Recorded") return yield* SessionStore.runEnded(found.record)
    const now = yield* Clock.currentTimeMillis
    // abandoned (its lease expired, or its process is gone): carry on from its journal
    if (SessionStore.isAbandoned(found.run, now)) {
      return { _tag: "Resumed" as const, run: resumeRun(self, runId, options, sink, undefined) as Untyped }
    }
    return yield* runTaken(runId, sessionId, found)
  })

/**
 * The answer a continue carries a claimed run on with: the one recorded with
 * its pause, if a continue that took it before (whose process is gone) gave
 * one — that answer stands, whatever this continue's is — else this
 * continue's, recorded with the pause before the run goes on, so that whoever
 * carries the run on after this process goes on with it too.
 */
const recordAnswer = (
  store: SessionStore.Service,
  claimed: SessionStore.ActiveRun,
  answer: (run: SessionStore.ActiveRun) => Answer
): Effect.Effect<Answer, WorkflowError.SessionStoreError | WorkflowError.RunLost> => {
  const pause = claimed.pause
  if (pause === undefined) return Effect.succeed(answer(claimed))
  const recorded = recordedAnswer(pause)
  if (recorded !== undefined) return Effect.succeed(recorded)
  const given = answer(claimed)
  return Effect.as(store.updateRun(claimed.runId, store.owner, { pause: withAnswer(pause, given) }), given)
}

/**
 * Carries on an unfinished run this process claims: a paused one (with the
 * answer to its question) or an abandoned one (its lease expired, or its
 * owner's process is gone: `SessionStore.ownerGone`), from its
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
  answer: ((run: SessionStore.ActiveRun) => Answer) | undefined,
  accepts?: (run: SessionStore.ActiveRun) => Effect.Effect<void, WorkflowError.RunNotFound>,
  given?: (answer: Answer) => void
): Typed<W> =>
  atTypes(Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    yield* checkRunId(runId)
    const traced = yield* Effect.withFiberRuntime<boolean>((fiber) => Effect.succeed(tracing.isTracing(fiber)))
    const active = yield* unfinished(self, runId, options, answer !== undefined)
    // carried on as it was started (its event log, lease, retries), where the caller says nothing else
    const carried = carriedOptions(options, active.startedWith)
    const gate: eventLog.LogGate = { open: false }
    const logged = eventLog.storing(carried, runId, true, sink, gate)
    // refused before the run is claimed: it stays as it was
    if (accepts !== undefined) yield* accepts(active)
    yield* checkShape(self, active)
    if (answer !== undefined) yield* checkJson(active.sessionId, "answer", answer(active).response)
    // a continue answers one pause: the one named, else the one just read; the
    // claim takes the run only while it waits there
    const pause = answer === undefined ? undefined : options?.pause ?? active.pause?.key
    const reason = answer === undefined ? "resumed" as const : "continued" as const
    const ids = { runId, sessionId: active.sessionId, userId: active.userId }
    const leaseMillis = leaseMillisOf(carried)
    const retries = retriesOf(carried?.retryOnConflict)
    // a continuation that turns the run's event log on keeps it on for whoever carries it on next
    const logTurnedOn = carried?.events === "stored" && active.startedWith?.events !== "stored"
    // a running run whose process is gone is taken from that owner, whatever its
    // lease (by a continue, only while that owner was continuing from its pause)
    const from = continuedByGone(active) ? active.owner : undefined
    const body = Effect.gen(function*() {
      const claimed = yield* claim(store, runId, leaseMillis, pause, from)
      if (logTurnedOn) {
        yield* store.updateRun(runId, store.owner, {
          startedWith: { ...claimed.startedWith, ...startedWithOf(carried) }
        })
      }
      yield* registered
      // the answer, and the state it continues from, are the claimed pause's
      const taken = answer === undefined ? undefined : yield* recordAnswer(store, claimed, answer)
      if (taken !== undefined) given?.(taken)
      yield* WorkflowEvent.emit({
        _tag: "RunResumed",
        workflowName: self.name,
        fromStep: claimed.journal?.next ?? 0,
        reason
      })
      // on a conflict the run starts over on the session's new state, under the
      // same id and entry (it does not end in between)
      return yield* attemptsOf(
        self,
        active.input,
        {
          ...carried,
          sessionId: active.sessionId,
          ...(active.additionalData === undefined ? {} : { additionalData: active.additionalData })
        },
        ids,
        store,
        { _tag: "Claimed", run: claimed, reason, answer: taken },
        retries,
        traced
      )
    })
    const events = withEvents(logged, ids, undefined, body)
    const gated = releasing(
      options,
      Effect.locally(events, currentLogGate, () => {
        gate.open = true
      })
    )
    return yield* (traced ? runSpan(self, ids, active.durability, gated) : gated)
  }))
