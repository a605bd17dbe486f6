/**
 * The workflow value, its builder, nested workflows and the run itself.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import type * as RunContext from "../../RunContext.js"
import type * as SessionState from "../../SessionState.js"
import type * as SessionStore from "../../SessionStore.js"
import type { StepInput } from "../../StepInput.js"
import type * as StepOutput from "../../StepOutput.js"
import * as WorkflowError from "../../WorkflowError.js"
import { isPlainObject } from "../json.js"
import { nestedExecContext, runSequence } from "../step/exec.js"
import * as executors from "../step/executors.js"
import * as step from "../step/node.js"

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
  /** whether runs journal each top-level step (default `"run"`: one commit at the end) */
  readonly durability: "run" | "step"
  /** what a run's commit writes: the whole state (default) or its changes */
  readonly persist: "state" | "changes"
  /** the versions of a session its commits keep (undefined: the store's choice) */
  readonly history: SessionStore.HistoryOptions | undefined
  /** the version of the workflow's steps a durable run records, if given */
  readonly version: string | undefined
  /** the recorded versions (or fingerprints) of runs this workflow may carry on despite a different shape */
  readonly resumes: ReadonlyArray<string>
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
type InputOf<W> = W extends Workflow<infer _A, infer _E, infer _R, infer In, infer _St> ? In : never
/** @internal */
export type StateOf<W> = W extends Workflow<infer _A, infer _E, infer _R, infer _In, infer St> ? St : never
/** The run input a workflow's run takes. @internal */
export type EncodedInput<W> = Schema.Schema.Encoded<InputOf<W>>
/** `InputDecodeError` when the workflow decodes its input with a Schema that can fail. @internal */
export type InputError<W> = [InputOf<W>] extends [typeof Schema.Unknown] ? never : WorkflowError.InputDecodeError
/** The state tag a nested workflow needs from the workflow it runs in. @internal */
export type StateRequirement<W> = SessionState.Identifier<StateOf<W>>

/** The services every run provides to its steps. @internal */
export type Provided<St> = SessionState.SessionState | RunContext.RunContext | SessionState.Identifier<St>

/** @internal */
type SeedOption<St extends SessionState.Any> = [St] extends [SessionState.Untyped]
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
    /**
     * `"step"`: journal each completed top-level step with the run, so that a
     * run abandoned by a crash resumes from its last completed step (see
     * `Workflow.resume`); default `"run"`: one commit at the end
     */
    readonly durability?: "run" | "step" | undefined
    /**
     * What a run's commit writes: `"state"` (default) the whole state;
     * `"changes"` only what the run changed (e.g. the items it appended), for
     * states that grow by appending, so that a commit costs the same at 1,000
     * items as at 1,000,000. The store keeps the changes after the last whole
     * state, folds them in when it loads the session, and writes the whole
     * state again once they outweigh it (see `SessionStore.Commit`). In this
     * mode a committed state is frozen (`Object.freeze`): steps must update it
     * immutably, as everywhere, and a step that mutates it in place fails.
     */
    readonly persist?: "state" | "changes" | undefined
    /**
     * How many committed versions of each session are kept, to read the state
     * as it was (`Workflow.getSessionState` with `version`,
     * `Workflow.sessionVersions`) or fork a session from one
     * (`Workflow.fork`): `{ keep: "none" }`, `{ keep: "all" }` or the last N
     * (`{ keep: 50 }`); default: the store's `history` option, else the last
     * 20 (see `SessionStore.defaultHistory` for what it costs).
     */
    readonly history?: SessionStore.HistoryOptions | undefined
    /**
     * The version of the workflow's steps, recorded with every unfinished
     * (journaled or paused) run together with the fingerprint of its step
     * tree (names, kinds, nesting). Carrying a run on (`Workflow.resume`,
     * `Workflow.continue`, `Workflow.recover`, a run by id) under a different
     * version or step tree fails with `WorkflowChanged` and leaves the run as
     * it was — unless `resumes` lists the run's recorded version.
     */
    readonly version?: string | undefined
    /**
     * The versions (or fingerprints, as `WorkflowChanged` shows them) of
     * earlier shapes of this workflow whose unfinished runs it may carry on:
     * the change is declared compatible (the journal's step indexes, outputs
     * and questions still mean the same in the new steps).
     */
    readonly resumes?: ReadonlyArray<string> | undefined
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
  readonly durability: "run" | "step"
  readonly persist: "state" | "changes"
  readonly history: SessionStore.HistoryOptions | undefined
  readonly version: string | undefined
  readonly resumes: ReadonlyArray<string>
}

/** @internal */
const fromFields = <W extends Any>(fields: Fields): W => {
  const wf = Object.create(Proto)
  wf[TypeId] = TypeId
  Object.assign(wf, fields)
  return wf
}

/** @internal */
export const fromOptions = <W extends Any>(
  options: MakeOptions<ReadonlyArray<step.Any>, InputSchema, SessionState.Any>
): W =>
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
    userId: options.userId,
    durability: options.durability ?? "run",
    persist: options.persist ?? "state",
    history: options.history,
    version: options.version,
    resumes: options.resumes ?? []
  })

/** @internal */
const append = <W extends Any, W2 extends Any>(self: W, next: step.Any): W2 =>
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
  ): <E, R, A0 extends Prev>(
    self: Workflow<A0, E, R, In, St>
  ) => Workflow<step.Resolve<A, A0>, E | E2, R | Exclude<R2, Provided<St>>, In, St>
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
    : Effect.mapError(
      Schema.decodeUnknown(self.state.schema as Schema.Schema<unknown, unknown>)(encoded),
      schemaError(sessionId)
    )

/** Encodes a state for storage. @internal */
export const encodeState = (
  self: Any,
  sessionId: string,
  state: unknown
): Effect.Effect<unknown, WorkflowError.StateDecodeError> =>
  self.state === undefined
    ? isPlainObject(state) ? Effect.succeed(state) : Effect.fail(notAnObject(sessionId))
    : Effect.mapError(
      Schema.encode(self.state.schema as Schema.Schema<unknown, unknown>)(state),
      schemaError(sessionId)
    )

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
    children: inner.steps,
    execute: (input: StepInput<EncodedInput<W>>, ctx) =>
      // decoding fails only for an input Schema, which is what puts InputDecodeError in the type
      Effect.flatMap(
        decodeInput(inner, input.previousStepContent) as Effect.Effect<unknown, InputError<W>>,
        (decoded) =>
          Effect.map(
            runSequence(
              inner.steps as ReadonlyArray<step.Step<unknown, Error<W>, Context<W>>>,
              {
                input: decoded,
                previousStepContent: decoded,
                previousStepOutputs: {},
                additionalData: input.additionalData
              },
              nestedExecContext(ctx)
            ),
            (output) => output.content
          )
      )
  })
