/**
 * A workflow: a named sequence of steps run against a persisted session state.
 *
 * Every run belongs to a session. The run decodes its input (with the
 * workflow's `input` Schema, if any), loads the session's state (or a deep
 * copy of the seed for a new session), runs its steps with that state shared
 * by all of them — each step receiving the one before's content, the first one
 * the run input — then commits the final state and the run record together.
 * A failed or interrupted run commits no state change, only its run record.
 *
 * A workflow's type carries the last step's content type `A`, every step's
 * errors `E` and requirements `R` (minus what the workflow provides: its state
 * and the run context), its input Schema `In` and its state tag `St`.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as runner from "./internal/run/runner.js"
import * as shape from "./internal/run/shape.js"
import type * as stepInternal from "./internal/step/node.js"
import * as durable from "./internal/workflow/durable.js"
import * as internal from "./internal/workflow/model.js"
import * as sessions from "./internal/workflow/sessions.js"
import * as Placement from "./Placement.js"
import type * as SessionState from "./SessionState.js"
import * as SessionStore from "./SessionStore.js"
import type * as Step from "./Step.js"
import type { StepInput } from "./StepInput.js"
import type * as StepOutput from "./StepOutput.js"
import type * as WorkflowError from "./WorkflowError.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: typeof internal.TypeId = internal.TypeId

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = internal.TypeId

/**
 * A workflow whose runs produce `A` (the last step's content), may fail with
 * `E` and need `R` (beyond a `SessionStore`); its run input is decoded with
 * `In` and its state is `St` (a state tag, or `SessionState.Untyped`).
 *
 * @since 0.1.0
 * @category models
 */
export type Workflow<
  A = unknown,
  E = never,
  R = never,
  In extends InputSchema = typeof Schema.Unknown,
  St extends SessionState.Any = SessionState.Untyped
> = internal.Workflow<A, E, R, In, St>

/**
 * A run input Schema (decoding needs no services).
 *
 * @since 0.1.0
 * @category models
 */
export type InputSchema = internal.InputSchema

/**
 * Any workflow.
 *
 * @since 0.1.0
 * @category models
 */
export type Any = internal.Any

/**
 * The content type of a workflow's runs.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Output<W> = internal.Output<W>

/**
 * The errors of a workflow's steps.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Error<W> = internal.Error<W>

/**
 * The requirements of a workflow's steps (minus what the workflow provides).
 *
 * @since 0.1.0
 * @category type-level
 */
export type Context<W> = internal.Context<W>

/**
 * The run input a workflow takes (its input Schema's encoded type).
 *
 * @since 0.1.0
 * @category type-level
 */
export type Input<W> = internal.EncodedInput<W>

/**
 * The state type of a workflow.
 *
 * @since 0.1.0
 * @category type-level
 */
export type State<W> = SessionState.Type<internal.StateOf<W>>

/**
 * The stored (encoded) state type of a workflow.
 *
 * @since 0.1.0
 * @category type-level
 */
export type StateEncoded<W> = SessionState.Encoded<internal.StateOf<W>>

/**
 * The options of {@link make}.
 *
 * @since 0.1.0
 * @category options
 */
export type MakeOptions<S extends ReadonlyArray<Step.Any>, In extends InputSchema, St extends SessionState.Any> =
  internal.MakeOptions<S, In, St>

/**
 * Builds a workflow.
 *
 * - `steps`: a tuple of steps, each accepting what the one before produces
 *   (the first one the run input); or none, and add them with {@link andThen},
 *   which types each inline step's input from the step before.
 * - `input`: a Schema the run input is decoded with at the start of every run
 *   (a bad input fails with `InputDecodeError` before anything runs).
 * - `state`: a typed state tag (`SessionState.Tag`): the stored state is
 *   decoded with its Schema, steps may use the tag, and the workflow provides
 *   it. Without it the state is an untyped JSON object. Either way steps can
 *   use `SessionState.SessionState` and `RunContext.RunContext`; every other
 *   requirement of the steps stays in the workflow's `R`.
 * - `sessionState`: the seed of new sessions, in the state's encoded form; it
 *   is required when the state Schema cannot decode `{}`.
 *
 * ```ts
 * const orders = Workflow.make({
 *   name: "orders",
 *   input: Schema.String,
 *   state: Orders,
 *   sessionState: { orders: [] }
 * }).pipe(
 *   Workflow.andThen("parse", ({ input }) => parseOrder(input)),               // input: string
 *   Workflow.andThen("save", ({ previousStepContent: order }) => saveOrder(order)) // order: Order
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: <
  const S extends ReadonlyArray<Step.Any> = [],
  In extends InputSchema = typeof Schema.Unknown,
  St extends SessionState.Any = SessionState.Untyped
>(
  options: MakeOptions<S, In, St>
) => Workflow<
  Step.ChainOutput<S, Schema.Schema.Type<In>>,
  Step.Error<S[number]>,
  Exclude<Step.Context<S[number]>, internal.Provided<St>>,
  In,
  St
> = internal.fromOptions

/**
 * Appends a step to a workflow: a step value, or an executor written inline
 * (`name`, `execute`), whose input is typed from the workflow so far — its
 * `previousStepContent` is the last step's content type, its `input` the
 * decoded run input. A step that cannot accept the previous content does not
 * compile. The step's errors and requirements join the workflow's.
 *
 * ```ts
 * Workflow.make({ name: "w", input: Schema.String }).pipe(
 *   Workflow.andThen("length", ({ previousStepContent: s }) => Effect.succeed(s.length)),
 *   Workflow.andThen("double", ({ previousStepContent: n }) => Effect.succeed(n * 2)),
 *   Workflow.andThen(Step.agent("explain", explainer))
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const andThen: {
  <Prev, In extends InputSchema, St extends SessionState.Any, const N extends string, X, E2 = never, R2 = never>(
    name: N,
    execute: (input: StepInput<Prev, Schema.Schema.Type<In>>) => Effect.Effect<X, E2, R2>,
    options?: Step.Options
  ): <E, R>(
    self: Workflow<Prev, E, R, In, St>
  ) => Workflow<StepOutput.Content<X>, E | E2, R | Exclude<R2, internal.Provided<St>>, In, St>
  <Prev, In extends InputSchema, St extends SessionState.Any, A, E2, R2>(
    step: Step.Step<A, E2, R2, Prev, Schema.Schema.Type<In>, string>
  ): <E, R, A0 extends Prev>(
    self: Workflow<A0, E, R, In, St>
  ) => Workflow<stepInternal.Resolve<A, A0>, E | E2, R | Exclude<R2, internal.Provided<St>>, In, St>
} = internal.andThen

/**
 * A step of a workflow's step tree, as plain data (see {@link describeSteps}):
 * its `name` and `kind`; its `path`, the names from the top level down (as in
 * the `path` of its events); its `description`; the `branch` of its
 * container it belongs to (a `Condition`'s `"steps"` or `"else"`); its
 * `children` (a container's steps: a sequence, a loop's body, a router's
 * choices, a parallel's branches, a nested workflow's steps); `recursive` for
 * a container listed again inside itself, whose children are not repeated.
 *
 * @since 0.1.0
 * @category models
 */
export interface StepNode {
  readonly name: string
  readonly kind: WorkflowEvent.StepKind
  readonly path: ReadonlyArray<string>
  readonly description?: string
  readonly branch?: string
  readonly children?: ReadonlyArray<StepNode>
  readonly recursive?: true
}

/**
 * The Schema of a {@link StepNode} (recursive), for an API that serves a
 * workflow's step tree.
 *
 * @since 0.1.0
 * @category models
 */
export const StepNode: Schema.Schema<StepNode> = Schema.Struct({
  name: Schema.String,
  kind: WorkflowEvent.StepKind,
  path: Schema.Array(Schema.String),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  branch: Schema.optionalWith(Schema.String, { exact: true }),
  children: Schema.optionalWith(Schema.Array(Schema.suspend((): Schema.Schema<StepNode> => StepNode)), { exact: true }),
  recursive: Schema.optionalWith(Schema.Literal(true), { exact: true })
}).annotations({ identifier: "StepNode" })

/**
 * The step tree of a workflow as plain data: one {@link StepNode} per
 * top-level step, containers with their children. It is the tree whose
 * flattened lines are the workflow's shape (what a durable run is carried on
 * under), computed once per workflow value.
 *
 * ```ts
 * const tree = Workflow.describeSteps(orders)
 * // [{ name: "parse", kind: "step", path: ["parse"] }, { name: "save", kind: "step", path: ["save"] }]
 * ```
 *
 * @since 0.1.0
 * @category getters
 */
export const describeSteps: (self: Any) => ReadonlyArray<StepNode> = shape.treeOf

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
  /**
   * The run's id (default: a new UUID). A run given an id that already
   * completed on the session returns its recorded output without running
   * again (its `content` as stored, the session's current `state`, no
   * `stepOutputs`); while a run with that id runs elsewhere, `RunInProgress`;
   * when it was abandoned (its process died: its lease expired, or its
   * process was on this host and is gone, see `SessionStore.ownerGone`), it
   * resumes from its journal. A run id whose run failed, was cancelled or
   * abandoned is `RunEnded`: a run that ended never runs again under its id.
   * This is how a client retries safely after a timeout or a dropped
   * connection. An id outside `SessionStore.Id` is `InvalidRunId`.
   */
  readonly runId?: string | undefined
  /**
   * `"step"`: journal each completed top-level step with the run (never with
   * the session), so that an abandoned run resumes from its last completed
   * step; default: the workflow's `durability` (`"run"`: one commit at the end)
   */
  readonly durability?: "run" | "step" | undefined
  /**
   * How long a tracked run (one with a `runId`, or `durability: "step"`) holds
   * its lease without renewing it (default 10 seconds; it renews every third
   * of that). While it is held, a run with the same id is `RunInProgress`
   * (with `leaseExpiresAt`). A run whose lease expired is abandoned: `Workflow.resume` or
   * `Workflow.recover` carry it on. So is a run whose process was on this
   * host and is gone (`SessionStore.ownerGone`), without waiting for its
   * lease; the process of another host waits for it.
   */
  readonly leaseDuration?: Duration.DurationInput | undefined
  /**
   * `"stored"`: the run's events are written to the store's event log (in
   * batches, with their `seq`), so that {@link events} can replay and follow
   * them, from this process or another; default `"none"` (see the README's
   * "Event log" for what it costs)
   */
  readonly events?: "stored" | "none" | undefined
  /**
   * How much of the run's event log is kept: `maxEvents` per run (default
   * 10,000; the oldest go first), `keepFor` after the run ended (default 1
   * hour). See `SessionStore.EventRetention`.
   */
  readonly eventRetention?: EventRetentionOptions | undefined
  /**
   * What the run does when its session is busy (see the README's "Busy
   * sessions"):
   *
   * - `"reject"` (default): refused before any of its work when the session
   *   is held — a session with a paused run refuses it (`SessionPaused`), one
   *   with a tracked run running in another process under a live lease
   *   `SessionBusy`, a run by id running elsewhere is `RunInProgress`; a run
   *   that loses the race to commit is `SessionConflict`. With
   *   `retryOnConflict` a busy or conflicting run waits and tries again; runs
   *   of one process wait for each other.
   * - `"enqueue"`: the run joins the session's queue in the store and waits
   *   for its turn: after the runs queued before it (from any process over
   *   the store), in arrival order, and while the session has no other
   *   unfinished run (paused, running, or abandoned: a waiting caller carries
   *   an abandoned run of its workflow on itself). Its caller keeps its
   *   place with a lease (`leaseDuration`): a caller whose process died is
   *   dropped from the queue once its lease expired, or at once by a caller
   *   of the same host waiting behind it (`SessionStore.ownerGone`). A paused run holds the
   *   queue until it is continued to its end or cancelled.
   * - `"interrupt"`: what holds the session is cancelled first, committing
   *   nothing: this process's run of the session is interrupted (it is
   *   recorded `cancelled`, and its caller gets `RunEnded` with that status,
   *   as for a run stopped by `Workflow.cancel`), the session's paused
   *   run is cancelled (its question withdrawn), and its runs running in
   *   other processes with an unfinished-run entry (a `runId`, or
   *   `durability: "step"`) are cancelled through the store and stop at their
   *   next lease renewal, their commit refused. Then the run runs. A plain
   *   run of another process (no entry) cannot be reached: if it commits
   *   first, this run meets a `SessionConflict` as under `"reject"`.
   *
   * Under `"reject"` and `"interrupt"`, a run of the session's queue that
   * takes its turn while this run starts is not passed over: whichever of
   * the two the store orders first runs (the queue's run waits for a run
   * registered before its turn), and this run, registered after the turn,
   * is refused before any of its work (`SessionBusy`).
   */
  readonly onBusy?: OnBusy | undefined
  /**
   * What an interruption of the caller does to a tracked run (one with a
   * `runId`, or journaled): `"cancel"` (default) ends it, recorded
   * `cancelled`; `"release"` stops it without ending it — it is left
   * unfinished, its lease given up at once, for whoever carries it on next
   * (`DurableRuns`, `recover`, a run or redelivery with its id), from its
   * journal. A runner that hands a run over (a cluster shard moving) releases
   * it; `Workflow.start` releases its runs when their scope closes.
   */
  readonly onInterrupt?: "cancel" | "release" | undefined
}

/**
 * What a run does at a busy session (see {@link RunOptions}'s `onBusy`).
 *
 * @since 0.1.0
 * @category options
 */
export const OnBusy = Schema.Literal("reject", "enqueue", "interrupt")

/**
 * @since 0.1.0
 * @category options
 */
export type OnBusy = typeof OnBusy.Type

/**
 * @since 0.1.0
 * @category options
 */
export interface EventRetentionOptions {
  readonly maxEvents?: number | undefined
  readonly keepFor?: Duration.DurationInput | undefined
}

/**
 * The result of a completed run.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOutput<A, S> {
  readonly runId: string
  readonly sessionId: string
  readonly userId: string | undefined
  readonly workflowName: string
  readonly status: "completed"
  /** the content of the last step */
  readonly content: A
  /** every step output, in completion order (containers after their children) */
  readonly stepOutputs: ReadonlyArray<StepOutput.StepOutput>
  /** the committed state */
  readonly state: S
  /**
   * the tokens the run's model calls used, summed over its agents' calls
   * (absent when the run called no model)
   */
  readonly usage?: SessionStore.RunUsage | undefined
}

/**
 * Errors every run may fail with, besides its steps' errors.
 *
 * @since 0.1.0
 * @category models
 */
export type RunError = WorkflowError.RunError

/**
 * Runs the workflow once on a session and commits the result. `input` is the
 * run input in its encoded form (decoded with the workflow's `input` Schema).
 * A run that pauses (a step asked a person, see `Step.pause`) fails with
 * `RunPaused`, having committed nothing: `continue` carries it on.
 *
 * @since 0.1.0
 * @category running
 */
export const run: <W extends Any>(
  self: W,
  input: Input<W>,
  options?: RunOptions<StateEncoded<W>>
) => Effect.Effect<RunOutput<Output<W>, State<W>>, Error<W> | RunError, Context<W> | SessionStore.SessionStore> = (
  self,
  input,
  options
) =>
  Effect.flatMap(Placement.Placement, (placement) =>
    placement._tag === "Local"
      // in a `Workflow.run` span when a tracer is installed (see `internal/tracing.ts`)
      ? runner.run(self, input, options as RunOptions<unknown> | undefined, undefined)
      : placement.run(self, input, options as RunOptions<unknown> | undefined) as Effect.Effect<
        RunOutput<Output<typeof self>, State<typeof self>>,
        Error<typeof self> | RunError
      >)

/**
 * Runs the workflow and streams its events as they happen, ending with
 * `RunCompleted` (or failing with the run's error after `RunFailed`; or, when
 * the run pauses, ending with `RunPaused`). Stopping the stream early
 * interrupts the run, which then commits no state change and is recorded as
 * cancelled.
 *
 * @since 0.1.0
 * @category running
 */
export const stream: <W extends Any>(
  self: W,
  input: Input<W>,
  options?: RunOptions<StateEncoded<W>>
) => Stream.Stream<
  WorkflowEvent.WorkflowEvent,
  Exclude<Error<W> | RunError, WorkflowError.RunPaused>,
  Context<W> | SessionStore.SessionStore
> = (self, input, options) =>
  Stream.unwrap(Effect.map(Placement.Placement, (placement) =>
    placement._tag === "Local"
      ? runner.eventStream((sink) => runner.run(self, input, options as RunOptions<unknown> | undefined, sink))
      : placement.stream(self, input, options as RunOptions<unknown> | undefined) as Stream.Stream<
        WorkflowEvent.WorkflowEvent,
        Exclude<Error<typeof self> | RunError, WorkflowError.RunPaused>
      >))

/**
 * @since 0.1.0
 * @category options
 */
export interface ContinueOptions {
  /** else the workflow's `userId`; the run's session must be this user's */
  readonly userId?: string | undefined
  /**
   * When the session changed since the run started (another run committed),
   * start the run over on the new state (under the same id) instead of failing
   * with `SessionConflict`: `true` for up to 100 attempts, or a number.
   */
  readonly retryOnConflict?: boolean | number | undefined
  /** the lease of the carried-on run (see `RunOptions.leaseDuration`) */
  readonly leaseDuration?: Duration.DurationInput | undefined
  /** `"stored"`: the carried-on run's events go on in its event log (see `RunOptions.events`) */
  readonly events?: "stored" | "none" | undefined
  /** see `RunOptions.eventRetention` */
  readonly eventRetention?: EventRetentionOptions | undefined
  /**
   * `continue`: the pause this answer is for (the `key` of the `RunPaused`
   * error or event). The answer is taken only while the run waits at that
   * pause: a run that went on (another answer was taken first, and it may
   * wait at another question now) fails with `PauseMismatch` and is left as
   * it is. Without it, the answer goes to the pause the run waits at when
   * `continue` reads it — which, when several callers answer at once, may not
   * be the question the caller saw: name the pause wherever an answer comes
   * from a person or another process.
   */
  readonly pause?: string | undefined
  /** see `RunOptions.onInterrupt` */
  readonly onInterrupt?: "cancel" | "release" | undefined
}

/**
 * The errors of carrying on an unfinished run, besides its steps' errors.
 *
 * @since 0.1.0
 * @category models
 */
export type ContinueError =
  | RunError
  | WorkflowError.RunNotFound
  | WorkflowError.ResponseDecodeError
  | WorkflowError.PauseMismatch

/**
 * Carries on an abandoned run (the process running it died: its lease
 * expired, or that process was on this host and is gone), in this process,
 * from its last journaled step: the steps completed
 * before are not run again (their outputs come from the journal). Exactly one
 * of several processes resuming the same run wins; the others get
 * `RunInProgress`. If the session was committed by another run since, the run
 * ends with `SessionConflict`, unless `retryOnConflict` (then it starts over
 * on the new state). A paused run resumed this way asks its question again.
 * A run started by a workflow of another shape (step tree or `version`) is
 * `WorkflowChanged` and left as it was, unless `self` lists the run's version
 * in `resumes` (see `Workflow.make`).
 *
 * @since 0.1.0
 * @category durable runs
 */
export const resume: <W extends Any>(
  self: W,
  runId: string,
  options?: ContinueOptions
) => Effect.Effect<RunOutput<Output<W>, State<W>>, Error<W> | ContinueError, Context<W> | SessionStore.SessionStore> =
  durable.resume

/**
 * `resume`, streaming the run's events (starting with `RunResumed`).
 *
 * @since 0.1.0
 * @category durable runs
 */
export const resumeStream: <W extends Any>(
  self: W,
  runId: string,
  options?: ContinueOptions
) => Stream.Stream<
  WorkflowEvent.WorkflowEvent,
  Exclude<Error<W> | ContinueError, WorkflowError.RunPaused>,
  Context<W> | SessionStore.SessionStore
> = durable.resumeStream

/**
 * Carries on a paused run with the answer to its question: `response` is
 * decoded with the pausing step's response Schema (a response that does not
 * fit is a `ResponseDecodeError`, and the run stays paused). The run continues
 * from the top-level step that asked (which runs again, its question now
 * answered), in this process, days later or not. It may pause again. A
 * response that is not JSON (see `NotSerializable`) is refused and the run
 * stays paused; a run started by a workflow of another shape is
 * `WorkflowChanged` (see {@link resume}). A run that sleeps or waits for a
 * signal asks no question: it is refused with `RunNotFound` (send a signal
 * with {@link signal}).
 *
 * @since 0.1.0
 * @category durable runs
 */
export const continue_: <W extends Any>(
  self: W,
  runId: string,
  response: unknown,
  options?: ContinueOptions
) => Effect.Effect<RunOutput<Output<W>, State<W>>, Error<W> | ContinueError, Context<W> | SessionStore.SessionStore> = (
  self,
  runId,
  response,
  options
) =>
  Effect.flatMap(Placement.Placement, (placement) =>
    placement._tag === "Local"
      ? durable.continue_(self, runId, response, options)
      : placement.continue(self, runId, response, options) as Effect.Effect<
        RunOutput<Output<typeof self>, State<typeof self>>,
        Error<typeof self> | ContinueError
      >)

export {
  /**
   * @since 0.1.0
   * @category durable runs
   */
  continue_ as continue
}

/**
 * `continue`, streaming the run's events (starting with `RunResumed`).
 *
 * @since 0.1.0
 * @category durable runs
 */
export const continueStream: <W extends Any>(
  self: W,
  runId: string,
  response: unknown,
  options?: ContinueOptions
) => Stream.Stream<
  WorkflowEvent.WorkflowEvent,
  Exclude<Error<W> | ContinueError, WorkflowError.RunPaused>,
  Context<W> | SessionStore.SessionStore
> = (self, runId, response, options) =>
  Stream.unwrap(Effect.map(Placement.Placement, (placement) =>
    placement._tag === "Local"
      ? durable.continueStream(self, runId, response, options)
      : placement.continueStream(self, runId, response, options) as Stream.Stream<
        WorkflowEvent.WorkflowEvent,
        Exclude<Error<typeof self> | ContinueError, WorkflowError.RunPaused>
      >))

/**
 * What {@link signal} did with a signal: `Kept` (stored with the run, whose
 * next wait for it takes it), or `Delivered` to the run that waited for it,
 * which was carried on in this process to its end (`output`).
 *
 * @since 0.1.0
 * @category durable runs
 */
export type SignalResult<A, S> = durable.SignalResult<RunOutput<A, S>>

/**
 * Sends the signal `name` to an unfinished run (see `Step.waitFor`). `value`
 * is the signal's encoded form: it is decoded with the Schema of the
 * workflow's `Step.waitFor` steps named `name` and refused with
 * `SignalDecodeError` when it does not fit (or when no step waits for such a
 * signal); nothing is stored then. Else it is stored with the run:
 *
 * - when the run waits for this signal now, it is woken and carried on in
 *   this process, like {@link continue}, with the first signal of that name
 *   it has not taken (signals are taken in the order they were stored, each
 *   by one wait). When that was this signal, the result is `Delivered` with
 *   the run's output (it may pause, sleep or wait again: `RunPaused`). When
 *   the wait took an earlier signal, this one is `Kept` for the run's next
 *   wait (or, if the run ended meanwhile, `RunEnded`: it was never taken);
 * - otherwise (it runs, sleeps, or waits elsewhere) the signal is `Kept`:
 *   the run's next wait for it takes it, in whichever process runs it.
 *
 * `Delivered` is said only of a signal a wait took. A run this call carries
 * on may still end otherwise — cancelled meanwhile, taken over by another
 * process, failed — and the call then fails as `continue` would (`RunEnded`,
 * `RunLost`, the run's error), whether or not its wait took this signal
 * first: the run's events say which it took.
 *
 * A run that ended takes no signal (`RunEnded`); a run of another workflow
 * or none is `RunNotFound`; another user's run `SessionOwnershipError`.
 *
 * @since 0.1.0
 * @category durable runs
 */
export const signal: <W extends Any>(
  self: W,
  runId: string,
  name: string,
  value: unknown,
  options?: ContinueOptions
) => Effect.Effect<
  SignalResult<Output<W>, State<W>>,
  Error<W> | ContinueError | WorkflowError.SignalDecodeError,
  Context<W> | SessionStore.SessionStore
> = durable.signal

/**
 * Ends an unfinished run (paused, or running here or elsewhere) without
 * committing anything: it is recorded as `cancelled` at once, so its commit
 * can no longer land. A running run's steps are interrupted (their later
 * effects never happen): at once when it runs in this process over the same
 * store, at its next lease renewal (every third of its `leaseDuration`) when
 * it runs in another process. The run's caller (a `Workflow.run`, `stream`,
 * `resume` or `continue`) then fails with `RunEnded` (status `cancelled`),
 * and its event stream ends with `RunCancelled`. Only tracked runs (with a
 * `runId`, `durability: "step"`, or started with {@link start}) are known
 * to the store and can be cancelled. A run that ended already (completed,
 * failed, cancelled) is `RunEnded`.
 *
 * @since 0.1.0
 * @category durable runs
 */
export const cancel: <W extends Any>(
  self: W,
  runId: string,
  options?: SessionOptions
) => Effect.Effect<void, CancelError, SessionStore.SessionStore> = (self, runId, options) =>
  Effect.flatMap(Placement.Placement, (placement) =>
    placement._tag === "Local"
      ? durable.cancel(self, runId, options)
      : placement.cancel(self, runId, options) as Effect.Effect<void, CancelError>)

/**
 * The errors of {@link cancel}.
 *
 * @since 0.1.0
 * @category models
 */
export type CancelError =
  | WorkflowError.RunNotFound
  | WorkflowError.RunEnded
  | WorkflowError.InvalidRunId
  | WorkflowError.SessionOwnershipError
  | WorkflowError.SessionStoreError
  | WorkflowError.RunLost
  | WorkflowError.PlacementError

/**
 * A run started in the background (see {@link start}).
 *
 * @since 0.1.0
 * @category background runs
 */
export interface StartedRun {
  readonly runId: string
  readonly sessionId: string
}

/**
 * Starts a run in the background and returns its id (and its session's) as
 * soon as the run is registered in the store, so that a status read right
 * after ({@link getRunStatus}) finds it; the run goes on in this process.
 * A run refused before it is registered (a bad input, a paused session, a
 * run id taken) fails `start` with that error instead. A run id whose run
 * completed returns at once (the run is not run again).
 *
 * The run is a fiber forked into the caller's `Scope` (as `Effect.forkScoped`
 * would): give it the scope of what owns the runs — a layer's scope
 * (`Layer.scoped`), a server's, or the program's — not a short
 * `Effect.scoped` around the call. When that scope closes (the process shuts
 * down), the run is not cancelled: it is stopped and left unfinished, its
 * lease given up at once, and recovery (`DurableRuns.layer`, or
 * `Workflow.recover`) carries it on, here or in another process, as it
 * does for a run whose process died. With `durability: "step"` it carries on
 * from its last completed step, else from the start. `Workflow.cancel` ends
 * it for good.
 *
 * It is tracked (a run id is made when none is given), holds a lease like any
 * tracked run, and its outcome is read with {@link getRunStatus}, its events
 * (with `events: "stored"`) with {@link events}.
 *
 * ```ts no-check
 * const program = Effect.gen(function*() {
 *   const { runId } = yield* Workflow.start(orders, "2 apples", { events: "stored" })
 *   const status = yield* Workflow.getRunStatus(orders, runId) // { _tag: "Running", ... }
 * })
 * ```
 *
 * @since 0.1.0
 * @category background runs
 */
export const start: <W extends Any>(
  self: W,
  input: Input<W>,
  options?: RunOptions<StateEncoded<W>>
) => Effect.Effect<
  StartedRun,
  RunError | WorkflowError.RunPaused,
  Context<W> | SessionStore.SessionStore | Scope.Scope
> = (self, input, options) =>
  durable.start(self, input, options as RunOptions<unknown> | undefined) as Effect.Effect<
    StartedRun,
    RunError | WorkflowError.RunPaused,
    never
  >

const queuedFields = {
  runId: Schema.String,
  sessionId: Schema.String,
  workflowName: Schema.String,
  userId: Schema.optionalWith(Schema.String, { exact: true }),
  /** the run input, as recorded (null when it was not JSON) */
  input: Schema.Unknown
}

const runFields = {
  ...queuedFields,
  /** epoch milliseconds */
  startedAt: Schema.Number
}

const usageField = { usage: Schema.optionalWith(SessionStore.RunUsage, { exact: true }) }

/**
 * Where a run stands (see {@link getRunStatus}, and the run lifecycle in the
 * README), one case per state:
 *
 * - `Queued`: waiting in its session's queue (`onBusy: "enqueue"`) since
 *   `queuedAt`, behind `position` runs of the queue (0: the first, whose turn
 *   has come or comes as soon as the session is free); not started yet;
 * - `Running`: an owner (a store, in some process) runs it and holds its
 *   lease until `leaseExpiresAt`; `leaseExpired` when that passed (its
 *   process died): recovery carries it on;
 * - `Paused`: waiting for a person's answer (`pause`: its question;
 *   `timeoutAt` when it times out);
 * - `Sleeping`: in a durable sleep (`Step.sleep`) until `wakeAt`;
 * - `Waiting`: waiting for the signal `signal` (`Step.waitFor`), until
 *   `timeoutAt` when it times out;
 * - `Completed`: committed, with its `content`;
 * - `Failed`: a step (or its commit) failed; nothing was committed (`error`);
 * - `Cancelled`: cancelled (`Workflow.cancel`, a client that went away, a
 *   timeout); nothing was committed;
 * - `Abandoned`: given up by recovery; nothing was committed (`reason`).
 *
 * `usage`: the tokens its model calls used (so far, while unfinished).
 *
 * @since 0.1.0
 * @category background runs
 */
export const RunStatus = Schema.Union(
  Schema.TaggedStruct("Queued", {
    ...queuedFields,
    /** epoch milliseconds: when it was queued */
    queuedAt: Schema.Number,
    /** how many runs of the session's queue are ahead of it */
    position: Schema.Number
  }),
  Schema.TaggedStruct("Running", {
    ...runFields,
    owner: Schema.String,
    /** epoch milliseconds */
    leaseExpiresAt: Schema.Number,
    leaseExpired: Schema.Boolean,
    ...usageField
  }),
  Schema.TaggedStruct("Paused", {
    ...runFields,
    pause: Schema.Struct({
      path: Schema.Array(Schema.String),
      key: Schema.String,
      payload: Schema.Unknown,
      /** epoch milliseconds */
      pausedAt: Schema.Number
    }),
    /** epoch milliseconds: when the question times out */
    timeoutAt: Schema.optionalWith(Schema.Number, { exact: true }),
    ...usageField
  }),
  Schema.TaggedStruct("Sleeping", {
    ...runFields,
    /** epoch milliseconds: when it wakes */
    wakeAt: Schema.Number,
    ...usageField
  }),
  Schema.TaggedStruct("Waiting", {
    ...runFields,
    /** the name of the signal it waits for */
    signal: Schema.String,
    /** epoch milliseconds: when the wait times out */
    timeoutAt: Schema.optionalWith(Schema.Number, { exact: true }),
    ...usageField
  }),
  Schema.TaggedStruct("Completed", {
    ...runFields,
    content: Schema.Unknown,
    ...usageField,
    completedAt: Schema.Number
  }),
  Schema.TaggedStruct("Failed", { ...runFields, error: Schema.String, completedAt: Schema.Number }),
  Schema.TaggedStruct("Cancelled", {
    ...runFields,
    reason: Schema.optionalWith(Schema.String, { exact: true }),
    completedAt: Schema.Number
  }),
  Schema.TaggedStruct("Abandoned", {
    ...runFields,
    reason: Schema.optionalWith(Schema.String, { exact: true }),
    completedAt: Schema.Number
  })
).annotations({ identifier: "RunStatus" })

/**
 * A {@link RunStatus}, a completed run's `content` typed as the workflow's
 * output `A` (as stored: the JSON of the last step's content).
 *
 * @since 0.1.0
 * @category background runs
 */
export type RunStatus<A = unknown> =
  | Exclude<typeof RunStatus.Type, { readonly _tag: "Completed" }>
  | (Omit<Extract<typeof RunStatus.Type, { readonly _tag: "Completed" }>, "content"> & { readonly content: A })

/**
 * Where a run of this workflow stands, from any process using the same
 * store: queued (with its place in its session's queue), running, paused
 * (with its question), sleeping, waiting, completed (with its output),
 * failed, cancelled or abandoned. `RunNotFound` when no run of this workflow
 * has the id (or it is a plain run, which the store does not know until it
 * ends, unless it is queued); `SessionOwnershipError` when it is another
 * user's.
 *
 * @since 0.1.0
 * @category background runs
 */
export const getRunStatus: <W extends Any>(
  self: W,
  runId: string,
  options?: SessionOptions
) => Effect.Effect<
  RunStatus<Output<W>>,
  | WorkflowError.RunNotFound
  | WorkflowError.InvalidRunId
  | WorkflowError.SessionOwnershipError
  | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = (self, runId, options) =>
  durable.getRunStatus(self, runId, options) as Effect.Effect<
    RunStatus<never>,
    | WorkflowError.RunNotFound
    | WorkflowError.InvalidRunId
    | WorkflowError.SessionOwnershipError
    | WorkflowError.SessionStoreError,
    SessionStore.SessionStore
  >

/**
 * An unfinished run, as listed by {@link pausedRuns} and {@link unfinishedRuns}.
 *
 * @since 0.1.0
 * @category durable runs
 */
export type UnfinishedRun = SessionStore.ActiveRun

/**
 * The paused runs of this workflow (of one session, when given), oldest
 * first: each with its question (`pause.payload`) and the step that asked.
 *
 * @since 0.1.0
 * @category durable runs
 */
export const pausedRuns: <W extends Any>(
  self: W,
  options?: { readonly sessionId?: string | undefined }
) => Effect.Effect<ReadonlyArray<UnfinishedRun>, WorkflowError.SessionStoreError, SessionStore.SessionStore> =
  durable.pausedRuns

/**
 * The unfinished runs of this workflow: running (with their owner and lease;
 * `abandoned` when the lease expired or the owner is gone, see
 * `SessionStore.isAbandoned`) and paused.
 *
 * @since 0.1.0
 * @category durable runs
 */
export const unfinishedRuns: <W extends Any>(
  self: W,
  options?: { readonly sessionId?: string | undefined }
) => Effect.Effect<
  ReadonlyArray<UnfinishedRun & { readonly abandoned: boolean }>,
  WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = durable.unfinishedRuns

/**
 * @since 0.1.0
 * @category options
 */
export interface RecoverOptions extends ContinueOptions {
  /** `"resume"` (default): carry each abandoned run on; `"abandon"`: end it, recorded as `abandoned` */
  readonly mode?: "resume" | "abandon" | undefined
}

/**
 * What {@link recover} did with one abandoned run.
 *
 * @since 0.1.0
 * @category durable runs
 */
export interface Recovered<A, S> {
  readonly runId: string
  readonly sessionId: string
  readonly outcome: Exit.Exit<RunOutput<A, S> | "abandoned", unknown>
}

/**
 * Finds the runs of this workflow that were abandoned (their lease expired:
 * the process running them died) and resumes them one after the other (or,
 * with `mode: "abandon"`, ends them as `abandoned`). Returns what happened to
 * each; a run another process took first is reported with `RunInProgress`.
 *
 * It also wakes the paused runs that are due (in `"resume"` mode): a sleep
 * that ended (`Step.sleep`), a question or wait whose timeout passed, a wait
 * whose signal was stored as the run paused. `DurableRuns` does all of this
 * by itself, in the background; `recover` is the same, once, in the caller.
 *
 * @since 0.1.0
 * @category durable runs
 */
export const recover: <W extends Any>(
  self: W,
  options?: RecoverOptions
) => Effect.Effect<
  ReadonlyArray<Recovered<Output<W>, State<W>>>,
  WorkflowError.SessionStoreError,
  Context<W> | SessionStore.SessionStore
> = durable.recover

/**
 * A run waiting in (or holding) its session's queue, as listed by {@link queuedRuns}.
 *
 * @since 0.1.0
 * @category durable runs
 */
export type QueuedRun = SessionStore.QueuedRun

/**
 * The runs of this workflow in their sessions' queues (of one session, when
 * given), in arrival order: `running` the one whose turn it is, `waiting`
 * the others (see `onBusy: "enqueue"`).
 *
 * @since 0.1.0
 * @category durable runs
 */
export const queuedRuns: <W extends Any>(
  self: W,
  options?: { readonly sessionId?: string | undefined }
) => Effect.Effect<ReadonlyArray<QueuedRun>, WorkflowError.SessionStoreError, SessionStore.SessionStore> =
  durable.queuedRuns

// -----------------------------------------------------------------------------
// pruning
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category pruning
 */
export interface PruneOptions {
  /** remove the records of runs that ended longer ago than this */
  readonly olderThan?: Duration.DurationInput | undefined
  /** keep only each session's most recent `keepLast` run records (0: none) */
  readonly keepLast?: number | undefined
  /** only this session's runs (default: every session of the workflow) */
  readonly sessionId?: string | undefined
}

/**
 * What {@link prune} removed: run records, their stored events, and the
 * abandoned runs it ended.
 *
 * @since 0.1.0
 * @category pruning
 */
export interface Pruned extends SessionStore.PruneResult {
  /** abandoned runs (their lease expired) idle for `olderThan`, ended with their journals, recorded as abandoned */
  readonly abandoned: number
}

/**
 * Removes the run history of this workflow's sessions (or of one session)
 * by age or count: the records of runs that ended more than `olderThan` ago,
 * and those beyond each session's `keepLast` most recent (a record either
 * rule names goes), with their stored events. With `olderThan`, abandoned
 * runs (their lease expired) not updated for that long are ended first
 * (recorded as `abandoned`, their journals removed); paused runs and running
 * ones are left alone. Sessions and their states stay. Without a rule, or
 * with one out of range, `InvalidPruneOptions` and nothing is removed.
 *
 * Stores also bound each session's records on their own (see
 * `SessionStore.defaultKeepRuns`); `prune` is for a tighter bound or for age.
 *
 * ```ts
 * Workflow.prune(orders, { olderThan: "30 days", keepLast: 100 })
 * ```
 *
 * @since 0.1.0
 * @category pruning
 */
export const prune: <W extends Any>(
  self: W,
  options: PruneOptions
) => Effect.Effect<
  Pruned,
  | WorkflowError.InvalidPruneOptions
  | WorkflowError.InvalidSessionId
  | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = durable.prune

// -----------------------------------------------------------------------------
// event logs
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category event logs
 */
export interface EventsOptions extends SessionOptions, SessionStore.WatchOptions {
  /** only the events with a greater `seq` (a client's last seen event, e.g. `Last-Event-ID`); default: all */
  readonly after?: number | undefined
}

/**
 * The events of a run stored with `events: "stored"`, as a `Stream`: the
 * stored ones with a `seq` above `after`, in order, then the later ones as
 * they are stored, until the run ends (`RunCompleted`, `RunFailed`,
 * `RunCancelled`) or pauses (`RunPaused`). It works from any process using
 * the same store: in the process running the run, readers are told of each
 * batch at once; in another, the store tells them (PostgreSQL: `NOTIFY`) or
 * they poll it (SQLite: every `pollInterval`, default 250 millis). Events are
 * read by `seq`: none twice, none skipped. A run whose process died (an
 * abandoned run) is followed until it is resumed and ends.
 *
 * Fails with `RunNotFound` when the run is not one of this workflow (or not
 * this user's), when it has no stored events, or when the events after `after`
 * are no longer kept (see `eventRetention`); with `InvalidRunId` when `runId`
 * is outside `SessionStore.Id`.
 *
 * @since 0.1.0
 * @category event logs
 */
export const events: <W extends Any>(
  self: W,
  runId: string,
  options?: EventsOptions
) => Stream.Stream<
  WorkflowEvent.WorkflowEvent,
  | WorkflowError.RunNotFound
  | WorkflowError.InvalidRunId
  | WorkflowError.SessionOwnershipError
  | WorkflowError.SessionStoreError,
  SessionStore.SessionStore
> = durable.events

// -----------------------------------------------------------------------------
// sessions
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category options
 */
export interface SessionOptions {
  /** else the workflow's `userId` */
  readonly userId?: string | undefined
}

/**
 * The errors of reading a session.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionError =
  | WorkflowError.SessionIdRequired
  | WorkflowError.InvalidSessionId
  | WorkflowError.SessionNotFound
  | WorkflowError.SessionOwnershipError
  | WorkflowError.SessionStoreError

/**
 * @since 0.1.0
 * @category options
 */
export interface StateOptions extends SessionOptions {
  /**
   * the state as committed at this version of the session (one it keeps: see
   * {@link sessionVersions}), instead of the current one
   */
  readonly version?: number | undefined
}

/**
 * The stored state of a session (the workflow's `sessionId` when none is
 * given), decoded with the workflow's state Schema; with `version`, the state
 * as committed at that version, when the session keeps it (see the
 * workflow's `history` option), else `VersionNotFound` (`missing`: never
 * committed; `not-kept`: dropped by the retention).
 *
 * ```ts
 * const versions = yield* Workflow.sessionVersions(orders, "s1")
 * const before = yield* Workflow.getSessionState(orders, "s1", { version: versions[0]!.version })
 * ```
 *
 * @since 0.1.0
 * @category sessions
 */
export const getSessionState: {
  <W extends Any>(
    self: W,
    sessionId: string | undefined,
    options: StateOptions & { readonly version: number }
  ): Effect.Effect<
    State<W>,
    SessionError | WorkflowError.StateDecodeError | WorkflowError.VersionNotFound,
    SessionStore.SessionStore
  >
  <W extends Any>(
    self: W,
    sessionId?: string | undefined,
    options?: SessionOptions & { readonly version?: undefined }
  ): Effect.Effect<State<W>, SessionError | WorkflowError.StateDecodeError, SessionStore.SessionStore>
  <W extends Any>(
    self: W,
    sessionId?: string | undefined,
    options?: StateOptions
  ): Effect.Effect<
    State<W>,
    SessionError | WorkflowError.StateDecodeError | WorkflowError.VersionNotFound,
    SessionStore.SessionStore
  >
} = sessions.getSessionState as
  & typeof sessions.getSessionState
  & (<W extends Any>(
    self: W,
    sessionId?: string | undefined,
    options?: SessionOptions & { readonly version?: undefined }
  ) => Effect.Effect<State<W>, SessionError | WorkflowError.StateDecodeError, SessionStore.SessionStore>)

/**
 * The kept versions of a session, oldest first: each with the run whose
 * commit made it, when, and the top-level keys of the state it changed (see
 * `SessionStore.VersionInfo`). How many are kept is the workflow's `history`
 * option (else the store's, else the last 20).
 *
 * @since 0.1.0
 * @category sessions
 */
export const sessionVersions: <W extends Any>(
  self: W,
  sessionId?: string | undefined,
  options?: SessionOptions
) => Effect.Effect<ReadonlyArray<SessionStore.VersionInfo>, SessionError, SessionStore.SessionStore> =
  sessions.sessionVersions

/**
 * @since 0.1.0
 * @category options
 */
export interface ForkOptions extends SessionOptions {
  /** the version to fork from (a kept one); default: the session's current version */
  readonly atVersion?: number | undefined
  /** the new session's id (default: a new UUID); `SessionExists` when it is taken */
  readonly newSessionId?: string | undefined
  /**
   * a paused run of the session: the fork starts from the version that run
   * started from, and gets a copy of the run, paused at the same question
   * under a new id (the result's `runId`), to continue differently from the
   * original
   */
  readonly atRun?: string | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ForkResult {
  readonly sessionId: string
  /** the new session's version: the version it was forked from */
  readonly version: number
  /** with `atRun`: the id of the fork's copy of the paused run */
  readonly runId?: string | undefined
}

/**
 * Creates a new session from a kept version of a session: its state is the
 * state at that version, its version that number, its kept versions the
 * original's up to it; it belongs to the caller (`userId`, else the
 * workflow's). Runs on the fork never touch the original, nor runs on the
 * original the fork. With `atRun`, the fork starts where a paused run started,
 * with a copy of that run, paused at the same question (continue it with
 * `Workflow.continue` and the result's `runId`); the fork is made first, then
 * the copy of the run is registered.
 *
 * ```ts
 * const { sessionId } = yield* Workflow.fork(orders, "s1", { atVersion: 3, newSessionId: "s1-retry" })
 * yield* Workflow.run(orders, "another order", { sessionId })
 * ```
 *
 * @since 0.1.0
 * @category sessions
 */
export const fork: <W extends Any>(
  self: W,
  sessionId: string | undefined,
  options?: ForkOptions
) => Effect.Effect<
  ForkResult,
  | SessionError
  | WorkflowError.VersionNotFound
  | WorkflowError.SessionExists
  | WorkflowError.StateDecodeError
  | WorkflowError.RunNotFound
  | WorkflowError.InvalidRunId,
  SessionStore.SessionStore
> = sessions.fork

/**
 * Changes the stored state of a session outside of a run (atomically, with
 * the same conflict check as a run). Returns the new state. A session with a
 * paused run refuses it (`SessionPaused`), as it refuses new runs; a state
 * that a run would not store (not JSON that reads back the same, or with a
 * `"__proto__"` key) is refused with `NotSerializable`.
 *
 * @since 0.1.0
 * @category sessions
 */
export const updateSessionState: <W extends Any>(
  self: W,
  sessionId: string | undefined,
  f: (state: State<W>) => State<W>,
  options?: SessionOptions
) => Effect.Effect<
  State<W>,
  | SessionError
  | WorkflowError.StateDecodeError
  | WorkflowError.SessionConflict
  | WorkflowError.SessionPaused
  | WorkflowError.NotSerializable,
  SessionStore.SessionStore
> = sessions.updateSessionState

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
export const setSessionName: <W extends Any>(
  self: W,
  sessionId: string | undefined,
  name: string | { readonly autogenerate: true },
  options?: SessionOptions
) => Effect.Effect<string, SessionError, SessionStore.SessionStore> = sessions.setSessionName

/**
 * The session's name, if it has one.
 *
 * @since 0.1.0
 * @category sessions
 */
export const getSessionName: <W extends Any>(
  self: W,
  sessionId?: string | undefined,
  options?: SessionOptions
) => Effect.Effect<Option.Option<string>, SessionError, SessionStore.SessionStore> = sessions.getSessionName

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
export const getSession: <W extends Any>(
  self: W,
  sessionId?: string | undefined,
  options?: SessionOptions
) => Effect.Effect<Session<State<W>>, SessionError | WorkflowError.StateDecodeError, SessionStore.SessionStore> =
  sessions.getSession

/**
 * A committed change to a session, with its state decoded.
 *
 * @since 0.1.0
 * @category watching
 */
export interface SessionUpdate<A> {
  readonly sessionId: string
  /** the session's version after the commit (strictly increasing along one watch) */
  readonly version: number
  /** how many committed versions this update coalesced before its own (see `SessionStore.SessionChange`) */
  readonly skipped: number
  /** the committed state, decoded with the workflow's state Schema */
  readonly state: A
  /** the run whose commit made this version; undefined for a change outside a run (`updateSessionState`) */
  readonly runId: string | undefined
  /** epoch milliseconds */
  readonly updatedAt: number
}

/**
 * @since 0.1.0
 * @category options
 */
export interface WatchOptions extends SessionOptions, SessionStore.WatchOptions {}

/**
 * The errors of watching a session.
 *
 * @since 0.1.0
 * @category watching
 */
export type WatchError =
  | WorkflowError.SessionIdRequired
  | WorkflowError.InvalidSessionId
  | WorkflowError.SessionOwnershipError
  | WorkflowError.SessionStoreError
  | WorkflowError.StateDecodeError

/**
 * The committed changes to a session (the workflow's `sessionId` when none is
 * given) as a `Stream`, from every process using the same store: first the
 * session's current version, then each later one in order (see
 * `SessionStore.Backend.watch`: a polling store may skip intermediate
 * versions, never the latest). A session that does not exist yet is waited
 * for. Commits that leave the state alone (a run record, a name) emit
 * nothing. The stream never ends by itself: interrupt it (e.g. `Stream.take`,
 * `Stream.interruptWhen`).
 *
 * Each change is checked like a read: a session owned by another user fails
 * the stream with `SessionOwnershipError`. A committed state that fails the
 * workflow's state Schema (or stored JSON that cannot be parsed) fails the
 * stream with `StateDecodeError`, naming the session.
 *
 * @since 0.1.0
 * @category watching
 */
export const watch: <W extends Any>(
  self: W,
  sessionId?: string | undefined,
  options?: WatchOptions
) => Stream.Stream<SessionUpdate<State<W>>, WatchError, SessionStore.SessionStore> = sessions.watch

/**
 * @since 0.1.0
 * @category options
 */
export interface ListSessionsOptions extends SessionOptions {
  /** only sessions updated at or after this time (epoch milliseconds) */
  readonly updatedSince?: number | undefined
  /** only sessions whose id or name contains this text (A to Z in either case), searched by the store */
  readonly search?: string | undefined
  /** at most this many sessions (and broken rows); the listing's `next` then says where the rest starts */
  readonly limit?: number | undefined
  /** the sessions after this one in the listing's order: the `next` of the page before */
  readonly after?: SessionStore.SessionCursor | undefined
}

/**
 * The sessions of this workflow, most recently updated first (ties by
 * session id), only the given user's when `userId` is set, and apart from
 * them the sessions the store cannot read (`broken`, each with its error), so
 * one damaged row does not hide the others. With `limit`, a page: the store
 * reads only its rows, and `next`, when more follow, is the `after` of the
 * next page (keyset paging: pages hold still while sessions are added or
 * updated).
 *
 * @since 0.1.0
 * @category sessions
 */
export const listSessions: <W extends Any>(
  self: W,
  options?: ListSessionsOptions
) => Effect.Effect<SessionStore.SessionListing, WorkflowError.SessionStoreError, SessionStore.SessionStore> =
  sessions.listSessions

/**
 * Deletes a session with its history.
 *
 * @since 0.1.0
 * @category sessions
 */
export const deleteSession: <W extends Any>(
  self: W,
  sessionId?: string | undefined,
  options?: SessionOptions
) => Effect.Effect<void, SessionError, SessionStore.SessionStore> = sessions.deleteSession

/**
 * The runs of a session, oldest first (`limit`: only the most recent ones;
 * `status`: only runs with that status).
 *
 * @since 0.1.0
 * @category sessions
 */
export const getRunHistory: <W extends Any>(
  self: W,
  sessionId?: string | undefined,
  options?: SessionOptions & SessionStore.RunsOptions
) => Effect.Effect<ReadonlyArray<SessionStore.RunRecord>, SessionError, SessionStore.SessionStore> =
  sessions.getRunHistory

/**
 * @since 0.1.0
 * @category options
 */
export interface ChatHistoryOptions extends SessionOptions {
  /** else the workflow's `sessionId` */
  readonly sessionId?: string | undefined
  /** only the most recent completed runs */
  readonly lastRuns?: number | undefined
}

/**
 * The conversation of a session: the input and output (content) of its
 * completed runs, oldest first. Failed and cancelled runs are left out, and
 * `lastRuns` counts after that.
 *
 * @since 0.1.0
 * @category sessions
 */
export const getChatHistory: <W extends Any>(
  self: W,
  options?: ChatHistoryOptions
) => Effect.Effect<ReadonlyArray<SessionStore.ChatTurn>, SessionError, SessionStore.SessionStore> =
  sessions.getChatHistory
