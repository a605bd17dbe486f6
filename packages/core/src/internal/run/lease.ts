/**
 * The lease of a tracked run: its unfinished-run entry (who runs it, until
 * when), and the renewal that keeps it while its steps run.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as SessionStore from "../../SessionStore.js"
import type * as WorkflowError from "../../WorkflowError.js"
import type { Attempt, Opened } from "./model.js"
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
  startedAt: run.startedAt,
  updatedAt: now
})

/**
 * `self` holding the run's lease: a tracked run renews it every third of its
 * duration while `self` runs, and losing the run (taken over, cancelled)
 * interrupts `self`. An untracked run holds no lease.
 *
 * @internal
 */
export const leased = (run: Attempt) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | WorkflowError.RunLost, R> =>
  !run.tracked ? self : Effect.raceFirst(self, renew(run))

const renew = ({ ids: { runId }, leaseMillis, store }: Attempt) => {
  const every = Duration.millis(Math.max(1, Math.floor(leaseMillis / 3)))
  return Effect.flatMap(Clock.currentTimeMillis, (at) => store.updateRun(runId, store.owner, { leaseExpiresAt: at + leaseMillis })).pipe(
    Effect.catchTag("SessionStoreError", (error) => Effect.logWarning(`sessionflow: could not renew the lease of run ${runId}`, error)),
    Effect.repeat(Schedule.spaced(every)),
    Effect.delay(every),
    Effect.zipRight(Effect.never)
  )
}
