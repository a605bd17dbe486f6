/**
 * Automatic recovery of durable runs: {@link layer} runs a supervisor in the
 * background that finds the runs of its workflows whose process died (their
 * lease expired, or, for a process of this host, at its first look after the
 * process is gone: see `SessionStore.ownerGone`) and resumes them, from their
 * last journaled step. Several
 * processes may run it over one store: each run is claimed by exactly one of
 * them, the others leave it. A run whose resume keeps failing is ended after
 * `maxAttempts`, recorded as `abandoned` with the reason. A run started by
 * another shape of its workflow (`WorkflowChanged`) is left alone, logged once:
 * during a rolling deploy a process of the old version may still resume it.
 * A run it is resuming when it stops (its layer's scope closes) is not
 * cancelled: it is left unfinished, its lease given up, for another process.
 *
 * It also wakes the paused runs of its workflows whose time has come: a
 * durable sleep that ended (`Step.sleep`), a question or a wait for a signal
 * whose timeout passed, a wait whose signal was stored as the run paused.
 * Each is carried on by exactly one process (the one whose claim of the run
 * at its pause wins), at most `pollInterval` after its time (sooner when it
 * knew the time at its last look).
 *
 * ```ts no-check
 * const Recovery = DurableRuns.layer({ workflows: [orders, shopping] })
 * // provide it (with a SessionStore and the workflows' requirements) next to your app
 * ```
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { currentBackground } from "./internal/run/background.js"
import * as busyRuns from "./internal/run/busy.js"
import * as eventLog from "./internal/run/eventLog.js"
import { leaseMillisOf } from "./internal/run/model.js"
import * as runner from "./internal/run/runner.js"
import * as durable from "./internal/workflow/durable.js"
import * as SessionStore from "./SessionStore.js"
import * as Workflow from "./Workflow.js"

/**
 * @since 0.1.0
 * @category options
 */
export interface Options<W extends Workflow.Any> {
  /** the workflows whose runs it resumes (runs of other workflows are left alone) */
  readonly workflows: ReadonlyArray<W>
  /**
   * the longest wait between two looks at the store's unfinished runs (one
   * query each); between them it wakes when the next known lease expires.
   * Default 1 second
   */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** resumes of one run that may fail before it is ended as `abandoned`; default 3 */
  readonly maxAttempts?: number | undefined
  /** the most runs resumed at once by this process; default 4 */
  readonly concurrency?: number | undefined
  /** the lease of a resumed run (see `Workflow.RunOptions.leaseDuration`) */
  readonly leaseDuration?: Duration.DurationInput | undefined
}

/**
 * The defaults of {@link Options}.
 *
 * @since 0.1.0
 * @category options
 */
export const defaults = {
  pollInterval: Duration.seconds(1),
  maxAttempts: 3,
  concurrency: 4
} as const

/** Errors of a resume that mean another process has (or had) the run: nothing to count. */
const takenElsewhere = new Set(["RunInProgress", "RunLost", "RunEnded", "RunNotFound", "PauseMismatch"])

const tagOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : undefined

/**
 * The supervisor itself: runs until interrupted (see {@link layer}). A failed
 * look at the store is logged and tried again after `pollInterval`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const supervise = <W extends Workflow.Any>(
  options: Options<W>
): Effect.Effect<never, never, SessionStore.SessionStore | Workflow.Context<W>> =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const byName = new Map<string, W>(options.workflows.map((workflow) => [workflow.name, workflow]))
    const pollMillis = Duration.toMillis(Duration.decode(options.pollInterval ?? defaults.pollInterval))
    const maxAttempts = Math.max(1, options.maxAttempts ?? defaults.maxAttempts)
    const semaphore = yield* Effect.makeSemaphore(Math.max(1, options.concurrency ?? defaults.concurrency))
    /** failed resumes per run id, with the last failure */
    const failures = new Map<string, { readonly count: number; readonly last: string }>()
    /** the runs this process is resuming or ending now */
    const busy = new Set<string>()
    /**
     * the runs started by another shape of their workflow (`WorkflowChanged`):
     * left to a process that runs that shape (a rolling deploy), never ended here
     */
    const foreign = new Set<string>()

    const leaseOption = options.leaseDuration === undefined ? {} : { leaseDuration: options.leaseDuration }
    /** an abandoned run resumed, or a paused one that is due woken */
    const resume = (self: W, run: SessionStore.ActiveRun) =>
      Effect.gen(function*() {
        // stopped with the supervisor (a shutdown), the run is not cancelled: it is
        // left unfinished, its lease given up, for the next supervisor (as a background run)
        const registered = yield* Deferred.make<void, unknown>()
        const attempt: Effect.Effect<unknown, unknown, SessionStore.SessionStore | Workflow.Context<W>> =
          run.status === "paused"
            ? durable.wake(self, run, leaseOption)
            : Workflow.resume(self, run.runId, { userId: run.userId, ...leaseOption })
        const exit = yield* Effect.exit(attempt.pipe(Effect.locally(currentBackground, { registered })))
        if (Exit.isSuccess(exit)) {
          failures.delete(run.runId)
          return yield* Effect.logInfo(
            `sessionflow: ${run.status === "paused" ? "woke" : "resumed"} run ${run.runId} of '${self.name}': completed`
          )
        }
        if (Cause.isInterruptedOnly(exit.cause)) return
        const error = Cause.squash(exit.cause)
        const tag = tagOf(error)
        if (tag !== undefined && takenElsewhere.has(tag)) return
        if (tag === "WorkflowChanged") {
          foreign.add(run.runId)
          return yield* Effect.logWarning(
            `sessionflow: run ${run.runId} of '${self.name}' was started by another ` +
              `version of the workflow: left to a process that runs it (or to Workflow.recover)`,
            error
          )
        }
        // the run may have ended (its steps failed, recorded) or paused (again): that is its outcome
        const after = yield* Effect.orElseSucceed(store.getRun(run.runId), () => Option.none())
        const stuck = Option.isSome(after) && after.value._tag === "Active" && (run.status === "paused"
          ? after.value.run.status === "paused" && after.value.run.pause?.key === run.pause?.key
          : after.value.run.status === "running")
        if (!stuck) {
          failures.delete(run.runId)
          const how = Option.isSome(after) && after.value._tag === "Active" ? "paused" : `ended (${tag ?? "failed"})`
          return yield* Effect.logInfo(`sessionflow: resumed run ${run.runId} of '${self.name}': ${how}`)
        }
        const count = (failures.get(run.runId)?.count ?? 0) + 1
        const last = error instanceof Error ? `${tag ?? error.name}: ${error.message}` : String(error)
        failures.set(run.runId, { count, last })
        yield* Effect.logWarning(
          `sessionflow: resuming run ${run.runId} of '${self.name}' failed (${count} of ${maxAttempts}): ${last}`
        )
      })

    /** ends a run whose resumes kept failing, if it is still the listed owner's (nobody took it meanwhile) */
    const giveUp = (self: W, run: SessionStore.ActiveRun, failed: { readonly count: number; readonly last: string }) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const error = `abandoned: resuming it failed ${failed.count} times; last: ${failed.last}`
        const ended = yield* Effect.exit(store.endRun(run.runId, {
          runId: run.runId,
          sessionId: run.sessionId,
          workflowName: run.workflowName,
          ...(run.userId === undefined ? {} : { userId: run.userId }),
          status: "abandoned",
          input: run.input,
          error,
          startedAt: run.startedAt,
          completedAt: now
        }, run.owner))
        failures.delete(run.runId)
        if (Exit.isSuccess(ended)) {
          yield* eventLog.endedBy(store, run, { _tag: "RunFailed", error }, now)
          return yield* Effect.logWarning(`sessionflow: gave up run ${run.runId} of '${self.name}': ${error}`)
        }
        const tag = tagOf(Cause.squash(ended.cause))
        if (tag === undefined || !takenElsewhere.has(tag)) {
          yield* Effect.logWarning(`sessionflow: could not end run ${run.runId} of '${self.name}'`, ended.cause)
        }
      })

    /** one look at the unfinished runs: starts what is due, returns when to look next */
    const tick = Effect.gen(function*() {
      const running = yield* store.activeRuns({ status: "running" })
      const now = yield* Clock.currentTimeMillis
      // the paused runs due before the next look, so that it looks again when they are
      const waking = yield* store.activeRuns({ status: "paused", dueBy: now + pollMillis })
      let next = now + pollMillis
      const listed = new Set<string>()
      for (const run of [...running, ...waking]) {
        const self = byName.get(run.workflowName)
        if (self === undefined) continue
        listed.add(run.runId)
        if (busy.has(run.runId) || foreign.has(run.runId)) continue
        // a run whose process is gone (on this host) is taken over at once, else when its lease expires
        if (run.status === "running" && !SessionStore.isAbandoned(run, now)) {
          next = Math.min(next, run.leaseExpiresAt + 1)
          continue
        }
        const wakeAt = run.pause?.wakeAt
        if (run.status === "paused" && (wakeAt === undefined || wakeAt > now)) {
          if (wakeAt !== undefined) next = Math.min(next, wakeAt)
          continue
        }
        const failed = failures.get(run.runId)
        const work = failed !== undefined && failed.count >= maxAttempts ? giveUp(self, run, failed) : resume(self, run)
        busy.add(run.runId)
        yield* Effect.forkScoped(
          semaphore.withPermits(1)(work).pipe(Effect.ensuring(Effect.sync(() => busy.delete(run.runId))))
        )
      }
      // queued background runs whose caller stopped before their turn are taken over and run here
      for (const queued of yield* store.queuedRuns({})) {
        const self = byName.get(queued.workflowName)
        if (self === undefined || queued.carry === undefined || busy.has(queued.runId)) continue
        if (queued.leaseExpiresAt >= now && !SessionStore.ownerGone(queued.owner)) {
          next = Math.min(next, queued.leaseExpiresAt + 1)
          continue
        }
        const taken = yield* busyRuns.adoptStopped(store, queued, leaseMillisOf(leaseOption))
        if (Option.isNone(taken)) continue
        busy.add(queued.runId)
        yield* Effect.forkScoped(
          runner.adopted(self, taken.value).pipe(
            Effect.catchAllCause(
              busyRuns.loggedEnd(`sessionflow: queued run ${queued.runId} of '${self.name}', taken over`)
            ),
            Effect.ensuring(Effect.sync(() => busy.delete(queued.runId)))
          )
        )
      }
      for (const runId of failures.keys()) if (!listed.has(runId) && !busy.has(runId)) failures.delete(runId)
      for (const runId of foreign) if (!listed.has(runId)) foreign.delete(runId)
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
  }).pipe(Effect.annotateLogs("module", "DurableRuns")) as Effect.Effect<
    never,
    never,
    SessionStore.SessionStore | Workflow.Context<W>
  >

/**
 * Runs {@link supervise} in the background for the life of the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <W extends Workflow.Any>(
  options: Options<W>
): Layer.Layer<never, never, SessionStore.SessionStore | Workflow.Context<W>> =>
  Layer.scopedDiscard(Effect.forkScoped(supervise(options)))
