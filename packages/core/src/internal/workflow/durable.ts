/**
 * Durable runs of a workflow: carrying on an abandoned run (`resume`) or a
 * paused one (`continue`), ending one (`cancel`), listing them and recovering
 * the abandoned ones. `Workflow` declares them.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as SessionStore from "../../SessionStore.js"
import type {
  Any,
  ContinueOptions,
  EventsOptions,
  Output,
  RecoverOptions,
  Recovered,
  SessionOptions,
  State
} from "../../Workflow.js"
import * as WorkflowError from "../../WorkflowError.js"
import * as eventLog from "../run/eventLog.js"
import * as runner from "../run/runner.js"

/** @internal */
export const resume = Effect.fn("Workflow.resume")(
  function*<W extends Any>(self: W, runId: string, options?: ContinueOptions) {
    return yield* runner.resumeRun(self, runId, options, undefined, undefined)
  }
)

/** @internal */
export const resumeStream = <W extends Any>(self: W, runId: string, options?: ContinueOptions) =>
  runner.eventStream((sink) => runner.resumeRun(self, runId, options, sink, undefined))

/** @internal */
export const continue_ = Effect.fn("Workflow.continue")(
  function*<W extends Any>(self: W, runId: string, response: unknown, options?: ContinueOptions) {
    return yield* runner.resumeRun(self, runId, options, undefined, answerWith(self, runId, response))
  }
)

/** @internal */
export const continueStream = <W extends Any>(self: W, runId: string, response: unknown, options?: ContinueOptions) =>
  runner.eventStream((sink) => runner.resumeRun(self, runId, options, sink, answerWith(self, runId, response)))

/**
 * The answer to a paused run's question: the response (the pausing step
 * decodes it) and the checkpoint of the pause it answers (the claimed run's).
 */
const answerWith = (_self: Any, _runId: string, response: unknown) => (claimed: SessionStore.ActiveRun) => ({
  response,
  checkpoint: claimed.pause?.checkpoint
})

/** @internal */
export const cancel = Effect.fn("Workflow.cancel")(
  function*<W extends Any>(self: W, runId: string, options?: SessionOptions) {
    yield* endUnfinished(self, runId, options, "cancelled", "cancelled")
  }
)

const endUnfinished = (
  self: Any,
  runId: string,
  options: SessionOptions | undefined,
  status: "cancelled" | "abandoned",
  why: string
) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    yield* runner.checkRunId(runId)
    const found = yield* store.getRun(runId)
    const ended = endedOf(self, runId, options, found)
    if (ended !== undefined) return yield* ended
    if (Option.isNone(found) || found.value._tag !== "Active" || found.value.run.workflowName !== self.name) {
      return yield* new WorkflowError.RunNotFound({ runId, description: `no unfinished run of workflow '${self.name}' has this id` })
    }
    const active = found.value.run
    if (active.userId !== undefined) yield* SessionStore.checkOwner(active.sessionId, active.userId, options?.userId ?? self.userId)
    const now = yield* Clock.currentTimeMillis
    yield* store.endRun(runId, {
      runId,
      sessionId: active.sessionId,
      workflowName: active.workflowName,
      ...(active.userId === undefined ? {} : { userId: active.userId }),
      status,
      input: active.input,
      error: why,
      startedAt: active.startedAt,
      completedAt: now
    }).pipe(
      // it ended meanwhile (another cancel, its commit): `RunEnded`, saying how
      Effect.catchTag("RunNotFound", (error) =>
        Effect.flatMap(
          store.getRun(runId),
          (found): Effect.Effect<never, WorkflowError.RunEnded | WorkflowError.RunNotFound> =>
            endedOf(self, runId, options, found) ?? Effect.fail(error)
        ))
    )
  })

/** `RunEnded` when `found` is the record of a run of `self` the caller may see. */
const endedOf = (
  self: Any,
  runId: string,
  options: SessionOptions | undefined,
  found: Option.Option<SessionStore.RunLookup>
): Effect.Effect<never, WorkflowError.RunEnded> | undefined => {
  if (Option.isNone(found) || found.value._tag !== "Recorded") return undefined
  const record = found.value.record
  if (record.workflowName !== self.name) return undefined
  if (record.userId !== undefined && record.userId !== (options?.userId ?? self.userId)) return undefined
  return Effect.fail(new WorkflowError.RunEnded({ runId, sessionId: record.sessionId, status: record.status }))
}

/** @internal */
export const pausedRuns = Effect.fn(
  "Workflow.pausedRuns"
)(
  function*<W extends Any>(self: W, options?: { readonly sessionId?: string | undefined }) {
    const store = yield* SessionStore.SessionStore
    return yield* store.activeRuns({ workflowName: self.name, status: "paused", sessionId: options?.sessionId })
  }
)

/** @internal */
export const unfinishedRuns = Effect.fn("Workflow.unfinishedRuns")(
  function*<W extends Any>(self: W, options?: { readonly sessionId?: string | undefined }) {
    const store = yield* SessionStore.SessionStore
    const now = yield* Clock.currentTimeMillis
    const runs = yield* store.activeRuns({ workflowName: self.name, sessionId: options?.sessionId })
    return runs.map((run) => ({ ...run, abandoned: run.status === "running" && run.leaseExpiresAt < now }))
  }
)

/** @internal */
export const recover = Effect.fn("Workflow.recover")(
  function*<W extends Any>(self: W, options?: RecoverOptions) {
    const runs = yield* unfinishedRuns(self)
    const out: Array<Recovered<Output<W>, State<W>>> = []
    for (const run of runs) {
      if (!run.abandoned) continue
      const outcome = options?.mode === "abandon"
        ? yield* Effect.exit(Effect.as(endUnfinished(self, run.runId, { userId: run.userId }, "abandoned", "abandoned: its process stopped"), "abandoned" as const))
        : yield* Effect.exit(runner.resumeRun(self, run.runId, { ...options, userId: run.userId }, undefined, undefined))
      out.push({ runId: run.runId, sessionId: run.sessionId, outcome: outcome as Recovered<Output<W>, State<W>>["outcome"] })
    }
    return out
  }
)

/** @internal */
export const events = <W extends Any>(self: W, runId: string, options?: EventsOptions) =>
  Stream.unwrap(Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const found = yield* store.getRun(runId)
    const run = Option.map(found, (lookup) => lookup._tag === "Active" ? lookup.run : lookup.record)
    if (Option.isNone(run) || run.value.workflowName !== self.name) {
      return yield* new WorkflowError.RunNotFound({ runId, description: `no run of workflow '${self.name}' has this id` })
    }
    const { sessionId, userId } = run.value
    if (userId !== undefined) yield* SessionStore.checkOwner(sessionId, userId, options?.userId ?? self.userId)
    return eventLog.follow(store, runId, options?.after ?? -1, options?.pollInterval === undefined ? {} : { pollInterval: options.pollInterval })
  })).pipe(Stream.withSpan("Workflow.events"))

/** @internal */
export const queuedRuns = Effect.fn("Workflow.queuedRuns")(
  function*<W extends Any>(self: W, options?: { readonly sessionId?: string | undefined }) {
    const store = yield* SessionStore.SessionStore
    return yield* store.queuedRuns({ workflowName: self.name, sessionId: options?.sessionId })
  }
)
