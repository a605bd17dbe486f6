/**
 * The workflow value, its builder, nested workflows and the run itself.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as EffectContext from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as RunContext from "../RunContext.js"
import * as SessionState from "../SessionState.js"
import * as SessionStore from "../SessionStore.js"
import type { StepInput } from "../StepInput.js"
import type * as StepOutput from "../StepOutput.js"
import * as WorkflowError from "../WorkflowError.js"
import * as WorkflowEvent from "../WorkflowEvent.js"
import * as events from "./events.js"
import * as executors from "./executors.js"
import * as formatting from "./format.js"
import { deepCopy, deepMerge, isPlainObject, jsonProblem } from "./json.js"
import * as step from "./step.js"

/** @internal */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/Workflow")

/** @internal */
export type TypeId = typeof TypeId

/** A run input Schema. @internal */
export type InputSchema = Schema.Schema<any, any, never>

/** @internal */
export interface Workflow<
  out A = unknown,
  out E = never,
  out R = never,
  in out In extends InputSchema = typeof Schema.Unknown,
  in out St extends SessionState.Any = SessionState.Untyped
> extends Pipeable {
  readonly [TypeId]: {
    readonly _A: (_: never) => A
    readonly _E: (_: never) => E
    readonly _R: (_: never) => R
    readonly _In: (_: In) => In
    readonly _St: (_: St) => St
  }
  readonly name: string
  readonly description: string | undefined
  readonly steps: ReadonlyArray<step.Any>
  /** the run input's Schema, if declared */
  readonly input: In | undefined
  /** the state tag the workflow provides to its steps, if typed */
  readonly state: Exclude<St, SessionState.Untyped> | undefined
  /** the seed of new sessions (encoded form) */
  readonly sessionState: SessionState.Encoded<St>
  readonly overwriteDbSessionState: boolean
  readonly sessionId: string | undefined
  readonly userId: string | undefined
}

/** @internal */
export type Any = Workflow<any, any, any, any, any>

/** @internal */
export type Output<W> = W extends Workflow<infer A, infer _E, infer _R, infer _In, infer _St> ? A : never
/** @internal */
export type Error<W> = W extends Workflow<infer _A, infer E, infer _R, infer _In, infer _St> ? E : never
/** @internal */
export type Context<W> = W extends Workflow<infer _A, infer _E, infer R, infer _In, infer _St> ? R : never
/** @internal */
export type InputOf<W> = W extends Workflow<infer _A, infer _E, infer _R, infer In, infer _St> ? In : never
/** @internal */
export type StateOf<W> = W extends Workflow<infer _A, infer _E, infer _R, infer _In, infer St> ? St : never
/** The run input a workflow's steps see. @internal */
export type DecodedInput<W> = Schema.Schema.Type<InputOf<W>>
/** The run input a workflow's run takes. @internal */
export type EncodedInput<W> = Schema.Schema.Encoded<InputOf<W>>
/** `InputDecodeError` when the workflow decodes its input with a Schema that can fail. @internal */
export type InputError<W> = [InputOf<W>] extends [typeof Schema.Unknown] ? never : WorkflowError.InputDecodeError
/** The state tag a nested workflow needs from the workflow it runs in. @internal */
export type StateRequirement<W> = SessionState.Identifier<StateOf<W>>

/** The services every run provides to its steps. @internal */
export type Provided<St> = SessionState.SessionState | RunContext.RunContext | SessionState.Identifier<St>

/** @internal */
export type SeedOption<St extends SessionState.Any> = [St] extends [SessionState.Untyped]
  ? { readonly sessionState?: SessionState.State | undefined }
  : {} extends SessionState.Encoded<St> ? {
      /** the seed of new sessions (encoded form); decoded with the state Schema, so Schema defaults apply */
      readonly sessionState?: NoInfer<SessionState.Encoded<St>> | undefined
    }
  : {
    /**
     * the seed of new sessions (encoded form), required because the state
     * Schema cannot decode `{}`
     */
    readonly sessionState: NoInfer<SessionState.Encoded<St>>
  }

/** @internal */
export type MakeOptions<S extends ReadonlyArray<step.Any>, In extends InputSchema, St extends SessionState.Any> =
  & {
    readonly name: string
    readonly description?: string | undefined
    /** decodes the run input at the start of every run; steps see the decoded value */
    readonly input?: In | undefined
    /** a typed state tag (`SessionState.Tag`); without it the state is an untyped JSON object */
    readonly state?: St | undefined
    readonly steps?: (S & step.Chain<S, Schema.Schema.Type<In>, Schema.Schema.Type<In>>) | undefined
    /** replace the stored state with the run's `sessionState` (else the seed) on every run */
    readonly overwriteDbSessionState?: boolean | undefined
    /** the default session of runs and session functions that name none */
    readonly sessionId?: string | undefined
    /** the default user of runs that name none */
    readonly userId?: string | undefined
  }
  & SeedOption<St>

const Proto = {
  pipe() {
    return pipeArguments(this, arguments)
  },
  toJSON(this: Any) {
    return { _id: "Workflow", name: this.name, steps: this.steps.map((s) => s.name) }
  }
}

interface Fields {
  readonly name: string
  readonly description: string | undefined
  readonly steps: ReadonlyArray<step.Any>
  readonly input: InputSchema | undefined
  readonly state: SessionState.StateTag<any, any, any> | undefined
  readonly sessionState: unknown
  readonly overwriteDbSessionState: boolean
  readonly sessionId: string | undefined
  readonly userId: string | undefined
}

/** @internal */
export const fromFields = <W extends Any>(fields: Fields): W => {
  const wf = Object.create(Proto)
  wf[TypeId] = TypeId
  Object.assign(wf, fields)
  return wf
}

/** @internal */
export const fromOptions = <W extends Any>(options: MakeOptions<ReadonlyArray<step.Any>, InputSchema, SessionState.Any>): W =>
  fromFields({
    name: options.name,
    description: options.description,
    steps: options.steps ?? [],
    input: options.input,
    // `Untyped` is a type only: a value given here is a state tag
    state: options.state as SessionState.StateTag<any, any, any> | undefined,
    sessionState: options.sessionState ?? {},
    overwriteDbSessionState: options.overwriteDbSessionState ?? false,
    sessionId: options.sessionId,
    userId: options.userId
  })

/** @internal */
export const append = <W extends Any, W2 extends Any>(self: W, next: step.Any): W2 =>
  fromFields({ ...self, steps: [...self.steps, next] })

/** @internal */
export const andThen: {
  <Prev, In extends InputSchema, St extends SessionState.Any, const N extends string, X, E2 = never, R2 = never>(
    name: N,
    execute: (input: StepInput<Prev, Schema.Schema.Type<In>>) => Effect.Effect<X, E2, R2>,
    options?: step.NodeOptions
  ): <E, R>(
    self: Workflow<Prev, E, R, In, St>
  ) => Workflow<StepOutput.Content<X>, E | E2, R | Exclude<R2, Provided<St>>, In, St>
  <Prev, In extends InputSchema, St extends SessionState.Any, A, E2, R2>(
    step: step.Step<A, E2, R2, Prev, Schema.Schema.Type<In>, string>
  ): <E, R>(
    self: Workflow<Prev, E, R, In, St>
  ) => Workflow<step.Resolve<A, Prev>, E | E2, R | Exclude<R2, Provided<St>>, In, St>
} = (
  stepOrName: step.Any | string,
  execute?: (input: StepInput) => Effect.Effect<unknown, unknown, unknown>,
  options?: step.NodeOptions
) =>
(self: Any): Any =>
  append(self, typeof stepOrName === "string" ? executors.make(stepOrName, execute!, options) : stepOrName)

// -----------------------------------------------------------------------------
// input and state
// -----------------------------------------------------------------------------

/** Decodes a run input with the workflow's input Schema. @internal */
export const decodeInput = (self: Any, input: unknown): Effect.Effect<unknown, WorkflowError.InputDecodeError> =>
  self.input === undefined ? Effect.succeed(input) : Effect.mapError(
    Schema.decodeUnknown(self.input as InputSchema)(input),
    (error) =>
      new WorkflowError.InputDecodeError({
        workflowName: self.name,
        description: ParseResult.TreeFormatter.formatErrorSync(error),
        cause: error
      })
  )

const notAnObject = (sessionId: string) =>
  new WorkflowError.StateDecodeError({ sessionId, reason: "schema", description: "the state must be a JSON object" })

const schemaError = (sessionId: string) => (error: ParseResult.ParseError) =>
  new WorkflowError.StateDecodeError({
    sessionId,
    reason: "schema",
    description: ParseResult.TreeFormatter.formatErrorSync(error),
    cause: error
  })

/** Decodes a stored (or seed) state with the workflow's state Schema. @internal */
export const decodeState = (
  self: Any,
  sessionId: string,
  encoded: unknown
): Effect.Effect<unknown, WorkflowError.StateDecodeError> =>
  self.state === undefined
    ? isPlainObject(encoded) ? Effect.succeed(encoded) : Effect.fail(notAnObject(sessionId))
    : Effect.mapError(Schema.decodeUnknown(self.state.schema as Schema.Schema<unknown, unknown>)(encoded), schemaError(sessionId))

/** Encodes a state for storage. @internal */
export const encodeState = (
  self: Any,
  sessionId: string,
  state: unknown
): Effect.Effect<unknown, WorkflowError.StateDecodeError> =>
  self.state === undefined
    ? isPlainObject(state) ? Effect.succeed(state) : Effect.fail(notAnObject(sessionId))
    : Effect.mapError(Schema.encode(self.state.schema as Schema.Schema<unknown, unknown>)(state), schemaError(sessionId))

// -----------------------------------------------------------------------------
// nested workflows
// -----------------------------------------------------------------------------

/** @internal */
export const asStep = <const N extends string, W extends Any>(
  name: N,
  inner: W,
  options?: step.NodeOptions
): step.Step<Output<W>, Error<W> | InputError<W>, Context<W> | StateRequirement<W>, EncodedInput<W>, unknown, N> =>
  step.makeStep({
    ...options,
    name,
    kind: "workflow",
    execute: (input: StepInput<EncodedInput<W>>, ctx) =>
      // decoding fails only for an input Schema, which is what puts InputDecodeError in the type
      Effect.flatMap(decodeInput(inner, input.previousStepContent) as Effect.Effect<unknown, InputError<W>>, (decoded) =>
        Effect.map(
          step.runSequence(
            inner.steps as ReadonlyArray<step.Step<unknown, Error<W>, Context<W>>>,
            { input: decoded, previousStepContent: decoded, previousStepOutputs: {}, additionalData: input.additionalData },
            step.nestedExecContext(ctx)
          ),
          (output) => output.content
        ))
  })

// -----------------------------------------------------------------------------
// runs
// -----------------------------------------------------------------------------

/** @internal */
export type DeepPartial<T> = T extends ReadonlyArray<unknown> ? T
  : T extends object ? { readonly [K in keyof T]?: DeepPartial<T[K]> }
  : T

/** @internal */
export interface RunOptions<I> {
  readonly sessionId?: string | undefined
  readonly userId?: string | undefined
  readonly sessionState?: DeepPartial<I> | undefined
  readonly overwriteDbSessionState?: boolean | undefined
  readonly additionalData?: Readonly<Record<string, unknown>> | undefined
  readonly retryOnConflict?: boolean | number | undefined
}

/** @internal */
export interface RunOutput<A, S> {
  readonly runId: string
  readonly sessionId: string
  readonly userId: string | undefined
  readonly workflowName: string
  readonly status: "completed"
  readonly content: A
  readonly stepOutputs: ReadonlyArray<StepOutput.StepOutput>
  readonly state: S
}

/**
 * The state a run starts from, in encoded form: for a new session a copy of
 * the seed with the run's `sessionState` merged over it (or replacing it, with
 * `overwriteDbSessionState`); for an existing session its stored state with
 * the patch merged over it (or the patch, else the seed, replacing it). A
 * stored state is checked before a patch is merged over it, so a patch never
 * hides a stored state that does not fit.
 */
const initialState = (
  self: Any,
  sessionId: string,
  stored: Option.Option<SessionStore.StoredSession>,
  options: RunOptions<unknown> | undefined
): Effect.Effect<unknown, WorkflowError.StateDecodeError> => {
  const overwrite = options?.overwriteDbSessionState ?? self.overwriteDbSessionState
  const patch = options?.sessionState
  if (Option.isNone(stored)) {
    const seed = deepCopy(self.sessionState)
    return Effect.succeed(patch === undefined ? seed : overwrite ? deepCopy(patch) : deepMerge(seed, deepCopy(patch)))
  }
  if (overwrite) return Effect.succeed(deepCopy(patch ?? self.sessionState))
  if (patch === undefined) return Effect.succeed(stored.value.state)
  return Effect.as(decodeState(self, sessionId, stored.value.state), deepMerge(stored.value.state, deepCopy(patch)))
}

const jsonValue = (u: unknown): unknown => (u === undefined ? null : u)

/** Fails with `NotSerializable` when `value` would not read back the same from JSON. */
const checkJson = (sessionId: string, what: "input" | "output" | "state", value: unknown) => {
  const problem = jsonProblem(value)
  return problem === undefined
    ? Effect.void
    : Effect.fail(new WorkflowError.NotSerializable({ sessionId, what, ...problem }))
}

/**
 * Checks a session id: not empty, well-formed Unicode (so that every store
 * gives it back unchanged).
 *
 * @internal
 */
export const checkSessionId = (sessionId: string): Effect.Effect<string, WorkflowError.InvalidSessionId> =>
  sessionId.length === 0
    ? Effect.fail(new WorkflowError.InvalidSessionId({ sessionId, reason: "empty" }))
    : loneSurrogate.test(sessionId)
    ? Effect.fail(new WorkflowError.InvalidSessionId({ sessionId, reason: "malformed" }))
    : Effect.succeed(sessionId)

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * How long the run record of a failed or interrupted run may wait for the
 * store (a database write lock held by another process) before it is given up
 * with a logged warning. The caller of the failed run waits for this, so it is
 * short.
 */
const failedRunRecordTimeout = Duration.seconds(1)

interface Ids {
  readonly runId: string
  readonly sessionId: string
  readonly userId: string | undefined
}

/** What a run needs before its steps: the stored session, the decoded input and the initial state. */
interface Prepared {
  readonly stored: Option.Option<SessionStore.StoredSession>
  readonly decodedInput: unknown
  readonly encodedInitial: unknown
  readonly initial: unknown
}

const runAttempt = (
  self: Any,
  input: unknown,
  options: RunOptions<unknown> | undefined,
  ids: Ids
): Effect.Effect<RunOutput<unknown, unknown>, unknown, unknown> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const { runId, sessionId, userId } = ids
      const startedAt = yield* Clock.currentTimeMillis
      const owner = userId === undefined ? {} : { userId }
      const inputProblem = jsonProblem(input)
      const storedInput = inputProblem === undefined ? jsonValue(input) : null

      /** Records a run that failed or was interrupted: on a session that exists, with its state left alone. */
      const recordFailure = (cause: Cause.Cause<unknown>, newSessionState: Option.Option<unknown>, version: number) =>
        Effect.gen(function*() {
          const record: SessionStore.RunRecord = {
            runId,
            sessionId,
            workflowName: self.name,
            ...owner,
            status: Cause.isInterruptedOnly(cause) ? "cancelled" : "error",
            input: storedInput,
            error: formatting.causeMessage(cause),
            startedAt,
            completedAt: yield* Clock.currentTimeMillis
          }
          const commitRecord = (state: unknown) =>
            store.commit({ sessionId, workflowName: self.name, userId, expectedVersion: version, state, run: record })
          // The record waits for a store lock held elsewhere for `failedRunRecordTimeout`
          // at most, even when the run was interrupted (the caller waits for this):
          // then it is given up with a warning.
          yield* commitRecord(Option.getOrUndefined(newSessionState)).pipe(
            Effect.catchTag("SessionConflict", () => commitRecord(undefined)),
            Effect.interruptible,
            Effect.timeout(failedRunRecordTimeout),
            Effect.catchAll((error) => Effect.logWarning(`sessionflow: could not record failed run ${runId}`, error))
          )
        })

      // -- before the steps: the session, its owner, the input, the initial state --
      const loaded = yield* Effect.either(restore(store.load(sessionId)))
      if (Either.isLeft(loaded)) {
        // a corrupt stored state: the session exists, so the failure is recorded (for its owner)
        const error = loaded.left
        if (error._tag === "StateDecodeError") {
          const info = yield* Effect.option(restore(store.info(sessionId)))
          if (Option.isSome(info) && Option.isSome(info.value)) {
            yield* SessionStore.checkOwner(sessionId, info.value.value.userId, userId)
            yield* recordFailure(Cause.fail(error), Option.none(), info.value.value.version)
          }
        }
        return yield* Effect.fail(error)
      }
      const stored = loaded.right
      // another user's session is never written to, not even a run record
      if (Option.isSome(stored)) yield* SessionStore.checkOwner(sessionId, stored.value.userId, userId)
      const version = Option.match(stored, { onNone: () => 0, onSome: (s) => s.version })
      const prepared = yield* Effect.exit(restore(Effect.gen(function*() {
        if (inputProblem !== undefined) {
          return yield* new WorkflowError.NotSerializable({ sessionId, what: "input", ...inputProblem })
        }
        const decodedInput = yield* decodeInput(self, input)
        const encodedInitial = yield* initialState(self, sessionId, stored, options)
        if (self.state === undefined) yield* checkJson(sessionId, "state", encodedInitial)
        const initial = yield* decodeState(self, sessionId, encodedInitial)
        return { stored, decodedInput, encodedInitial, initial } satisfies Prepared
      })))
      if (Exit.isFailure(prepared)) {
        // a run that fails before its steps is recorded on an existing session
        // (a new session has no valid state to be created with)
        if (Option.isSome(stored)) yield* recordFailure(prepared.cause, Option.none(), version)
        return yield* Effect.failCause(prepared.cause)
      }
      const { decodedInput, encodedInitial, initial } = prepared.value

      // -- the steps --
      const ref = yield* Ref.make(initial)
      const service = SessionState.fromRef(ref)
      let context = EffectContext.make(SessionState.SessionState, service as SessionState.Service).pipe(
        EffectContext.add(RunContext.RunContext, {
          runId,
          sessionId,
          userId,
          workflowName: self.name,
          input: decodedInput,
          chatHistory: (history) => SessionStore.chatHistory(store, sessionId, history)
        })
      )
      if (self.state !== undefined) context = EffectContext.add(context, self.state as SessionState.StateTag<unknown, unknown>, service)
      const exec = step.makeExecContext(yield* WorkflowEvent.isEnabled)

      const exit = yield* Effect.exit(restore(
        step.runSequence(
          self.steps,
          { input: decodedInput, previousStepContent: decodedInput, previousStepOutputs: {}, additionalData: options?.additionalData ?? {} },
          exec
        ).pipe(
          Effect.provide(context),
          Effect.flatMap((output) =>
            Effect.gen(function*() {
              const state = yield* Ref.get(ref)
              const encoded = yield* encodeState(self, sessionId, state)
              yield* checkJson(sessionId, "state", encoded)
              yield* checkJson(sessionId, "output", output.content)
              return { output, state, encoded }
            })
          )
        )
      ))

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
          run: {
            runId,
            sessionId,
            workflowName: self.name,
            ...owner,
            status: "completed",
            input: storedInput,
            content: jsonValue(output.content),
            startedAt,
            completedAt: yield* Clock.currentTimeMillis
          }
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
      // a new session is created with its initial state to hold the record
      yield* recordFailure(exit.cause, Option.isNone(stored) ? Option.some(encodedInitial) : Option.none(), version)
      return yield* Effect.failCause(exit.cause)
    })
  )

const recordConflict = (self: Any, input: unknown, ids: Ids, error: WorkflowError.SessionConflict) =>
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
        error: formatting.errorMessage(error),
        startedAt: now,
        completedAt: now
      }
    })
  }).pipe(Effect.timeout(failedRunRecordTimeout), Effect.catchAll(() => Effect.void))

const isConflict = (error: unknown): error is WorkflowError.SessionConflict =>
  WorkflowError.isWorkflowError(error) && error._tag === "SessionConflict"

/**
 * Runs a workflow once; `sink` receives its events (none when undefined).
 *
 * @internal
 */
export const run = <W extends Any>(
  self: W,
  input: unknown,
  options: RunOptions<unknown> | undefined,
  sink: ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined
): Effect.Effect<
  RunOutput<Output<W>, SessionState.Type<StateOf<W>>>,
  Error<W> | WorkflowError.RunError,
  Context<W> | SessionStore.SessionStore
> =>
  Effect.suspend(() => {
    const sessionId = options?.sessionId ?? self.sessionId ?? crypto.randomUUID()
    const userId = options?.userId ?? self.userId
    const runId = crypto.randomUUID()
    const ids = { runId, sessionId, userId }
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
      const output = yield* Effect.gen(function*() {
        yield* checkSessionId(sessionId)
        const attempt = store.withSessionLock(sessionId)(runAttempt(self, input, options, ids))
        return yield* retries === 0 ? attempt : Effect.retry(attempt, { times: retries, while: isConflict })
      }).pipe(
        Effect.tapError((error) => isConflict(error) ? recordConflict(self, input, ids, error) : Effect.void),
        Effect.onExit((exit) =>
          Exit.isSuccess(exit)
            ? Effect.void
            : Cause.isInterruptedOnly(exit.cause)
            ? WorkflowEvent.emit({ _tag: "RunCancelled" })
            : WorkflowEvent.emit({ _tag: "RunFailed", error: formatting.causeMessage(exit.cause) })
        )
      )
      yield* WorkflowEvent.emit({ _tag: "RunCompleted", content: output.content })
      return output
    }).pipe(events.emitTo(ids, sink)) as Effect.Effect<
      RunOutput<Output<W>, SessionState.Type<StateOf<W>>>,
      Error<W> | WorkflowError.RunError,
      Context<W> | SessionStore.SessionStore
    >
  })
