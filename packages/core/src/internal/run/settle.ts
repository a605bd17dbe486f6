/**
 * The last phase of an attempt, and the one place that writes how a run
 * ended: completed steps are committed (state and run record together);
 * a pause leaves the run waiting with its journal; an answer the pausing step
 * could not decode leaves it waiting again; a failure is recorded, with
 * nothing of the state committed.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as SessionStore from "../../SessionStore.js"
import type { RunOutput } from "../../Workflow.js"
import * as WorkflowError from "../../WorkflowError.js"
import * as WorkflowEvent from "../../WorkflowEvent.js"
import * as boundary from "../boundary.js"
import * as formatting from "../format.js"
import { pauseOf, type PauseSignal } from "../step/questions.js"
import * as stateCache from "../store/stateCache.js"
import { usageField } from "../usage.js"
import type { Any } from "../workflow/model.js"
import { currentBackground } from "./background.js"
import type { Done, Executed } from "./execute.js"
import { entry, isCancellation, lostOrCancelled, markRefused } from "./lease.js"
import {
  type Attempt,
  failedRunRecordTimeout,
  type Ids,
  isTagged,
  jsonValue,
  type Opened,
  pausedFields,
  type Phase,
  type Restore,
  runTaken,
  storedInputOf
} from "./model.js"

/** A pause without the answer a continue recorded with it. */
const withoutAnswer = ({ answer: _answer, ...pause }: SessionStore.Pause): SessionStore.Pause => pause

/** @internal */
export function* settle(run: Opened, executed: Executed, restore: Restore): Phase<RunOutput<unknown, unknown>> {
  const { exit } = executed
  if (exit._tag === "Success") return yield* commit(run, executed, exit.value, restore)
  const pause = pauseOf(exit.cause)
  if (pause !== undefined && !Cause.isInterrupted(exit.cause)) return yield* wait(run, executed, pause, restore)
  const failure = Cause.failureOption(exit.cause)
  if (
    run.claimed?.pause !== undefined && run.start._tag === "Claimed" &&
    (run.start.answer !== undefined || run.claimed.pause.answer !== undefined) &&
    Option.exists(failure, (error) => isTagged(error, "ResponseDecodeError"))
  ) {
    // an answer the pausing step could not decode: the run waits again
    yield* restore(run.store.updateRun(run.ids.runId, run.store.owner, {
      status: "paused",
      owner: "",
      leaseExpiresAt: 0,
      ...(run.claimed.journal === undefined ? {} : { journal: run.claimed.journal }),
      // without the answer recorded with it: the next continue's counts
      pause: withoutAnswer(run.claimed.pause)
    }))
    // its log says so: the answer was refused (the step's StepFailed) and the run waits again, at
    // the same pause — a refused answer is never the run failing
    const waiting = run.claimed.pause
    yield* WorkflowEvent.emit({
      _tag: "RunPaused",
      stepPath: [...waiting.path],
      key: waiting.key,
      payload: waiting.payload,
      ...pausedFields(waiting)
    })
    if (Option.isSome(failure)) markRefused(failure.value)
    return yield* Effect.failCause(exit.cause)
  }
  // the run is someone else's now, or was cancelled (and recorded so): nothing is recorded in its name
  if (Option.isSome(failure) && isCancellation(failure.value)) return yield* Effect.failCause(exit.cause)
  if (Option.isSome(failure) && isTagged(failure.value, "RunLost")) {
    return yield* lostOrCancelled(run.store, run.ids.runId, failure.value as WorkflowError.RunLost)
  }
  if (run.tracked && Cause.isInterruptedOnly(exit.cause) && (yield* FiberRef.get(currentBackground)) !== undefined) {
    // a background run stopped with its scope (its process shuts down) is not
    // cancelled: it stays unfinished, its lease given up, for recovery
    yield* run.store.updateRun(run.ids.runId, run.store.owner, { leaseExpiresAt: 0 }).pipe(
      Effect.timeout(failedRunRecordTimeout),
      Effect.catchAll((error) =>
        Effect.logWarning(`sessionflow: could not give up the lease of run ${run.ids.runId}`, error)
      )
    )
    return yield* Effect.failCause(exit.cause)
  }
  // a new session is created with its initial state to hold the record
  const recorded = yield* recordFailure(
    run,
    exit.cause,
    Option.isNone(run.stored) ? Option.some(run.encodedInitial) : Option.none(),
    run.version
  )
  if (recorded === "unrecorded" && run.tracked && !Cause.isInterruptedOnly(exit.cause)) {
    // the run is still unfinished in the store, and recovery carries it on:
    // the caller is told so, not that it failed
    return yield* unfinishedRun(run, `its failure could not be recorded (${formatting.causeMessage(exit.cause)})`)
  }
  return yield* Effect.failCause(exit.cause)
}

const endRefused = (run: Opened, error: unknown) =>
  run.tracked ? Effect.asVoid(recordFailure(run, Cause.fail(error), Option.none(), run.version)) : Effect.void

/** `RunUnfinished`: a tracked run whose outcome the store did not take. */
const unfinishedRun = (run: Attempt, description: string) =>
  Effect.fail(new WorkflowError.RunUnfinished({ runId: run.ids.runId, sessionId: run.ids.sessionId, description }))

/** Commits the state and the run record together (ending a tracked run's entry with them). */
function* commit(run: Opened, executed: Executed, done: Done, restore: Restore): Phase<RunOutput<unknown, unknown>> {
  const { ids: { runId, sessionId, userId }, self, store } = run
  const { changes, encoded, output, state } = done
  // interruptible: a store waiting for a lock held elsewhere can be
  // interrupted there, having written nothing (its write itself is atomic)
  const committed = yield* restore(store.commit({
    sessionId,
    workflowName: self.name,
    userId,
    expectedVersion: run.version,
    state: encoded,
    changes,
    history: self.history,
    run: {
      runId,
      sessionId,
      workflowName: self.name,
      ...(userId === undefined ? {} : { userId }),
      status: "completed",
      input: run.storedInput,
      content: jsonValue(output.content),
      ...usageField(executed.usage),
      startedAt: run.startedAt,
      completedAt: yield* Clock.currentTimeMillis
    },
    ends: run.tracked ? { runId, owner: store.owner } : undefined
  })).pipe(
    Effect.catchTag("SessionNotFound", (error) => Effect.die(error)),
    // ended meanwhile by a cancel (then its caller is told so), or taken over
    Effect.catchTag("RunLost", (error) => lostOrCancelled(store, runId, error)),
    // a tracked run whose commit failed in the store (the connection died, a
    // lock was held past the lock timeout) is still unfinished there, or its
    // commit landed: either way it completes, by recovery if not here. The
    // caller is told so, never that it failed.
    Effect.catchTag(
      "SessionStoreError",
      (error): Effect.Effect<never, WorkflowError.SessionStoreError | WorkflowError.RunUnfinished> =>
        run.tracked ? unfinishedRun(run, `its final commit failed (${error.message})`) : Effect.fail(error)
    ),
    // a tracked run the store refused (the session moved on, or is another's
    // or paused) ends here, recorded with the refusal, so that it is not left
    // running for recovery; unless `retryOnConflict` has attempts left: the run
    // then stays this store's, and its next attempt starts over on the new state
    Effect.tapErrorTag("SessionConflict", (error) => run.retriesLeft > 0 ? Effect.void : endRefused(run, error)),
    Effect.tapErrorTag("SessionOwnershipError", (error) => endRefused(run, error)),
    Effect.tapErrorTag("SessionPaused", (error) => endRefused(run, error))
  )
  yield* boundary.at(() => ({ _tag: "AfterCommit", runId }))
  if (run.cacheKey !== undefined && Option.isSome(run.stored)) {
    stateCache.put(store, sessionId, run.cacheKey, {
      version: committed,
      createdAt: run.stored.value.createdAt,
      state: encoded
    })
  }
  return {
    runId,
    sessionId,
    userId,
    workflowName: self.name,
    status: "completed",
    content: output.content,
    stepOutputs: executed.exec.done,
    state,
    ...usageField(executed.usage)
  }
}

/** A pause: the run waits, with its journal at the step that asked. */
function* wait(run: Opened, executed: Executed, pause: PauseSignal, restore: Restore): Phase<never> {
  const { ids: { runId, sessionId }, store } = run
  const pausedAt = yield* Clock.currentTimeMillis
  const waiting: SessionStore.Pause = {
    path: [...pause.path],
    key: pause.key,
    payload: pause.payload,
    ...(pause.checkpoint === undefined ? {} : { checkpoint: pause.checkpoint }),
    pausedAt,
    ...waitFields(pause)
  }
  const journal = yield* Effect.either(executed.journal.paused(waiting))
  if (journal._tag === "Left") {
    // a pause that cannot be stored as it is ends the run, recorded with the reason
    yield* recordFailure(
      run,
      Cause.fail(journal.left),
      Option.isNone(run.stored) ? Option.some(run.encodedInitial) : Option.none(),
      run.version
    )
    return yield* Effect.fail(journal.left)
  }
  yield* restore(
    run.tracked
      ? store.updateRun(runId, store.owner, {
        status: "paused",
        owner: "",
        leaseExpiresAt: 0,
        journal: journal.right,
        pause: waiting
      })
      : Effect.flatMap(
        store.startRun({ ...entry(run, "paused", pausedAt), journal: journal.right, pause: waiting }),
        (existing): Effect.Effect<void, WorkflowError.RunError | WorkflowError.RunPaused | WorkflowError.RunNotFound> =>
          Option.isNone(existing) ? Effect.void : runTaken(runId, sessionId, existing.value)
      )
  )
  if (waiting.kind === "signal" && waiting.signal !== undefined) {
    // a signal stored while the run was on its way here: the run is due at
    // once, and whoever wakes runs (`DurableRuns`, `Workflow.recover`) gives it
    // (a `Workflow.signal` that saw the run paused gives it first)
    const taken = new Set(journal.right.signals)
    const stored = yield* restore(Effect.orElseSucceed(store.signals(runId, { name: waiting.signal }), () => []))
    if (stored.some((signal) => !taken.has(signal.seq))) {
      yield* restore(Effect.ignore(store.updateRun(runId, "", { pause: { ...waiting, wakeAt: pausedAt } })))
    }
  }
  const fields = pausedFields(waiting)
  yield* WorkflowEvent.emit({
    _tag: "RunPaused",
    stepPath: [...pause.path],
    key: pause.key,
    payload: pause.payload,
    ...fields
  })
  return yield* new WorkflowError.RunPaused({
    runId,
    sessionId,
    path: [...pause.path],
    key: pause.key,
    payload: pause.payload,
    ...fields
  })
}

/** What a pause waits for, as the store keeps it (nothing for a question without a timeout). */
const waitFields = (pause: PauseSignal) => {
  const wait = pause.wait
  if (wait === undefined) return {}
  return {
    ...(wait.kind === "question" ? {} : { kind: wait.kind }),
    ...(wait.signal === undefined ? {} : { signal: wait.signal }),
    ...(wait.wakeAt === undefined ? {} : { wakeAt: wait.wakeAt }),
    ...(wait.timeoutAt === undefined ? {} : { timeoutAt: wait.timeoutAt })
  }
}

/**
 * Records a run that failed or was interrupted: on the session, with its
 * state left alone (`newSessionState`: the state a new session is created
 * with to hold the record). Says whether it was recorded, or the run was
 * ended or taken over elsewhere (a tracked run no longer this process's), or
 * the store did not take the record.
 *
 * @internal
 */
export const recordFailure = (
  run: Attempt,
  cause: Cause.Cause<unknown>,
  newSessionState: Option.Option<unknown>,
  version: number
) =>
  Effect.gen(function*() {
    const { ids: { runId, sessionId, userId }, self, store } = run
    const record: SessionStore.RunRecord = {
      runId,
      sessionId,
      workflowName: self.name,
      ...(userId === undefined ? {} : { userId }),
      status: Cause.isInterruptedOnly(cause) ? "cancelled" : "error",
      input: run.storedInput,
      error: formatting.causeMessage(cause),
      startedAt: run.startedAt,
      completedAt: yield* Clock.currentTimeMillis
    }
    const commit = (state: unknown) =>
      store.commit({ sessionId, workflowName: self.name, userId, expectedVersion: version, state, run: record })
    const write: Effect.Effect<Recorded, unknown> = run.tracked
      ? store.endRun(runId, record, store.owner).pipe(
        Effect.as("recorded" as const),
        Effect.catchTags({
          RunLost: () => Effect.succeed("elsewhere" as const),
          RunNotFound: () => Effect.succeed("elsewhere" as const)
        })
      )
      : commit(Option.getOrUndefined(newSessionState)).pipe(
        Effect.catchTag("SessionConflict", () => commit(undefined)),
        Effect.as("recorded" as const)
      )
    // The record waits for a store lock held elsewhere for `failedRunRecordTimeout`
    // at most, even when the run was interrupted (the caller waits for this):
    // then it is given up with a warning.
    return yield* write.pipe(
      Effect.interruptible,
      Effect.timeout(failedRunRecordTimeout),
      Effect.catchAll((error) =>
        Effect.as(Effect.logWarning(`sessionflow: could not record failed run ${runId}`, error), "unrecorded" as const)
      )
    )
  })

/** What became of a failed run's record (see {@link recordFailure}). @internal */
type Recorded = "recorded" | "elsewhere" | "unrecorded"

/**
 * Records a run that gave up on a conflict (no retries left) on the session
 * it could not commit to, at the version it found.
 *
 * @internal
 */
export const recordConflict = (self: Any, input: unknown, ids: Ids, error: WorkflowError.SessionConflict) =>
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
        input: storedInputOf(input),
        error: formatting.errorMessage(error),
        startedAt: now,
        completedAt: now
      }
    }).pipe(
      // every failed run keeps a record: a write that waited too long for a
      // session's lock (runs racing for it) is tried again a few times
      Effect.timeout(failedRunRecordTimeout),
      Effect.retry({ times: 4, schedule: Schedule.jittered(Schedule.exponential("20 millis")) })
    )
  }).pipe(
    Effect.catchAll((error) =>
      Effect.logWarning(`sessionflow: could not record run ${ids.runId}, which met a conflict`, error)
    )
  )
