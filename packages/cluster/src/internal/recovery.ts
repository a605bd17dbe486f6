/**
 * A runner's recovery loop: the unfinished runs nobody carries on (their
 * owner stopped: its lease expired, or it gave it up when its shard moved,
 * or its outcome could not be stored, `RunUnfinished`) are sent, as a
 * `Resume`, to their session's entity by the runner that holds the session's
 * shard. The entity carries each on in the session's mailbox, after the
 * operations before it, from its journal; taking the run is the store's one
 * conditional write (`claimRun`), so a run never has two owners.
 *
 * @internal
 */
import type * as EntityId from "@effect/cluster/EntityId"
import * as Sharding from "@effect/cluster/Sharding"
import { SessionStore, type Workflow, WorkflowError } from "@sessionflow/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as protocol from "./protocol.js"

/** @internal */
export interface Options {
  readonly workflows: ReadonlyArray<Workflow.Any>
  /** the longest wait between two looks at the unfinished runs (default 1 second) */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** resumes of one run that may fail in this process before it is left alone (default 3) */
  readonly maxAttempts?: number | undefined
}

const defaults = { pollInterval: Duration.seconds(1), maxAttempts: 3, concurrency: 4 } as const

/** Errors of a resume that mean the run is (or was) another's, or ended: nothing to count. */
const takenElsewhere = new Set(["RunInProgress", "RunLost", "RunEnded", "RunNotFound", "PauseMismatch"])

const tagOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : undefined

/**
 * The loop itself: runs until interrupted. A failed look at the store is
 * logged and tried again after `pollInterval`.
 */
const supervise = (
  options: Options
): Effect.Effect<never, never, Sharding.Sharding | SessionStore.SessionStore> =>
  Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const store = yield* SessionStore.SessionStore
    const client = yield* protocol.SessionEntity.client
    const names = new Set(options.workflows.map((wf) => wf.name))
    const pollMillis = Duration.toMillis(Duration.decode(options.pollInterval ?? defaults.pollInterval))
    const maxAttempts = Math.max(1, options.maxAttempts ?? defaults.maxAttempts)
    const semaphore = yield* Effect.makeSemaphore(defaults.concurrency)
    /** the runs sent to their entity and not answered yet */
    const busy = new Set<string>()
    /** failed resumes per run id (the run still unfinished after them) */
    const failures = new Map<string, number>()

    /** whether this runner holds the shard of the run's session */
    const holds = (run: SessionStore.ActiveRun): boolean => {
      const entityId = protocol.entityId(run.workflowName, run.sessionId) as EntityId.EntityId
      return sharding.hasShardId(sharding.getShardId(entityId, protocol.SessionEntity.getShardGroup(entityId)))
    }

    const resume = (run: SessionStore.ActiveRun) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(
          client(protocol.entityId(run.workflowName, run.sessionId)).Resume({
            workflow: run.workflowName,
            runId: run.runId,
            ...(run.userId === undefined ? {} : { userId: run.userId })
          })
        )
        if (Exit.isSuccess(exit)) {
          failures.delete(run.runId)
          return yield* Effect.logInfo(`sessionflow: carried on run ${run.runId} of '${run.workflowName}': completed`)
        }
        if (Cause.isInterruptedOnly(exit.cause)) return
        const error = Cause.squash(exit.cause)
        const tag = tagOf(error)
        if (tag !== undefined && takenElsewhere.has(tag)) return
        // not delivered (the shard moving, the runner stopping): whoever holds the shard next sends it again
        if (!WorkflowError.isWorkflowError(error)) {
          return yield* Effect.logDebug(`sessionflow: could not send run ${run.runId} to its entity`, error)
        }
        // it may have ended (its steps failed, recorded) or paused: that is its outcome
        const after = yield* Effect.orElseSucceed(store.getRun(run.runId), () => undefined)
        if (after === undefined || after._tag === "None" || after.value._tag !== "Active") {
          failures.delete(run.runId)
          return yield* Effect.logInfo(`sessionflow: carried on run ${run.runId}: ended (${tag ?? "failed"})`)
        }
        if (after.value.run.status !== "running") {
          failures.delete(run.runId)
          return
        }
        const count = (failures.get(run.runId) ?? 0) + 1
        failures.set(run.runId, count)
        yield* Effect.logWarning(
          `sessionflow: carrying on run ${run.runId} of '${run.workflowName}' failed (${count} of ${maxAttempts})` +
            (count >= maxAttempts ? ": left alone here (Workflow.recover, DurableRuns)" : ""),
          error
        )
      })

    const tick = Effect.gen(function*() {
      const running = yield* store.activeRuns({ status: "running" })
      const now = yield* Clock.currentTimeMillis
      let next = now + pollMillis
      const listed = new Set<string>()
      for (const run of running) {
        if (!names.has(run.workflowName)) continue
        listed.add(run.runId)
        if (busy.has(run.runId) || (failures.get(run.runId) ?? 0) >= maxAttempts) continue
        // a live owner's run is left to it (its lease), a gone one's is carried on
        if (!SessionStore.isAbandoned(run, now)) {
          next = Math.min(next, run.leaseExpiresAt + 1)
          continue
        }
        // by the runner that holds the session's shard only: one sender per run
        if (!holds(run)) continue
        busy.add(run.runId)
        yield* Effect.forkScoped(
          semaphore.withPermits(1)(resume(run)).pipe(Effect.ensuring(Effect.sync(() => busy.delete(run.runId))))
        )
      }
      for (const runId of failures.keys()) if (!listed.has(runId) && !busy.has(runId)) failures.delete(runId)
      return next - now
    })

    const loop = tick.pipe(
      Effect.catchAll((error) =>
        Effect.as(Effect.logWarning("sessionflow: could not list the unfinished runs", error), pollMillis)
      ),
      Effect.flatMap((wait) => Effect.sleep(Duration.millis(Math.max(0, wait)))),
      Effect.forever
    )
    return yield* Effect.scoped(loop)
  }).pipe(Effect.annotateLogs("module", "ClusterPlacement.recovery"))

/** {@link supervise} in the background for the life of the layer. @internal */
export const layer = (options: Options): Layer.Layer<never, never, Sharding.Sharding | SessionStore.SessionStore> =>
  Layer.scopedDiscard(Effect.forkScoped(supervise(options)))
