/**
 * A workflow: a named tree of steps run against a persisted session state.
 *
 * Every run belongs to a session. The run loads the session's state (or a
 * deep copy of the seed for a new session), runs its steps with that state
 * shared by all of them, then commits the final state and the run record
 * together. A failed or interrupted run commits no state change, only its run
 * record.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { causeMessage, makeExecContext, runSequence } from "./internal/engine.js"
import { deepCopy, deepMerge, isPlainObject } from "./internal/json.js"
import * as RunContext from "./RunContext.js"
import * as SessionNamer from "./SessionNamer.js"
import * as SessionState from "./SessionState.js"
import * as SessionStore from "./SessionStore.js"
import type * as Step from "./Step.js"
import type * as StepOutput from "./StepOutput.js"
import * as WorkflowError from "./WorkflowError.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/Workflow")

/**
 * A workflow whose state is `A` (stored as `I`), whose runs may fail with `E`
 * and need `R` (beyond a `SessionStore`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Workflow<A, I, out E, out R> {
  readonly [TypeId]: {
    readonly _A: (_: A) => A
    readonly _I: (_: I) => I
    readonly _E: (_: never) => E
    readonly _R: (_: never) => R
  }
  readonly name: string
  readonly description: string | undefined
  readonly steps: ReadonlyArray<Step.Any>
  /** the state tag the workflow provides to its steps, if typed */
  readonly state: SessionState.StateTag<unknown, A, I> | undefined
  /** the seed of new sessions */
  readonly sessionState: I
  readonly overwriteDbSessionState: boolean
  readonly sessionId: string | undefined
  readonly userId: string | undefined
}

/**
 * Any workflow (`A` and `I` are invariant, so only `any` matches every
 * workflow's state types).
 *
 * @since 0.1.0
 * @category models
 */
export type Any = Workflow<any, any, unknown, unknown>

/**
 * @since 0.1.0
 * @category options
 */
export interface BaseOptions<S extends ReadonlyArray<Step.Any>> {
  readonly name: string
  readonly description?: string | undefined
  readonly steps: S
  /** replace the stored state with the run's `sessionState` (else the seed) on every run */
  readonly overwriteDbSessionState?: boolean | undefined
  /** the default session of runs that name none */
  readonly sessionId?: string | undefined
  /** the default user of runs that name none */
  readonly userId?: string | undefined
}

/**
 * Builds a workflow.
 *
 * With `state` (a tag from `SessionState.Tag`), the stored state is decoded
 * with the tag's Schema, steps may use the tag, and the tag is provided by
 * the workflow; without it the state is an untyped JSON object. Either way
 * steps can use `SessionState.SessionState` and `RunContext.RunContext`. Every
 * other requirement of the steps stays in the workflow's `R`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: {
  <const S extends ReadonlyArray<Step.Any>, Self, A, I>(
    options: BaseOptions<S> & {
      readonly state: SessionState.StateTag<Self, A, I>
      /** the seed of new sessions (encoded form); decoded with the state Schema, so Schema defaults apply */
      readonly sessionState?: NoInfer<I> | undefined
    }
  ): Workflow<
    A,
    I,
    Step.Error<S[number]>,
    Exclude<Step.Context<S[number]>, SessionState.SessionState | RunContext.RunContext | Self>
  >
  <const S extends ReadonlyArray<Step.Any>>(
    options: BaseOptions<S> & {
      readonly state?: undefined
      readonly sessionState?: SessionState.State | undefined
    }
  ): Workflow<
    SessionState.State,
    SessionState.State,
    Step.Error<S[number]>,
    Exclude<Step.Context<S[number]>, SessionState.SessionState | RunContext.RunContext>
  >
} = (options: BaseOptions<ReadonlyArray<Step.Any>> & {
  readonly state?: SessionState.StateTag<unknown, unknown, unknown> | undefined
  readonly sessionState?: unknown
}): any => ({
  [TypeId]: TypeId,
  name: options.name,
  description: options.description,
  steps: options.steps,
  state: options.state,
  sessionState: options.sessionState ?? {},
  overwriteDbSessionState: options.overwriteDbSessionState ?? false,
  sessionId: options.sessionId,
  userId: options.userId
})

/**
 * A deep-partial of a state, for the `sessionState` run option.
 *
 * @since 0.1.0
 * @category models
 */
export type DeepPartial<T> = T extends ReadonlyArray<unknown> ? T
  : T extends object ? { readonly [K in keyof T]?: DeepPartial<T[K]> }
  : T

/**
 * @since 0.1.0
 * @category options
 */
export interface RunOptions<I> {
  /** else the workflow's `sessionId`, else a new UUID (returned in the output) */
  readonly sessionId?: string | undefined
  /** else the workflow's `userId` */
  readonly userId?: string | undefined
  /**
   * Deep-merged over the stored state (or the seed, for a new session):
   * objects merge, arrays and scalars replace. With
   * `overwriteDbSessionState` it replaces the stored state instead.
   */
  readonly sessionState?: DeepPartial<I> | undefined
  readonly overwriteDbSessionState?: boolean | undefined
  /** given to every step as `additionalData` */
  readonly additionalData?: Readonly<Record<string, unknown>> | undefined
  /**
   * When another run (of this or another process) commits to the session
   * first, run again on the new state instead of failing with
   * `SessionConflict`: `true` for up to 100 more attempts, or a number.
   */
  readonly retryOnConflict?: boolean | number | undefined
}

/**
 * The result of a completed run.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOutput<A> {
  readonly runId: string
  readonly sessionId: string
  readonly userId: string | undefined
  readonly workflowName: string
  readonly status: "completed"
  /** the content of the last step */
  readonly content: unknown
  /** every step output, in completion order (containers after their children) */
  readonly stepOutputs: ReadonlyArray<StepOutput.StepOutput>
  /** the committed state */
  readonly state: A
}

/**
 * Errors every run may fail with, besides its steps' errors.
 *
 * @since 0.1.0
 * @category models
 */
export type RunError = WorkflowError.RunError

const decodeState = <A, I>(self: Workflow<A, I, unknown, unknown>, sessionId: string, encoded: unknown) => {
  if (self.state === undefined) {
    return isPlainObject(encoded)
      ? Effect.succeed(encoded as A)
      : Effect.fail(
        new WorkflowError.StateDecodeError({ sessionId, reason: "schema", description: "the state must be a JSON object" })
      )
  }
  return Effect.mapError(
    Schema.decodeUnknown(self.state.schema)(encoded),
    (error) =>
      new WorkflowError.StateDecodeError({
        sessionId,
        reason: "schema",
        description: ParseResult.TreeFormatter.formatErrorSync(error),
        cause: error
      })
  )
}

const encodeState = <A, I>(self: Workflow<A, I, unknown, unknown>, sessionId: string, state: A) =>
  self.state === undefined
    ? isPlainObject(state)
      ? Effect.succeed(state as unknown)
      : Effect.fail(
        new WorkflowError.StateDecodeError({ sessionId, reason: "schema", description: "the state must be a JSON object" })
      )
    : Effect.mapError(
      Schema.encode(self.state.schema)(state),
      (error) =>
        new WorkflowError.StateDecodeError({
          sessionId,
          reason: "schema",
          description: ParseResult.TreeFormatter.formatErrorSync(error),
          cause: error
        })
    )

const initialState = (
  self: Any,
  stored: Option.Option<SessionStore.StoredSession>,
  options: RunOptions<unknown> | undefined
): unknown => {
  const overwrite = options?.overwriteDbSessionState ?? self.overwriteDbSessionState
  const patch = options?.sessionState
  if (Option.isNone(stored)) {
    const seed = deepCopy(self.sessionState)
    return patch === undefined ? seed : deepMerge(seed, deepCopy(patch))
  }
  if (overwrite) return deepCopy(patch ?? self.sessionState)
  return patch === undefined ? stored.value.state : deepMerge(stored.value.state, deepCopy(patch))
}

const jsonValue = (u: unknown): unknown => (u === undefined ? null : u)

/**
 * How long the run record of a failed or interrupted run may wait for the
 * store (a database write lock held by another process) before it is given up
 * with a logged warning. The caller of the failed run waits for this, so it is
 * short.
 */
const failedRunRecordTimeout = Duration.seconds(1)

const runAttempt = <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  input: unknown,
  options: RunOptions<I> | undefined,
  ids: { readonly runId: string; readonly sessionId: string; readonly userId: string | undefined }
): Effect.Effect<RunOutput<A>, E | RunError, R | SessionStore.SessionStore> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const { runId, sessionId, userId } = ids
      const startedAt = yield* Clock.currentTimeMillis
      const stored = yield* restore(store.load(sessionId))
      if (Option.isSome(stored)) yield* SessionStore.checkOwner(sessionId, stored.value.userId, userId)
      const encodedInitial = initialState(self, stored, options as RunOptions<unknown> | undefined)
      const initial = yield* decodeState(self, sessionId, encodedInitial)
      const ref = yield* Ref.make(initial)
      const service = SessionState.fromRef(ref)
      let context = Context.make(SessionState.SessionState, service as unknown as SessionState.Service).pipe(
        Context.add(RunContext.RunContext, { runId, sessionId, userId, workflowName: self.name, input })
      )
      if (self.state !== undefined) context = Context.add(context, self.state, service as never)
      const exec = makeExecContext(yield* WorkflowEvent.isEnabled)
      const version = Option.match(stored, { onNone: () => 0, onSome: (s) => s.version })

      const exit = yield* Effect.exit(restore(
        runSequence(
          self.steps as ReadonlyArray<Step.Step<E, R>>,
          { input, previousStepContent: undefined, previousStepOutputs: {}, additionalData: options?.additionalData ?? {} },
          exec
        ).pipe(
          Effect.provide(context),
          Effect.flatMap((output) =>
            Effect.flatMap(Ref.get(ref), (state) =>
              Effect.map(encodeState(self, sessionId, state), (encoded) => ({ output, state, encoded })))
          )
        ) as Effect.Effect<
          { output: StepOutput.StepOutput; state: A; encoded: unknown },
          E | WorkflowError.StateDecodeError,
          R
        >
      ))
      const completedAt = yield* Clock.currentTimeMillis
      const base = { runId, sessionId, workflowName: self.name, input: jsonValue(input), startedAt, completedAt }
      const owner = userId === undefined ? {} : { userId }

      if (Exit.isSuccess(exit)) {
        const { encoded, output, state } = exit.value
        // interruptible: a store waiting for a lock held elsewhere can be
        // interrupted there, having written nothing (its write itself is atomic)
        yield* restore(store.commit({
          sessionId,
          workflowName: self.name,
          userId,
          expectedVersion: version,
          state: encoded,
          run: { ...base, ...owner, status: "completed", content: jsonValue(output.content) }
        })).pipe(Effect.catchTag("SessionNotFound", (error) => Effect.die(error)))
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
      const record: SessionStore.RunRecord = {
        ...base,
        ...owner,
        status: Cause.isInterruptedOnly(exit.cause) ? "cancelled" : "error",
        error: causeMessage(exit.cause)
      }
      const commitRecord = (state: unknown) =>
        store.commit({ sessionId, workflowName: self.name, userId, expectedVersion: version, state, run: record })
      // The record waits for a store lock held elsewhere for `failedRunRecordTimeout`
      // at most, even when the run was interrupted (the caller waits for this):
      // then it is given up with a warning.
      yield* commitRecord(Option.isNone(stored) ? encodedInitial : undefined).pipe(
        Effect.catchTag("SessionConflict", () => commitRecord(undefined)),
        Effect.interruptible,
        Effect.timeout(failedRunRecordTimeout),
        Effect.catchAll((error) => Effect.logWarning(`sessionflow: could not record failed run ${runId}`, error))
      )
      return yield* Effect.failCause(exit.cause)
    })
  )

const runInternal = <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  input: unknown,
  options: RunOptions<I> | undefined,
  sink: ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined
): Effect.Effect<RunOutput<A>, E | RunError, R | SessionStore.SessionStore> =>
  Effect.suspend(() => {
    const sessionId = options?.sessionId ?? self.sessionId ?? crypto.randomUUID()
    const userId = options?.userId ?? self.userId
    const runId = crypto.randomUUID()
    let seq = 0
    const emitter: WorkflowEvent.Emitter = sink === undefined ? WorkflowEvent.noopEmitter : {
      enabled: true,
      emit: (payload, path) =>
        Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
          sink({ ...payload, runId, sessionId, seq: seq++, path, timestamp } as WorkflowEvent.WorkflowEvent))
    }
    const retries = options?.retryOnConflict === true
      ? 100
      : typeof options?.retryOnConflict === "number"
      ? options.retryOnConflict
      : 0
    return Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      yield* WorkflowEvent.emit({
        _tag: "RunStarted",
        workflowName: self.name,
        input,
        ...(userId === undefined ? {} : { userId })
      })
      const attempt = store.withSessionLock(sessionId)(runAttempt(self, input, options, { runId, sessionId, userId }))
      const output = yield* (retries === 0 ? attempt : Effect.retry(attempt, {
        times: retries,
        while: (error) => WorkflowError.isWorkflowError(error) && error._tag === "SessionConflict"
      })).pipe(
        Effect.tapError((error) =>
          WorkflowError.isWorkflowError(error) && error._tag === "SessionConflict"
            ? recordConflict(self, input, { runId, sessionId, userId }, error)
            : Effect.void
        ),
        Effect.onExit((exit) =>
          Exit.isSuccess(exit)
            ? Effect.void
            : Cause.isInterruptedOnly(exit.cause)
            ? WorkflowEvent.emit({ _tag: "RunCancelled" })
            : WorkflowEvent.emit({ _tag: "RunFailed", error: causeMessage(exit.cause) })
        )
      )
      yield* WorkflowEvent.emit({ _tag: "RunCompleted", content: output.content })
      return output
    }).pipe(Effect.locally(WorkflowEvent.currentEmitter, emitter), Effect.locally(WorkflowEvent.currentPath, []))
  })

const recordConflict = (
  self: Any,
  input: unknown,
  ids: { readonly runId: string; readonly sessionId: string; readonly userId: string | undefined },
  error: WorkflowError.SessionConflict
) =>
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
        input: jsonValue(input),
        error: error.message,
        startedAt: now,
        completedAt: now
      }
    })
  }).pipe(Effect.timeout(failedRunRecordTimeout), Effect.catchAll(() => Effect.void))

/**
 * Runs the workflow once on a session and commits the result.
 *
 * @since 0.1.0
 * @category running
 */
export const run: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  input: unknown,
  options?: RunOptions<I>
) => Effect.Effect<RunOutput<A>, E | RunError, R | SessionStore.SessionStore> = Effect.fn("Workflow.run")(
  function*<A, I, E, R>(self: Workflow<A, I, E, R>, input: unknown, options?: RunOptions<I>) {
    return yield* runInternal(self, input, options, undefined)
  }
) as any

/**
 * Runs the workflow and streams its events as they happen, ending with
 * `RunCompleted` (or failing with the run's error after `RunFailed`).
 * Stopping the stream early interrupts the run, which then commits no state
 * change and is recorded as cancelled.
 *
 * @since 0.1.0
 * @category running
 */
export const stream = <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  input: unknown,
  options?: RunOptions<I>
): Stream.Stream<WorkflowEvent.WorkflowEvent, E | RunError, R | SessionStore.SessionStore> =>
  Stream.unwrapScoped(
    Effect.gen(function*() {
      const mailbox = yield* Mailbox.make<WorkflowEvent.WorkflowEvent, E | RunError>()
      yield* runInternal(self, input, options, (event) => Effect.asVoid(mailbox.offer(event))).pipe(
        Mailbox.into(mailbox),
        Effect.forkScoped
      )
      return Mailbox.toStream(mailbox)
    })
  )

/**
 * @since 0.1.0
 * @category options
 */
export interface SessionOptions {
  /** else the workflow's `userId` */
  readonly userId?: string | undefined
}

const owned = <S extends SessionStore.SessionInfo, E>(
  self: Any,
  sessionId: string,
  options: SessionOptions | undefined,
  read: (store: SessionStore.Service) => Effect.Effect<Option.Option<S>, E>
) =>
  Effect.gen(function*() {
    const found = yield* read(yield* SessionStore.SessionStore)
    if (Option.isNone(found)) return yield* Effect.fail(new WorkflowError.SessionNotFound({ sessionId }))
    yield* SessionStore.checkOwner(sessionId, found.value.userId, options?.userId ?? self.userId)
    return found.value
  })

/** The session with its (parsed, not yet decoded) state, for its owner. */
const loadSession = (self: Any, sessionId: string, options: SessionOptions | undefined) =>
  owned(self, sessionId, options, (store) => store.load(sessionId))

/** The session without its state (so a corrupt state does not get in the way), for its owner. */
const sessionInfo = (self: Any, sessionId: string, options: SessionOptions | undefined) =>
  owned(self, sessionId, options, (store) => store.info(sessionId))

/**
 * The stored state of a session, decoded with the workflow's state Schema.
 *
 * @since 0.1.0
 * @category sessions
 */
export const getSessionState: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  sessionId: string,
  options?: SessionOptions
) => Effect.Effect<
  A,
  | WorkflowError.SessionNotFound
  | WorkflowError.SessionOwnershipError
  | WorkflowError.StateDecodeError
  | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = Effect.fn("Workflow.getSessionState")(
  function*<A, I, E, R>(self: Workflow<A, I, E, R>, sessionId: string, options?: SessionOptions) {
    const stored = yield* loadSession(self, sessionId, options)
    return yield* decodeState(self, sessionId, stored.state)
  }
)

/**
 * Changes the stored state of a session outside of a run (atomically, with
 * the same conflict check as a run). Returns the new state.
 *
 * @since 0.1.0
 * @category sessions
 */
export const updateSessionState: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  sessionId: string,
  f: (state: A) => A,
  options?: SessionOptions
) => Effect.Effect<
  A,
  | WorkflowError.SessionNotFound
  | WorkflowError.SessionOwnershipError
  | WorkflowError.StateDecodeError
  | WorkflowError.SessionConflict
  | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = Effect.fn("Workflow.updateSessionState")(
  function*<A, I, E, R>(self: Workflow<A, I, E, R>, sessionId: string, f: (state: A) => A, options?: SessionOptions) {
    const store = yield* SessionStore.SessionStore
    return yield* store.withSessionLock(sessionId)(Effect.gen(function*() {
      const stored = yield* loadSession(self, sessionId, options)
      const next = f(yield* decodeState(self, sessionId, stored.state))
      const encoded = yield* encodeState(self, sessionId, next)
      yield* store.commit({
        sessionId,
        workflowName: stored.workflowName,
        userId: options?.userId ?? self.userId,
        expectedVersion: stored.version,
        state: encoded
      })
      return next
    }))
  }
)

/**
 * Names a session, explicitly or with `{ autogenerate: true }`: a
 * `SessionNamer` in the context (e.g. a model-backed one) is asked for a
 * title from the session's first input and output; without one, or if it
 * fails, the name is the workflow's description and the session's creation
 * time. Returns the name.
 *
 * @since 0.1.0
 * @category sessions
 */
export const setSessionName: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  sessionId: string,
  name: string | { readonly autogenerate: true },
  options?: SessionOptions
) => Effect.Effect<
  string,
  WorkflowError.SessionNotFound | WorkflowError.SessionOwnershipError | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = Effect.fn("Workflow.setSessionName")(
  function*<A, I, E, R>(
    self: Workflow<A, I, E, R>,
    sessionId: string,
    name: string | { readonly autogenerate: true },
    options?: SessionOptions
  ) {
    const store = yield* SessionStore.SessionStore
    const info = yield* sessionInfo(self, sessionId, options)
    const chosen = typeof name === "string" ? name : yield* autogenerateName(self, info)
    yield* store.setName(sessionId, chosen)
    return chosen
  }
)

const autogenerateName = (self: Any, stored: SessionStore.SessionInfo) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const [first] = yield* store.runs(stored.sessionId, {}).pipe(
      Effect.map((runs) => runs.filter((r) => r.status === "completed"))
    )
    const request: SessionNamer.Request = {
      workflowName: self.name,
      description: self.description,
      sessionId: stored.sessionId,
      firstInput: first?.input,
      firstOutput: first?.content,
      createdAt: stored.createdAt
    }
    const namer = yield* Effect.serviceOption(SessionNamer.SessionNamer)
    if (Option.isNone(namer) || first === undefined) return SessionNamer.fallbackName(request)
    return yield* namer.value.name(request).pipe(
      Effect.map((name) => name.trim()),
      Effect.filterOrFail((name) => name.length > 0, () => "empty name"),
      Effect.catchAll((error) =>
        Effect.as(
          Effect.logWarning("sessionflow: session namer failed; using the fallback name", error),
          SessionNamer.fallbackName(request)
        )
      )
    )
  })

/**
 * The session's name, if it has one.
 *
 * @since 0.1.0
 * @category sessions
 */
export const getSessionName: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  sessionId: string,
  options?: SessionOptions
) => Effect.Effect<
  Option.Option<string>,
  WorkflowError.SessionNotFound | WorkflowError.SessionOwnershipError | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = Effect.fn("Workflow.getSessionName")(
  function*<A, I, E, R>(self: Workflow<A, I, E, R>, sessionId: string, options?: SessionOptions) {
    const info = yield* sessionInfo(self, sessionId, options)
    return Option.fromNullable(info.name)
  }
)

/**
 * A session with its decoded state.
 *
 * @since 0.1.0
 * @category models
 */
export interface Session<A> extends SessionStore.SessionInfo {
  readonly state: A
}

/**
 * @since 0.1.0
 * @category sessions
 */
export const getSession: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  sessionId: string,
  options?: SessionOptions
) => Effect.Effect<
  Session<A>,
  WorkflowError.SessionNotFound | WorkflowError.SessionOwnershipError | WorkflowError.StateDecodeError | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = Effect.fn("Workflow.getSession")(
  function*<A, I, E, R>(self: Workflow<A, I, E, R>, sessionId: string, options?: SessionOptions) {
    const stored = yield* loadSession(self, sessionId, options)
    const state = yield* decodeState(self, sessionId, stored.state)
    return { ...stored, state }
  }
)

/**
 * The sessions of this workflow, most recently updated first; only the given
 * user's when `userId` is set.
 *
 * @since 0.1.0
 * @category sessions
 */
export const listSessions: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  options?: SessionOptions
) => Effect.Effect<ReadonlyArray<SessionStore.SessionInfo>, WorkflowError.SessionStoreError, SessionStore.SessionStore> =
  Effect.fn("Workflow.listSessions")(
    function*<A, I, E, R>(self: Workflow<A, I, E, R>, options?: SessionOptions) {
      const store = yield* SessionStore.SessionStore
      return yield* store.list({ workflowName: self.name, userId: options?.userId })
    }
  )

/**
 * Deletes a session with its history.
 *
 * @since 0.1.0
 * @category sessions
 */
export const deleteSession: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  sessionId: string,
  options?: SessionOptions
) => Effect.Effect<
  void,
  WorkflowError.SessionNotFound | WorkflowError.SessionOwnershipError | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = Effect.fn("Workflow.deleteSession")(
  function*<A, I, E, R>(self: Workflow<A, I, E, R>, sessionId: string, options?: SessionOptions) {
    const store = yield* SessionStore.SessionStore
    yield* store.withSessionLock(sessionId)(Effect.gen(function*() {
      yield* sessionInfo(self, sessionId, options)
      yield* store.remove(sessionId)
    }))
  }
)

/**
 * The runs of a session, oldest first (`limit`: only the most recent ones).
 *
 * @since 0.1.0
 * @category sessions
 */
export const getRunHistory: <A, I, E, R>(
  self: Workflow<A, I, E, R>,
  sessionId: string,
  options?: SessionOptions & SessionStore.RunsOptions
) => Effect.Effect<
  ReadonlyArray<SessionStore.RunRecord>,
  WorkflowError.SessionNotFound | WorkflowError.SessionOwnershipError | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = Effect.fn("Workflow.getRunHistory")(
  function*<A, I, E, R>(self: Workflow<A, I, E, R>, sessionId: string, options?: SessionOptions & SessionStore.RunsOptions) {
    const store = yield* SessionStore.SessionStore
    yield* sessionInfo(self, sessionId, options)
    return yield* store.runs(sessionId, { limit: options?.limit })
  }
)
