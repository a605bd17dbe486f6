/**
 * Durable runs of a workflow: carrying on an abandoned run (`resume`) or a
 * paused one (`continue`), ending one (`cancel`), listing them and recovering
 * the abandoned ones. `Workflow` declares them.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SessionStore from "../../SessionStore.js"
import type {
  Any,
  ContinueOptions,
  EventsOptions,
  Output,
  PruneOptions,
  Recovered,
  RecoverOptions,
  RunOptions,
  RunStatus,
  SessionOptions,
  StartedRun,
  State
} from "../../Workflow.js"
import * as WorkflowError from "../../WorkflowError.js"
import { jsonProblem } from "../json.js"
import { currentBackground } from "../run/background.js"
import * as eventLog from "../run/eventLog.js"
import { stopHere } from "../run/lease.js"
import { isTagged } from "../run/model.js"
import { unfinished } from "../run/open.js"
import * as runner from "../run/runner.js"
import { decodeSignal, signalSchemas } from "../step/executors.js"
import { type Answer, currentSignalListener } from "../step/questions.js"

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
    return yield* runner.resumeRun(self, runId, options, undefined, answerWith(self, runId, response), questionOnly)
  }
)

/** @internal */
export const continueStream = <W extends Any>(self: W, runId: string, response: unknown, options?: ContinueOptions) =>
  runner.eventStream((sink) =>
    runner.resumeRun(self, runId, options, sink, answerWith(self, runId, response), questionOnly)
  )

/** A continue answers a person's question: a sleeping run or one waiting for a signal is refused, as it is. */
const questionOnly = (run: SessionStore.ActiveRun) =>
  run.pause?.kind === "sleep"
    ? Effect.fail(
      new WorkflowError.RunNotFound({
        runId: run.runId,
        description: `the run sleeps until ${new Date(run.pause.wakeAt ?? 0).toISOString()}: it asks no question`
      })
    )
    : run.pause?.kind === "signal"
    ? Effect.fail(
      new WorkflowError.RunNotFound({
        runId: run.runId,
        description: `the run waits for signal '${run.pause.signal}' (Workflow.signal): it asks no question`
      })
    )
    : Effect.void

/**
 * How a paused run wakes now, if it is due: the end of its sleep, the signal
 * it waits for (stored and not taken yet), or its timeout; undefined when
 * nothing is due.
 */
const dueAnswer = (run: SessionStore.ActiveRun, now: number) =>
  Effect.gen(function*() {
    const pause = run.pause
    if (run.status !== "paused" || pause === undefined) return undefined
    const checkpoint = pause.checkpoint
    if (pause.kind === "sleep") {
      return pause.wakeAt !== undefined && pause.wakeAt <= now
        ? { response: null, checkpoint } satisfies Answer
        : undefined
    }
    if (pause.kind === "signal" && pause.signal !== undefined) {
      const store = yield* SessionStore.SessionStore
      const taken = new Set(run.journal?.signals)
      const stored = yield* store.signals(run.runId, { name: pause.signal })
      const first = stored.find((signal) => !taken.has(signal.seq))
      if (first !== undefined) return { response: first.value, checkpoint, seq: first.seq } satisfies Answer
    }
    return pause.timeoutAt !== undefined && pause.timeoutAt <= now
      ? { response: null, checkpoint, timedOut: true } satisfies Answer
      : undefined
  })

/**
 * Wakes a paused run that is due (see `dueAnswer`), carrying it on in this
 * process at the pause it waits at (a run that went on meanwhile is
 * `PauseMismatch`, one another process took `RunInProgress`); `None` when
 * nothing is due.
 *
 * @internal
 */
export const wake = <W extends Any>(self: W, run: SessionStore.ActiveRun, options?: ContinueOptions) =>
  wakeTelling(self, run, options, undefined)

/**
 * `wake`, telling `taken` which signal the run was given (its `seq`) when it
 * woke to one: the first of its name not taken yet, as its wait takes them.
 */
const wakeTelling = <W extends Any>(
  self: W,
  run: SessionStore.ActiveRun,
  options: ContinueOptions | undefined,
  taken: ((seq: number | undefined) => void) | undefined
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const answer = yield* dueAnswer(run, now)
    if (answer === undefined || run.pause === undefined) return Option.none()
    const output = yield* runner.resumeRun(
      self,
      run.runId,
      { ...options, userId: run.userId, pause: run.pause.key },
      undefined,
      (claimed) => ({ ...answer, checkpoint: claimed.pause?.checkpoint }),
      undefined,
      taken === undefined ? undefined : (given) => taken(given.seq)
    )
    return Option.some(output)
  })

/** @internal */
export const signal = Effect.fn("Workflow.signal")(
  function*<W extends Any>(self: W, runId: string, name: string, value: unknown, options?: ContinueOptions) {
    const store = yield* SessionStore.SessionStore
    yield* runner.checkRunId(runId)
    const refuse = (description: string, cause?: unknown) =>
      new WorkflowError.SignalDecodeError({
        runId,
        signal: name,
        description,
        ...(cause === undefined ? {} : { cause })
      })
    const schemas = signalSchemas(self.steps, name)
    if (schemas.length === 0) return yield* refuse(`workflow '${self.name}' has no Step.waitFor for this signal`)
    const problem = jsonProblem(value)
    if (problem !== undefined) return yield* refuse(`the value is not JSON (${problem.description})`)
    for (const schema of schemas) yield* decodeSignal(name, schema, value, runId)
    yield* unfinished(self, runId, options, false)
    const seq = yield* store.addSignal(runId, name, value).pipe(
      // it ended meanwhile: `RunEnded`, saying how
      Effect.catchTag("RunNotFound", (error) =>
        Effect.flatMap(
          store.getRun(runId),
          (found): Effect.Effect<never, WorkflowError.RunEnded | WorkflowError.RunNotFound> =>
            endedOf(self, runId, options, found) ?? Effect.fail(error)
        ))
    )
    const kept = { _tag: "Kept" as const, runId, signal: name, seq }
    // the run waits for it now: carried on here (else the wait that comes takes it)
    const found = yield* store.getRun(runId)
    if (Option.isNone(found) || found.value._tag !== "Active") return kept
    const run = found.value.run
    if (run.status !== "paused" || run.pause?.kind !== "signal" || run.pause.signal !== name) return kept
    // the seqs of the signals the run's waits took while this process carried it on
    const taken = new Set<number>()
    let given: number | undefined
    const woken = yield* wakeTelling(self, run, options, (seq) => {
      given = seq
      if (seq !== undefined) taken.add(seq)
    }).pipe(
      Effect.locally(currentSignalListener, (seq) => taken.add(seq)),
      // another process gave it (or woke it) first: the signal stays for the run's next wait
      Effect.catchIf(
        (error: unknown) => isTagged(error, "RunInProgress") || isTagged(error, "PauseMismatch"),
        () => Effect.succeed(Option.none())
      ),
      // the waits took earlier signals: this one is kept for the run's next wait, or, when
      // the run ended meanwhile, was never taken (`RunEnded`)
      Effect.catchIf(
        (error: unknown) => given !== undefined && !taken.has(seq) && !isTagged(error, "SessionStoreError"),
        (error) => isTagged(error, "RunPaused") ? Effect.succeed(Option.none()) : endedNow(self, runId, options, error)
      )
    )
    if (Option.isNone(woken)) return kept
    if (!taken.has(seq)) {
      // it completed having taken an earlier signal: this one was never taken
      return yield* endedNow(
        self,
        runId,
        options,
        new WorkflowError.RunNotFound({ runId, description: "the run ended" })
      )
    }
    const delivered: SignalResult<typeof woken.value> = {
      _tag: "Delivered",
      runId,
      signal: name,
      seq,
      output: woken.value
    }
    return delivered
  }
)

/**
 * What a signal's caller is told when the run it woke took an earlier signal
 * and ended: `RunEnded` as recorded (its signal was never taken), else `error`.
 */
const endedNow = <E>(
  self: Any,
  runId: string,
  options: ContinueOptions | undefined,
  error: E
): Effect.Effect<never, E | WorkflowError.RunEnded, SessionStore.SessionStore> =>
  Effect.flatMap(
    Effect.orElseSucceed(
      Effect.flatMap(SessionStore.SessionStore, (store) => store.getRun(runId)),
      () => Option.none()
    ),
    (found): Effect.Effect<never, E | WorkflowError.RunEnded> =>
      endedOf(self, runId, options, found) ?? Effect.fail(error)
  )

/**
 * What `Workflow.signal` did with a signal: kept for the run's next wait for
 * it, or given to the run that waited for it, which was carried on (`output`).
 *
 * @internal
 */
export type SignalResult<O> =
  | { readonly _tag: "Kept"; readonly runId: string; readonly signal: string; readonly seq: number }
  | {
    readonly _tag: "Delivered"
    readonly runId: string
    readonly signal: string
    readonly seq: number
    readonly output: O
  }

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
      return yield* new WorkflowError.RunNotFound({
        runId,
        description: `no unfinished run of workflow '${self.name}' has this id`
      })
    }
    const active = found.value.run
    if (active.userId !== undefined) {
      yield* SessionStore.checkOwner(active.sessionId, active.userId, options?.userId ?? self.userId)
    }
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
    // its event log ends here (unless its owner still runs it: it ends it as it stops)
    yield* eventLog.endedBy(
      store,
      active,
      status === "cancelled" ? { _tag: "RunCancelled" } : { _tag: "RunFailed", error: why },
      now
    )
    // a cancelled run this store runs here stops at once (elsewhere: at its next lease renewal)
    if (status === "cancelled") {
      yield* stopHere(store, runId)
    }
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
  return Effect.fail(SessionStore.runEnded(record))
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
    return runs.map((run) => ({ ...run, abandoned: SessionStore.isAbandoned(run, now) }))
  }
)

/** @internal */
export const recover = Effect.fn("Workflow.recover")(
  function*<W extends Any>(self: W, options?: RecoverOptions) {
    const runs = yield* unfinishedRuns(self)
    const out: Array<Recovered<Output<W>, State<W>>> = []
    for (const run of runs) {
      if (run.status === "paused") {
        // a run whose sleep ended, whose timeout passed or whose signal came as it paused wakes
        if (options?.mode === "abandon") continue
        const woken = yield* Effect.exit(wake(self, run, options))
        if (woken._tag === "Success" && Option.isNone(woken.value)) continue
        const outcome = woken._tag === "Success" ? Exit.succeed(Option.getOrThrow(woken.value)) : woken
        out.push({
          runId: run.runId,
          sessionId: run.sessionId,
          outcome: outcome as Recovered<Output<W>, State<W>>["outcome"]
        })
        continue
      }
      if (!run.abandoned) continue
      const outcome = options?.mode === "abandon"
        ? yield* Effect.exit(
          Effect.as(
            endUnfinished(self, run.runId, { userId: run.userId }, "abandoned", "abandoned: its process stopped"),
            "abandoned" as const
          )
        )
        : yield* Effect.exit(
          runner.resumeRun(self, run.runId, { ...options, userId: run.userId }, undefined, undefined)
        )
      out.push({
        runId: run.runId,
        sessionId: run.sessionId,
        outcome: outcome as Recovered<Output<W>, State<W>>["outcome"]
      })
    }
    return out
  }
)

/** @internal */
export const prune = Effect.fn("Workflow.prune")(
  function*<W extends Any>(self: W, options: PruneOptions) {
    const store = yield* SessionStore.SessionStore
    const invalid = (description: string) =>
      new WorkflowError.InvalidPruneOptions({ workflowName: self.name, description })
    if (options.olderThan === undefined && options.keepLast === undefined) {
      return yield* invalid("give olderThan, keepLast or both: what to remove")
    }
    if (options.keepLast !== undefined && !(Number.isSafeInteger(options.keepLast) && options.keepLast >= 0)) {
      return yield* invalid(`keepLast must be a whole number from 0 (got ${String(options.keepLast)})`)
    }
    const age = options.olderThan === undefined ? undefined : Duration.decodeUnknown(options.olderThan)
    if (age !== undefined && (Option.isNone(age) || !Duration.isFinite(age.value))) {
      return yield* invalid(`olderThan must be a finite duration (got ${String(options.olderThan)})`)
    }
    if (options.sessionId !== undefined) yield* runner.checkSessionId(options.sessionId)
    const now = yield* Clock.currentTimeMillis
    const endedBefore = age === undefined ? undefined : now - Duration.toMillis(age.value as Duration.Duration)
    // abandoned runs left that long end first (their journals go), recorded as abandoned
    let abandoned = 0
    if (endedBefore !== undefined) {
      const runs = yield* store.activeRuns({ workflowName: self.name, sessionId: options.sessionId, status: "running" })
      for (const run of runs) {
        if (!SessionStore.isAbandoned(run, now) || run.updatedAt >= endedBefore) continue
        const ended = yield* Effect.exit(
          endUnfinished(self, run.runId, { userId: run.userId }, "abandoned", "abandoned: pruned")
        )
        if (ended._tag === "Success") abandoned++
      }
    }
    const removed = yield* store.prune({
      workflowName: self.name,
      sessionId: options.sessionId,
      endedBefore,
      keepLast: options.keepLast
    })
    return { ...removed, abandoned }
  }
)

/** @internal */
export const events = <W extends Any>(self: W, runId: string, options?: EventsOptions) =>
  Stream.unwrap(Effect.gen(function*() {
    yield* runner.checkRunId(runId)
    const store = yield* SessionStore.SessionStore
    const found = yield* store.getRun(runId)
    const run = Option.map(found, (lookup) => lookup._tag === "Active" ? lookup.run : lookup.record)
    if (Option.isNone(run) || run.value.workflowName !== self.name) {
      return yield* new WorkflowError.RunNotFound({
        runId,
        description: `no run of workflow '${self.name}' has this id`
      })
    }
    const { sessionId, userId } = run.value
    if (userId !== undefined) yield* SessionStore.checkOwner(sessionId, userId, options?.userId ?? self.userId)
    return eventLog.follow(
      store,
      runId,
      options?.after ?? -1,
      options?.pollInterval === undefined ? {} : { pollInterval: options.pollInterval }
    )
  })).pipe(Stream.withSpan("Workflow.events"))

/**
 * Starts a run in the background: the run is forked into the caller's
 * `Scope`, and its id returned once it is registered in the store (or the
 * run's error, when it is refused before that).
 *
 * @internal
 */
export const start = (self: Any, input: unknown, options: RunOptions<unknown> | undefined) =>
  Effect.gen(function*() {
    const runId = options?.runId ?? crypto.randomUUID()
    const sessionId = options?.sessionId ?? self.sessionId ?? crypto.randomUUID()
    const registered = yield* Deferred.make<void, unknown>()
    const scope = yield* Scope.Scope
    yield* runner.run(self, input, { ...options, runId, sessionId }, undefined).pipe(
      Effect.exit,
      // refused before it was registered (or replayed: it had completed): the starter is told
      Effect.flatMap((exit) => Deferred.done(registered, Exit.asVoid(exit))),
      Effect.locally(currentBackground, { registered }),
      Effect.forkIn(scope)
    )
    yield* Deferred.await(registered)
    const started: StartedRun = { runId, sessionId }
    return started
  }).pipe(Effect.withSpan("Workflow.start"))

/** @internal */
export const getRunStatus = Effect.fn("Workflow.getRunStatus")(
  function*<W extends Any>(self: W, runId: string, options?: SessionOptions) {
    yield* runner.checkRunId(runId)
    const store = yield* SessionStore.SessionStore
    const found = yield* SessionStore.findRun(store, runId)
    const run = Option.map(
      found,
      (place) => place._tag === "Active" || place._tag === "Queued" ? place.run : place.record
    )
    if (Option.isNone(found) || Option.isNone(run) || run.value.workflowName !== self.name) {
      return yield* new WorkflowError.RunNotFound({
        runId,
        description: `no run of workflow '${self.name}' has this id`
      })
    }
    const { sessionId, userId } = run.value
    if (userId !== undefined) yield* SessionStore.checkOwner(sessionId, userId, options?.userId ?? self.userId)
    return statusOf(found.value, yield* Clock.currentTimeMillis)
  }
)

/** The fields every `RunStatus` has. */
const idsOf = (run: SessionStore.QueuedRun | SessionStore.ActiveRun | SessionStore.RunRecord) => ({
  runId: run.runId,
  sessionId: run.sessionId,
  workflowName: run.workflowName,
  ...(run.userId === undefined ? {} : { userId: run.userId }),
  input: run.input
})

/** What the store knows of a run, as a `RunStatus`. */
const statusOf = (lookup: SessionStore.RunPlace, now: number): RunStatus => {
  if (lookup._tag === "Queued") {
    return { _tag: "Queued", ...idsOf(lookup.run), queuedAt: lookup.run.enqueuedAt, position: lookup.position }
  }
  const run = lookup._tag === "Active" ? lookup.run : lookup.record
  const common = { ...idsOf(run), startedAt: run.startedAt }
  if (lookup._tag === "Active") {
    const { journal, leaseExpiresAt, owner, pause, status } = lookup.run
    const usage = journal?.usage === undefined ? {} : { usage: journal.usage }
    const timeout = pause?.timeoutAt === undefined ? {} : { timeoutAt: pause.timeoutAt }
    switch (SessionStore.runState(lookup.run)) {
      case "sleeping":
        return { _tag: "Sleeping", ...common, wakeAt: pause?.wakeAt ?? 0, ...usage }
      case "waiting":
        return { _tag: "Waiting", ...common, signal: pause?.signal ?? "", ...timeout, ...usage }
    }
    if (status === "paused") {
      return {
        _tag: "Paused",
        ...common,
        pause: {
          path: pause?.path ?? [],
          key: pause?.key ?? "",
          payload: pause?.payload,
          pausedAt: pause?.pausedAt ?? lookup.run.updatedAt
        },
        ...timeout,
        ...usage
      }
    }
    return { _tag: "Running", ...common, owner, leaseExpiresAt, leaseExpired: leaseExpiresAt < now, ...usage }
  }
  const { completedAt, content, error, status, usage } = lookup.record
  switch (status) {
    case "completed":
      return { _tag: "Completed", ...common, content, ...(usage === undefined ? {} : { usage }), completedAt }
    case "error":
      return { _tag: "Failed", ...common, error: error ?? "", completedAt }
    case "cancelled":
      return { _tag: "Cancelled", ...common, ...(error === undefined ? {} : { reason: error }), completedAt }
    case "abandoned":
      return { _tag: "Abandoned", ...common, ...(error === undefined ? {} : { reason: error }), completedAt }
  }
}

/** @internal */
export const queuedRuns = Effect.fn("Workflow.queuedRuns")(
  function*<W extends Any>(self: W, options?: { readonly sessionId?: string | undefined }) {
    const store = yield* SessionStore.SessionStore
    return yield* store.queuedRuns({ workflowName: self.name, sessionId: options?.sessionId })
  }
)
