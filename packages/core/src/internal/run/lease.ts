/**
 * The lease of a tracked run: its unfinished-run entry (who runs it, until
 * when), and the renewal that keeps it while its steps run.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as SessionStore from "../../SessionStore.js"
import * as WorkflowError from "../../WorkflowError.js"
import { type Attempt, type Opened, startedWithOf } from "./model.js"
import { shapeOf } from "./shape.js"

/**
 * The unfinished-run entry of a run in `status` at `now`: a running one is
 * this store's until its lease expires, a paused one nobody's.
 *
 * @internal
 */
export const entry = (run: Opened, status: SessionStore.ActiveStatus, now: number): SessionStore.ActiveRun => ({
  runId: run.ids.runId,
  sessionId: run.ids.sessionId,
  workflowName: run.self.name,
  ...(run.ids.userId === undefined ? {} : { userId: run.ids.userId }),
  status,
  input: run.storedInput,
  ...(run.options?.additionalData === undefined ? {} : { additionalData: { ...run.options.additionalData } }),
  owner: status === "running" ? run.store.owner : "",
  leaseExpiresAt: status === "running" ? now + run.leaseMillis : 0,
  baseVersion: run.version,
  ...(Option.isNone(run.stored) ? { initialState: run.encodedInitial } : {}),
  durability: run.durability,
  shape: shapeOf(run.self),
  ...startedWithField(run),
  startedAt: run.startedAt,
  updatedAt: now
})

const startedWithField = (run: Opened) => {
  const startedWith = startedWithOf(run.options)
  return startedWith === undefined ? {} : { startedWith }
}

/**
 * `self` holding the run's lease: a tracked run renews it every third of its
 * duration while `self` runs, and losing the run (taken over, cancelled)
 * interrupts `self`: at its next renewal when another process cancelled it or
 * took it over, at once when it is cancelled through this store (see
 * {@link stopHere}). An untracked run holds no lease.
 *
 * @internal
 */
export const leased =
  (run: Attempt) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | WorkflowError.RunLost | WorkflowError.RunEnded, R> => {
    if (!run.tracked) return self
    const key = keyOf(run.store, run.ids.runId)
    return Effect.acquireUseRelease(
      Effect.sync(() => {
        const stop = Deferred.unsafeMake<never, WorkflowError.RunEnded>(FiberId.none)
        held.set(key, { stop, sessionId: run.ids.sessionId })
        return stop
      }),
      (stop) => Effect.raceFirst(self, Effect.raceFirst(renew(run), Deferred.await(stop))),
      (stop) =>
        Effect.sync(() => {
          if (held.get(key)?.stop === stop) held.delete(key)
        })
    )
  }

/**
 * The steps of the tracked runs this process runs, by store (its `owner`)
 * and run id: how a cancel through the same store stops a run at once.
 */
const held = new Map<
  string,
  { readonly stop: Deferred.Deferred<never, WorkflowError.RunEnded>; readonly sessionId: string }
>()

const keyOf = (store: SessionStore.Service, runId: string) => `${store.owner}\u0000${runId}`

/**
 * Marks the `RunEnded` errors that say a run was cancelled while it ran (see
 * {@link cancelledWhileRunning}): a property, as an error travelling in a
 * cause may be a copy of the one raised.
 */
const cancellation: unique symbol = Symbol.for("@sessionflow/core/internal/Cancellation")

/**
 * The outcome a run's caller gets when the run was cancelled while it ran
 * (here or in another process): `RunEnded` with status `cancelled`.
 *
 * @internal
 */
export const cancelledWhileRunning = (runId: string, sessionId: string): WorkflowError.RunEnded => {
  const error = new WorkflowError.RunEnded({ runId, sessionId, status: "cancelled" })
  Object.defineProperty(error, cancellation, { value: true })
  return error
}

/**
 * Whether `u` is how a run learned it was cancelled while it ran (its
 * cancellation is recorded already: nothing more is written in its name).
 *
 * @internal
 */
export const isCancellation = (u: unknown): boolean =>
  typeof u === "object" && u !== null && (u as { readonly [cancellation]?: unknown })[cancellation] === true

const refusedAnswer: unique symbol = Symbol.for("@sessionflow/core/internal/RefusedAnswer")

/**
 * Marks the `ResponseDecodeError` of an answer the paused step refused, after
 * which the run waits again (its `RunPaused` said so: no `RunFailed` follows).
 *
 * @internal
 */
export const markRefused = (error: unknown): void => {
  if (typeof error === "object" && error !== null) Object.defineProperty(error, refusedAnswer, { value: true })
}

/**
 * Whether `u` is a refused answer's error (see {@link markRefused}).
 *
 * @internal
 */
export const isRefusedAnswer = (u: unknown): boolean =>
  typeof u === "object" && u !== null && (u as { readonly [refusedAnswer]?: unknown })[refusedAnswer] === true

/**
 * Stops the steps of a run this store runs in this process, if it does: its
 * caller gets `RunEnded` (cancelled). The run must have been ended in the
 * store first (`endRun`), so that nothing of it can be committed.
 *
 * @internal
 */
export const stopHere = (store: SessionStore.Service, runId: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const found = held.get(keyOf(store, runId))
    return found === undefined ? Effect.void : Deferred.fail(found.stop, cancelledWhileRunning(runId, found.sessionId))
  })

/**
 * A run this process held that is no longer its own: when its record says it
 * was cancelled, its caller is told so (`RunEnded`, cancelled); else
 * `RunLost` as it is (taken over, or ended otherwise).
 *
 * @internal
 */
export const lostOrCancelled = (
  store: SessionStore.Service,
  runId: string,
  lost: WorkflowError.RunLost
): Effect.Effect<never, WorkflowError.RunLost | WorkflowError.RunEnded> =>
  Effect.flatMap(
    Effect.orElseSucceed(store.getRun(runId), () => Option.none<SessionStore.RunLookup>()),
    (found) =>
      Effect.fail(
        Option.isSome(found) && found.value._tag === "Recorded" && found.value.record.status === "cancelled"
          ? cancelledWhileRunning(runId, found.value.record.sessionId)
          : lost
      )
  )

const renew = ({ ids: { runId }, leaseMillis, store }: Attempt) => {
  const every = Duration.millis(Math.max(1, Math.floor(leaseMillis / 3)))
  return Effect.flatMap(
    Clock.currentTimeMillis,
    (at) => store.updateRun(runId, store.owner, { leaseExpiresAt: at + leaseMillis })
  ).pipe(
    Effect.catchTag(
      "SessionStoreError",
      (error) => Effect.logWarning(`sessionflow: could not renew the lease of run ${runId}`, error)
    ),
    Effect.repeat(Schedule.spaced(every)),
    Effect.delay(every),
    Effect.zipRight(Effect.never)
  )
}
