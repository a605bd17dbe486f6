/**
 * Steps: the nodes of a workflow. Every node — an executor, a sequence, a
 * condition, a router, a loop, a parallel block, an agent, a team, a nested
 * workflow — is a `Step<A, E, R, P, I, N>`:
 *
 * - `A`: the content it produces, which the next step receives as
 *   `previousStepContent`;
 * - `E`, `R`: its errors and requirements, which flow up to the workflow;
 * - `P`: the previous content it accepts, `I`: the run input it accepts
 *   (`unknown` = anything), so a step that needs a `number` after a step that
 *   yields a `string` does not compile;
 * - `N`: its name (a string literal type when written as one).
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Schedule from "effect/Schedule"
import type * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type * as Agent from "./Agent.js"
import * as agentStep from "./internal/agent/agentStep.js"
import * as executors from "./internal/step/executors.js"
import * as internal from "./internal/step/node.js"
import * as nested from "./internal/workflow/model.js"
import type { StepInput } from "./StepInput.js"
import type * as StepOutput from "./StepOutput.js"
import type * as Team from "./Team.js"
import type * as WorkflowError from "./WorkflowError.js"
import type * as WorkflowEvent from "./WorkflowEvent.js"

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
 * A step producing `A`, failing with `E`, needing `R`, that accepts the
 * previous content `P` and the run input `I`; `N` is its name.
 *
 * @since 0.1.0
 * @category models
 */
export type Step<A = unknown, E = never, R = never, P = unknown, I = unknown, N extends string = string> =
  internal.Step<
    A,
    E,
    R,
    P,
    I,
    N
  >

/**
 * Any step.
 *
 * @since 0.1.0
 * @category models
 */
export type Any = internal.Any

/**
 * In an output type: "the content this step received, passed through" (a
 * `Condition` that did not run its branch, a `skipOnError` step that failed).
 * Sequences replace it with the previous step's output type, so
 * `Step<string | Previous>` after a `Step<number>` produces `string | number`.
 *
 * @since 0.1.0
 * @category models
 */
export type Previous = internal.Previous

/**
 * What a step does when it fails: fail the run (default) or record an
 * unsuccessful output and go on.
 *
 * @since 0.1.0
 * @category models
 */
export type OnError = internal.OnError

/**
 * The content type a step produces.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Output<S> = internal.Output<S>

/**
 * The errors of a step type.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Error<S> = internal.Error<S>

/**
 * The requirements of a step type.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Context<S> = internal.Context<S>

/**
 * The previous content a step type accepts.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Input<S> = internal.Input<S>

/**
 * The run input a step type accepts.
 *
 * @since 0.1.0
 * @category type-level
 */
export type RunInput<S> = internal.RunInput<S>

/**
 * The name of a step type.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Name<S> = internal.Name<S>

/**
 * The output of the sequence `S` when it receives `Prev`.
 *
 * @since 0.1.0
 * @category type-level
 */
export type ChainOutput<S extends ReadonlyArray<Any>, Prev> = internal.ChainOutput<S, Prev>

/**
 * The types the steps of a sequence must have: each accepts what the one
 * before produces (`Prev` for the first) and the run input `I`. Containers
 * check their steps against it, so a mismatch is a compile error at the step.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Chain<S extends ReadonlyArray<Any>, Prev, I> = internal.Chain<S, Prev, I>

/**
 * @since 0.1.0
 * @category options
 */
export interface Options {
  readonly description?: string | undefined
  /** `"skip"`: like {@link skipOnError} */
  readonly onError?: OnError | undefined
  /** like {@link withRetry} */
  readonly retry?: Schedule.Schedule<unknown, never> | undefined
}

/**
 * An executor step: an Effect computed from the step input. It may read and
 * write the session state (`SessionState`, or a typed state tag) and the run
 * identity (`RunContext`); those, and anything else it needs, appear in `R`.
 * It returns its content, or a `StepOutput` to control success and `stop`.
 *
 * Annotate the input to require a previous content or run input type
 * (`(input: StepInput<Order>) => …`); inside `Workflow.andThen` the input is
 * typed from the step before.
 *
 * ```ts
 * const count = Step.make("count", () =>
 *   Counter.modify((s) => [`count is ${s.count + 1}`, { count: s.count + 1 }]))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: <const N extends string, X, E = never, R = never, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>) => Effect.Effect<X, E, R>,
  options?: Options
) => Step<StepOutput.Content<X>, E, R, P, I, N> = executors.make

/**
 * An executor from an async function. A rejection fails the step with
 * `StepError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const promise: <const N extends string, X, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>, signal: AbortSignal) => Promise<X>,
  options?: Options
) => Step<StepOutput.Content<X>, WorkflowError.StepError, never, P, I, N> = executors.promise

/**
 * A streaming executor. Every string it emits is published as a `TextDelta`
 * event as soon as it arrives; a `StepOutput` it emits becomes the step's
 * output (else the output is the concatenated text).
 *
 * @since 0.1.0
 * @category constructors
 */
export const stream: <const N extends string, X = never, E = never, R = never, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>) => Stream.Stream<string | StepOutput.StepOutput<X>, E, R>,
  options?: Options
) => Step<string | X, E, R, P, I, N> = executors.stream

/**
 * Options of agent and team steps.
 *
 * @since 0.1.0
 * @category options
 */
export interface AgentOptions<P = unknown, I = unknown> extends Options {
  /**
   * The message for the agent. Default: `StepInput.message(input)`, i.e. the
   * previous step's content (the run input for the first step), as JSON text
   * when it is not a string.
   */
  readonly message?: ((input: StepInput<P, I>) => unknown) | undefined
  /**
   * When the message is not the run input itself, add the run input to the
   * agent's system prompt (under {@link runInputHeading}), so a later step still
   * knows what the user asked. Default `true`.
   */
  readonly includeRunInput?: boolean | undefined
}

/**
 * The heading under which an agent step puts the run input in its agent's
 * system prompt (see {@link AgentOptions.includeRunInput}).
 *
 * @since 0.1.0
 * @category agents
 */
export const runInputHeading: string = agentStep.runInputHeading

/**
 * A step that runs an agent on the step's message (see
 * {@link AgentOptions.message}); its content is the agent's output: the final
 * text (`string`), or the decoded structured output (its Schema's type). The
 * agent's tools share the run's session state; its text deltas and tool
 * calls are published at the step's path. The agent's errors and
 * requirements (its model, its tools' handlers and dependencies) become the
 * step's.
 *
 * @since 0.1.0
 * @category constructors
 */
export const agent: <const N extends string, A, E, R, P = unknown, I = unknown>(
  name: N,
  agent: Agent.Agent<A, E, R>,
  options?: AgentOptions<P, I>
) => Step<A, E, R, P, I, N> = agentStep.agentStep

/**
 * A step that runs a team (see `Team`): the leader gets the step's message,
 * delegates to members, and its output is the step's content. Members'
 * events are published one level below the step's path.
 *
 * @since 0.1.0
 * @category constructors
 */
export const team: <const N extends string, A, E, R, P = unknown, I = unknown>(
  name: N,
  team: Team.Team<A, E, R>,
  options?: AgentOptions<P, I>
) => Step<A, E, R, P, I, N> = agentStep.teamStep

/**
 * A step that runs another workflow's steps inside the current run. The inner
 * workflow's input is this step's previous content (decoded with the inner
 * workflow's `input` Schema, if it has one); it shares the run's session state
 * (so its typed state must be the outer workflow's: another state tag stays a
 * requirement and the outer workflow does not compile unprovided), its events
 * are nested under this step's path, and its errors and requirements become
 * this step's. Its seed, session id and other session options are not used.
 *
 * @since 0.1.0
 * @category constructors
 */
export const workflow: <const N extends string, W extends nested.Any>(
  name: N,
  workflow: W,
  options?: Options
) => Step<
  nested.Output<W>,
  nested.Error<W> | nested.InputError<W>,
  nested.Context<W> | nested.StateRequirement<W>,
  nested.EncodedInput<W>,
  unknown,
  N
> = nested.asStep

/**
 * The options of {@link pause}: `payload`, the Schema of the question (stored
 * and shown in its encoded form); `response`, the Schema of the answer given
 * to `Workflow.continue`; `ask`, which builds the question; `resume`, which
 * carries on with the answer (its value is the step's content); `timeout`,
 * how long the question waits (`after`) before the run wakes by itself and
 * `onTimeout` gives the step's content instead.
 *
 * @since 0.1.0
 * @category options
 */
export interface PauseOptions<
  Payload,
  PayloadI,
  Response,
  ResponseI,
  X,
  E,
  R,
  E2,
  R2,
  P,
  I,
  T = never,
  E3 = never,
  R3 = never
> extends executors.PauseOptions<Payload, PayloadI, Response, ResponseI, X, E, R, E2, R2, P, I, T, E3, R3> {}

/**
 * A step that asks a person and waits for the answer, across processes and
 * restarts: `ask` builds the question (`payload`, a Schema-typed value); the
 * run then pauses, committing nothing of the session, its stream ending with
 * a `RunPaused` event (and `Workflow.run` failing with `RunPaused`, carrying
 * the run id and the encoded payload). `Workflow.continue(wf, runId, response)`
 * — in any process, days later — decodes the response with `response` and
 * carries on: the top-level step containing this one runs again from its
 * start (this step now getting the answer instead of pausing), and `resume`
 * turns the answer into the step's content.
 *
 * ```ts
 * const approve = Step.pause("approve", {
 *   payload: Schema.Struct({ amount: Schema.Number }),
 *   response: Schema.Struct({ approved: Schema.Boolean }),
 *   ask: () => Effect.map(Expenses.get, (s) => ({ amount: s.pending })),
 *   resume: ({ approved }) => Expenses.update((s) => approved ? approve(s) : reject(s))
 * })
 * ```
 *
 * Work done before the question, in the same top-level step, is done again
 * when the run continues: keep side effects after it (in `resume`).
 *
 * With `timeout: { after, onTimeout }`, a question nobody answers within
 * `after` times out: the run wakes by itself (in the process that runs
 * `DurableRuns`, or at a `Workflow.recover`) and `onTimeout`'s value is the
 * step's content. Its `RunPaused` says when (`timeoutAt`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const pause: <
  const N extends string,
  Payload,
  PayloadI,
  Response,
  ResponseI,
  X,
  E = never,
  R = never,
  E2 = never,
  R2 = never,
  P = unknown,
  I = unknown,
  T = never,
  E3 = never,
  R3 = never
>(
  name: N,
  options: PauseOptions<Payload, PayloadI, Response, ResponseI, X, E, R, E2, R2, P, I, T, E3, R3>
) => Step<
  StepOutput.Content<X> | StepOutput.Content<T>,
  E | E2 | E3 | WorkflowError.RunPaused | WorkflowError.ResponseDecodeError,
  R | R2 | R3,
  P,
  I,
  N
> = executors.pause

/**
 * A step that sleeps durably for `duration`: the run is suspended in the
 * store (nothing of the session committed, no fiber, no memory held) with
 * its wake-up time, and wakes in whichever process runs `DurableRuns` when
 * that time comes (or at a `Workflow.recover` after it); the top-level step
 * containing the sleep then runs again from its start, the sleep now over.
 * Its content is the content it received, so it fits anywhere in a sequence.
 *
 * The caller of `Workflow.run` gets `RunPaused` with `kind: "sleep"` and
 * `wakeAt` (a stream ends with the `RunPaused` event saying the same); the
 * session takes no other run until the run ends. A sleep of zero or less
 * does not suspend the run.
 *
 * ```ts
 * const reminder = Workflow.make({ name: "reminder" }).pipe(
 *   Workflow.andThen(Step.sleep("wait a day", "1 day")),
 *   Workflow.andThen("remind", () => Effect.succeed("time to check in"))
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const sleep: <const N extends string>(
  name: N,
  duration: Duration.DurationInput,
  options?: Options
) => Step<Previous, WorkflowError.RunPaused, never, unknown, unknown, N> = executors.sleep

/**
 * The content of a {@link waitFor} step with a timeout whose signal came.
 *
 * @since 0.1.0
 * @category models
 */
export interface Received<A> extends executors.Received<A> {}

/**
 * The content of a {@link waitFor} step with a timeout whose signal did not
 * come in time.
 *
 * @since 0.1.0
 * @category models
 */
export interface TimedOut extends executors.TimedOut {}

/**
 * The options of {@link waitFor}.
 *
 * @since 0.1.0
 * @category options
 */
export interface WaitForOptions extends Options {
  /** how long the step waits for its signal; then its content is `TimedOut` */
  readonly timeout: Duration.DurationInput
}

/**
 * A step that waits for a signal named `name`, sent to the run with
 * `Workflow.signal(wf, runId, name, value)` (or over HTTP): its content is
 * the signal's value decoded with `schema`. A signal sent before the run
 * reaches the step is kept (in the store, with the run) and taken by the
 * first wait for it; each signal is taken by one wait, in the order they
 * were sent. A value that does not fit `schema` is refused by
 * `Workflow.signal` with `SignalDecodeError`, and nothing is stored.
 *
 * While it waits, the run is suspended as for {@link pause} (`RunPaused`
 * with `kind: "signal"` and `signal`). With `timeout`, the content is
 * `Received` (`{ _tag: "Received", value }`) or, when the signal did not
 * come in time, `TimedOut` (the run wakes by itself, as after a
 * {@link sleep}).
 *
 * ```ts
 * const shipping = Workflow.make({ name: "shipping" }).pipe(
 *   Workflow.andThen(Step.waitFor("paid", Schema.Struct({ amount: Schema.Number }), { timeout: "3 days" })),
 *   Workflow.andThen("ship", ({ previousStepContent: paid }) =>
 *     Effect.succeed(paid._tag === "Received" ? `shipping, ${paid.value.amount} paid` : "cancelled: not paid"))
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const waitFor: WaitFor = executors.waitFor as WaitFor

/**
 * The type of {@link waitFor}: with a `timeout`, its content is `Received`
 * or `TimedOut`; without, the decoded value.
 *
 * @since 0.1.0
 * @category constructors
 */
export interface WaitFor {
  <const N extends string, A, AI>(
    name: N,
    schema: Schema.Schema<A, AI>,
    options: WaitForOptions
  ): Step<Received<A> | TimedOut, WorkflowError.RunPaused | WorkflowError.SignalDecodeError, never, unknown, unknown, N>
  <const N extends string, A, AI>(
    name: N,
    schema: Schema.Schema<A, AI>,
    options?: Options
  ): Step<A, WorkflowError.RunPaused | WorkflowError.SignalDecodeError, never, unknown, unknown, N>
}

/**
 * Retries the step (its whole execution) on failure with `schedule`; when the
 * retries are used up, the last failure fails the run (or is skipped, with
 * {@link skipOnError}).
 *
 * @since 0.1.0
 * @category combinators
 */
export const withRetry: {
  (
    schedule: Schedule.Schedule<unknown, never>
  ): <A, E, R, P, I, N extends string>(self: Step<A, E, R, P, I, N>) => Step<A, E, R, P, I, N>
  <A, E, R, P, I, N extends string>(
    self: Step<A, E, R, P, I, N>,
    schedule: Schedule.Schedule<unknown, never>
  ): Step<A, E, R, P, I, N>
} = dual(
  2,
  <A, E, R, P, I, N extends string>(self: Step<A, E, R, P, I, N>, schedule: Schedule.Schedule<unknown, never>) =>
    internal.update(self, { retry: schedule })
)

/**
 * When the step fails, record an unsuccessful output (with the error's
 * message) and go on: the next step receives the content this step received.
 * The step's errors leave the workflow's error type (the run can no longer
 * fail with them), and its output type gains {@link Previous}.
 *
 * @since 0.1.0
 * @category combinators
 */
export const skipOnError = <A, E, R, P, I, N extends string>(
  self: Step<A, E, R, P, I, N>
): Step<A | Previous, never, R, P, I, N> => internal.update(self, { onError: "skip" })

/**
 * Renames a step.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withName: {
  <const N2 extends string>(
    name: N2
  ): <A, E, R, P, I, N extends string>(self: Step<A, E, R, P, I, N>) => Step<A, E, R, P, I, N2>
  <A, E, R, P, I, N extends string, const N2 extends string>(
    self: Step<A, E, R, P, I, N>,
    name: N2
  ): Step<A, E, R, P, I, N2>
} = dual(
  2,
  <A, E, R, P, I, N extends string, N2 extends string>(self: Step<A, E, R, P, I, N>, name: N2) =>
    internal.update(self, { name })
)

/**
 * Runs the children of a container step (see {@link container}): each child
 * gets its events, retry schedule and error policy, and its output is recorded
 * in the run, exactly as for the built-in containers.
 *
 * - `run(step, input)` runs one child on the given input;
 * - `sequence(steps, input)` runs children one after the other from the given
 *   input, each receiving the one before's content (a `stop` output ends it);
 * - `outputs()` is the workflow's completed step outputs by name (for a
 *   child's `previousStepOutputs`), `completed()` every step output of the run
 *   so far, in completion order.
 *
 * @since 0.1.0
 * @category containers
 */
export type Runner = internal.Runner

/**
 * A container step of your own: `execute` gets the step input and a
 * {@link Runner} to run children with, and returns the container's content
 * (or a `StepOutput`). The children's errors and requirements become the
 * container's through the Effect it returns.
 *
 * ```ts
 * // runs its step until the output is even (at most five times)
 * const untilEven = <E, R, I>(name: string, step: Step.Step<number, E, R, number, I>) =>
 *   Step.container(name, (input: StepInput<number, I>, runner) =>
 *     Effect.gen(function*() {
 *       let previous = input.previousStepContent
 *       for (let i = 0; i < 5; i++) {
 *         const output = yield* runner.run(step, {
 *           ...input,
 *           previousStepContent: previous,
 *           previousStepOutputs: runner.outputs()
 *         })
 *         previous = output.content
 *         if (output.content % 2 === 0) break
 *       }
 *       return StepOutput.make({ content: previous, success: previous % 2 === 0 })
 *     }))
 * ```
 *
 * @since 0.1.0
 * @category containers
 */
export const container: <const N extends string, X, E = never, R = never, P = unknown, I = unknown>(
  name: N,
  execute: (input: StepInput<P, I>, runner: Runner) => Effect.Effect<X, E, R>,
  options?: Options & {
    /** the kind shown in events (default `"container"`) */
    readonly kind?: WorkflowEvent.StepKind | undefined
    /**
     * the steps it runs, in the order it declares them: part of the
     * workflow's shape, which a durable run is carried on under (see
     * `Workflow.make`'s `version`); without them only the container's name
     * and kind are
     */
    readonly children?: ReadonlyArray<Any> | undefined
    /**
     * the branch each of `children` belongs to (e.g. `"steps"`, `"else"`),
     * when it runs one of several sequences: shown by
     * `Workflow.describeSteps`
     */
    readonly branches?: ReadonlyArray<string> | undefined
  }
) => Step<StepOutput.Content<X>, E, R, P, I, N> = executors.container
