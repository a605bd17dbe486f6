/**
 * A run that arrives at a busy session (see `Workflow.RunOptions.onBusy`):
 * `enqueue` waits for its turn in the session's queue in the store, across
 * processes; `interrupt` cancels what holds the session, then runs. And the
 * registry of this process's runs by session that `interrupt` stops.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as SessionStore from "../../SessionStore.js"
import * as WorkflowError from "../../WorkflowError.js"
import type { Any } from "../workflow/model.js"
import { currentBackground, registered } from "./background.js"
import * as eventLog from "./eventLog.js"
import { cancelledWhileRunning } from "./lease.js"
import { type Ids, storedInputOf } from "./model.js"

/**
 * The longest a queued run waits between two looks at its queue when no
 * wake-up comes (a run ahead of it whose caller died, a paused run that
 * ended): 1 second, or a third of its lease when that is shorter, so that
 * each look renews its lease in time.
 */
const queuePollMillis = (leaseMillis: number): number => Math.max(1, Math.min(1000, Math.floor(leaseMillis / 3)))

// -----------------------------------------------------------------------------
// this process's runs, by store and session
// -----------------------------------------------------------------------------

const running = new WeakMap<SessionStore.Service, Map<string, Set<Fiber.RuntimeFiber<unknown, unknown>>>>()

/** The attempts that an `interrupt` run of this process interrupted. */
const interrupted = new WeakSet<Fiber.RuntimeFiber<unknown, unknown>>()

/**
 * `self` (one attempt of a run, holding the session's lock) in a fiber of its
 * own, registered under its session, so that an `interrupt` run of this
 * process can interrupt it. The run is then recorded as it ended (cancelled,
 * nothing of it committed), and its caller gets `RunEnded` with that status
 * (as the caller of a run cancelled while it ran does), not an interruption.
 * An interrupted caller waits for the attempt to end.
 *
 * @internal
 */
export const interruptibleRun = <A, E, R>(
  store: SessionStore.Service,
  ids: Ids,
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E | WorkflowError.RunEnded, R> =>
  Effect.flatMap(Effect.fork(self), (fiber) => {
    const { sessionId } = ids
    let bySession = running.get(store)
    if (bySession === undefined) {
      bySession = new Map()
      running.set(store, bySession)
    }
    let fibers = bySession.get(sessionId)
    if (fibers === undefined) {
      fibers = new Set()
      bySession.set(sessionId, fibers)
    }
    const registered = fibers
    registered.add(fiber)
    return Fiber.await(fiber).pipe(
      Effect.tap(() => Fiber.inheritAll(fiber)),
      Effect.flatMap((exit): Effect.Effect<A, E | WorkflowError.RunEnded> =>
        Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) && interrupted.has(fiber)
          ? Effect.flatMap(endedByInterrupt(store, ids), Effect.fail)
          : exit
      ),
      Effect.onInterrupt(() => Fiber.interrupt(fiber)),
      Effect.ensuring(Effect.sync(() => {
        registered.delete(fiber)
        if (registered.size === 0) running.get(store)?.delete(sessionId)
      }))
    )
  })

/**
 * What the caller of a run that an `interrupt` run stopped is told:
 * `RunEnded` with the status recorded for it (`cancelled`; a run that left
 * no record, `cancelled` too), marked as a cancellation (see
 * `lease.isCancellation`: its events end with `RunCancelled`).
 */
const endedByInterrupt = (
  store: SessionStore.Service,
  { runId, sessionId }: Ids
): Effect.Effect<WorkflowError.RunEnded> =>
  Effect.map(
    Effect.orElseSucceed(store.getRun(runId), () => Option.none<SessionStore.RunLookup>()),
    (found) =>
      Option.isSome(found) && found.value._tag === "Recorded" && found.value.record.status !== "cancelled"
        ? SessionStore.runEnded(found.value.record)
        : cancelledWhileRunning(runId, sessionId)
  )

/** Interrupts this process's runs of a session and waits for them to end. */
const interruptLocal = (store: SessionStore.Service, sessionId: string) =>
  Effect.suspend(() => {
    const fibers = [...(running.get(store)?.get(sessionId) ?? [])]
    for (const fiber of fibers) interrupted.add(fiber)
    return fibers.length === 0 ? Effect.void : Fiber.interruptAll(fibers)
  })

// -----------------------------------------------------------------------------
// interrupt
// -----------------------------------------------------------------------------

/**
 * Cancels what holds the session, then runs `body`: this process's run of
 * the session is interrupted (and waited for); the session's paused run, and
 * its tracked runs running in other processes, are ended as `cancelled`
 * (through the store, as `Workflow.cancel` does: such a run finds out at its
 * next lease renewal or at its commit, and commits nothing).
 *
 * @internal
 */
export const interrupting = <A, E, R>(self: Any, ids: Ids, body: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    yield* interruptLocal(store, ids.sessionId)
    const unfinished = yield* store.activeRuns({ sessionId: ids.sessionId })
    for (const run of unfinished) {
      if (run.runId === ids.runId) continue
      const now = yield* Clock.currentTimeMillis
      yield* store.endRun(run.runId, {
        runId: run.runId,
        sessionId: run.sessionId,
        workflowName: run.workflowName,
        ...(run.userId === undefined ? {} : { userId: run.userId }),
        status: "cancelled",
        input: run.input,
        error: `cancelled: interrupted by run ${ids.runId} of '${self.name}'`,
        startedAt: run.startedAt,
        completedAt: now
      }).pipe(
        Effect.zipRight(eventLog.endedBy(store, run, { _tag: "RunCancelled" }, now)),
        // it ended meanwhile: nothing to cancel
        Effect.catchTags({ RunNotFound: () => Effect.void, RunLost: () => Effect.void })
      )
    }
    return yield* body
  })

// -----------------------------------------------------------------------------
// enqueue
// -----------------------------------------------------------------------------

/**
 * The run id of the queued run the current fiber runs for a caller that took
 * it over (see `adoptStopped`): its entry is in the queue already.
 *
 * @internal
 */
export const currentAdopted: FiberRef.FiberRef<string | undefined> = FiberRef.unsafeMake<string | undefined>(undefined)

/**
 * Takes over a queued background run whose caller stopped (its lease expired,
 * or its process is gone on this host), for this store: of several takers,
 * one wins (the store's conditional write); the run as taken over, to be run
 * here (`runner.adopted`), or none.
 *
 * @internal
 */
export const adoptStopped = (
  store: SessionStore.Service,
  run: SessionStore.QueuedRun,
  leaseMillis: number
): Effect.Effect<Option.Option<SessionStore.QueuedRun>, WorkflowError.SessionStoreError> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const gone = SessionStore.ownerGone(run.owner)
    if (run.carry === undefined || (run.leaseExpiresAt >= now && !gone)) return Option.none()
    return yield* store.adoptQueued(run.sessionId, run.runId, {
      from: run.owner,
      owner: store.owner,
      now,
      leaseExpiresAt: now + leaseMillis,
      gone
    })
  })

/**
 * Logs how a run carried on in the background ended, when it did not end
 * well: a run that paused, slept or waits (`RunPaused`) is not worth a
 * warning.
 *
 * @internal
 */
export const loggedEnd = (what: string) => (cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Option.match(Cause.failureOption(cause), {
    onNone: () => Effect.logWarning(`${what}, ended`, cause),
    onSome: (error) => Predicate.isTagged(error, "RunPaused") ? Effect.void : Effect.logWarning(`${what}, ended`, cause)
  })

/**
 * Puts the run in its session's queue, waits for its turn (the runs queued
 * before it have left, no run of the queue has the session, and the session
 * has no paused run nor a run running elsewhere under a live lease), runs
 * `body`, and leaves the queue however it ends. The run's lease in the queue
 * is renewed all along (every look at the queue renews it); a caller that
 * died stops renewing, and its run is dropped from the queue once its lease
 * expired — at once, by the next caller that waits behind it, when that
 * caller was a process of the same host (`SessionStore.ownerGone`).
 *
 * @internal
 */
export const enqueued = <A, E, R>(
  self: Any,
  ids: Ids,
  input: unknown,
  leaseMillis: number,
  body: Effect.Effect<A, E, R>,
  carryOn: (run: SessionStore.ActiveRun) => Effect.Effect<unknown, unknown, R>,
  adopt: (run: SessionStore.QueuedRun) => Effect.Effect<unknown, unknown, R>,
  carry: SessionStore.QueuedCarry | undefined,
  startedWith: SessionStore.StartedWith | undefined
): Effect.Effect<A, E | WorkflowError.SessionStoreError | WorkflowError.RunLost, R | SessionStore.SessionStore> =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const { runId, sessionId } = ids
    // a run taken over from its stopped caller has its entry already (now this store's)
    const taken = (yield* FiberRef.get(currentAdopted)) === runId
    const pollMillis = queuePollMillis(leaseMillis)
    // subscribed before the run is queued, so that no wake-up is missed
    const wakeUps = yield* Queue.sliding<void>(1)
    yield* store.watchQueue(sessionId).pipe(
      Stream.runForEach(() => Queue.offer(wakeUps, undefined)),
      Effect.catchAll((error) =>
        Effect.logWarning(`sessionflow: cannot watch the queue of session ${sessionId}`, error)
      ),
      Effect.forkScoped
    )
    const now = yield* Clock.currentTimeMillis
    if (!taken) {
      yield* store.enqueueRun({
        runId,
        sessionId,
        workflowName: self.name,
        ...(ids.userId === undefined ? {} : { userId: ids.userId }),
        input: storedInputOf(input),
        owner: store.owner,
        leaseExpiresAt: now + leaseMillis,
        enqueuedAt: now,
        ...(carry === undefined ? {} : { carry }),
        ...(startedWith === undefined ? {} : { startedWith })
      })
    }
    // a run started in the background is registered once it is queued: its
    // starter gets its id now, not when its turn comes
    yield* registered
    const look = Effect.flatMap(
      Clock.currentTimeMillis,
      (at) => store.takeQueueTurn(sessionId, runId, { owner: store.owner, now: at, leaseExpiresAt: at + leaseMillis })
    )
    const lost = new WorkflowError.RunLost({
      runId,
      description:
        "its place in the session's queue was lost: its lease expired (the process stalled longer than the lease)"
    })
    /** the abandoned runs of this workflow this caller carries on (once each) */
    const helped = new Set<string>()
    /**
     * Another unfinished run holds the session (the store gives no turn while
     * one does): paused, or running — also when it was abandoned (its process
     * died), until recovery carries it on or ends it, so that it never runs
     * beside the next run of the queue. An abandoned run of this workflow is
     * carried on from here (in the background, as `DurableRuns` would: of
     * several, one claim wins), so that the queue goes on without a supervisor.
     */
    const helpQueued = Effect.flatMap(store.queuedRuns({ sessionId }), (runs) =>
      Effect.forEach(
        runs.filter((run) => run.runId !== runId && run.workflowName === self.name && run.carry !== undefined),
        (run) =>
          Effect.flatMap(
            adoptStopped(store, run, leaseMillis),
            Option.match({
              onNone: () => Effect.void,
              onSome: (taken) =>
                Effect.asVoid(Effect.forkDaemon(
                  adopt(taken).pipe(
                    Effect.catchAllCause(loggedEnd(`sessionflow: queued run ${taken.runId}, taken over`))
                  )
                ))
            })
          ),
        { discard: true }
      ))
    const helpRunning = Effect.flatMap(
      store.activeRuns({ sessionId, status: "running" }),
      (runs) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) =>
          Effect.forEach(
            runs.filter((run) =>
              run.runId !== runId && run.workflowName === self.name && SessionStore.isAbandoned(run, at) &&
              !helped.has(run.runId)
            ),
            (run) => {
              helped.add(run.runId)
              const background = { registered: Deferred.unsafeMake<void, unknown>(FiberId.none) }
              return Effect.forkDaemon(Effect.ignoreLogged(Effect.locally(carryOn(run), currentBackground, background)))
            },
            { discard: true }
          ))
    )
    const help = Effect.zipRight(helpQueued, helpRunning)
    /**
     * Drops the session's queued runs whose caller is a gone process of this
     * host (`SessionStore.ownerGone`), each only while it is still that
     * caller's, without waiting for their lease; whether it dropped any.
     */
    const dropGone = Effect.flatMap(store.queuedRuns({ sessionId }), (runs) =>
      Effect.map(
        Effect.forEach(
          // (a background run is taken over instead: see `help`)
          runs.filter((run) => run.runId !== runId && run.carry === undefined && SessionStore.ownerGone(run.owner)),
          (run) =>
            Effect.flatMap(
              Clock.currentTimeMillis,
              (at) => store.leaveQueue(sessionId, run.runId, run.owner, SessionStore.droppedRecord(run, at))
            )
        ),
        (dropped) => dropped.some((left) => left)
      ))
    const nextWakeUp = Effect.timeout(Queue.take(wakeUps), Duration.millis(pollMillis)).pipe(
      Effect.catchTag("TimeoutException", () => Effect.void)
    )
    const waitTurn: Effect.Effect<void, WorkflowError.SessionStoreError | WorkflowError.RunLost, R> = Effect.gen(
      function*() {
        while (true) {
          // a store that fails now and then (a lost connection, a lock held past the lock timeout) is
          // looked at again, within the run's lease
          const turn = yield* Effect.retry(look, {
            while: (error) => error._tag === "SessionStoreError",
            schedule: Schedule.spaced(Duration.millis(pollMillis)),
            times: 2
          })
          if (turn === "lost") return yield* lost
          if (turn === "taken") return
          // a run ahead whose caller died on this host leaves the queue at once: look again
          if (yield* Effect.orElseSucceed(dropGone, () => false)) continue
          yield* Effect.catchAll(
            help,
            (error) => Effect.logWarning(`sessionflow: could not look at session ${sessionId}'s queue`, error)
          )
          yield* nextWakeUp
        }
      }
    )
    // while the run runs, its turn is kept (a lost turn is only logged: the
    // session's version check still refuses a commit on a state moved on)
    const keepTurn = look.pipe(
      Effect.tap((turn) =>
        turn === "lost"
          ? Effect.logWarning(`sessionflow: run ${runId} lost its turn in the queue of session ${sessionId}`)
          : Effect.void
      ),
      Effect.catchAll((error) =>
        Effect.logWarning(`sessionflow: could not renew run ${runId}'s turn in the queue`, error)
      ),
      Effect.repeat(Schedule.spaced(Duration.millis(pollMillis))),
      Effect.delay(Duration.millis(pollMillis)),
      Effect.zipRight(Effect.never)
    )
    const leave = store.leaveQueue(sessionId, runId, store.owner).pipe(
      Effect.catchAll((error) => Effect.logWarning(`sessionflow: could not take run ${runId} out of the queue`, error))
    )
    // a background run stopped before its turn (its process shuts down) is not lost: its place is
    // given up to whoever takes it over (`DurableRuns`, the next caller of the queue)
    const release = Effect.flatMap(
      Clock.currentTimeMillis,
      (at) => store.takeQueueTurn(sessionId, runId, { owner: store.owner, now: at, leaseExpiresAt: 0 })
    ).pipe(
      Effect.catchAll((error) => Effect.logWarning(`sessionflow: could not give up run ${runId}'s place`, error))
    )
    let started = false
    return yield* Effect.zipRight(
      waitTurn,
      Effect.raceFirst(Effect.zipRight(Effect.sync(() => (started = true)), body), keepTurn)
    ).pipe(
      Effect.onExit((exit) => {
        if (carry === undefined || Exit.isSuccess(exit)) return Effect.asVoid(leave)
        // a background run that failed before its turn is given up too, not lost (e.g. the store failed)
        if (!started) return Effect.asVoid(release)
        // and so is one that failed in its turn without a trace: no entry, no record (the store failed
        // before it registered); a run that registered or was recorded is told of by its entry or record
        return Effect.retry(store.getRun(runId), { schedule: Schedule.spaced(Duration.millis(pollMillis)), times: 5 })
          .pipe(
            Effect.flatMap((found): Effect.Effect<void> =>
              Option.isNone(found) ? Effect.asVoid(release) : Effect.asVoid(leave)
            ),
            Effect.catchAll(() => Effect.asVoid(leave))
          )
      })
    )
  }).pipe(Effect.scoped)
