/**
 * Steps: the nodes of a workflow. Every node — an executor, a sequence, a
 * condition, a router, a loop, a parallel block, an agent, a team — is a
 * `Step<E, R>`: its errors `E` and requirements `R` flow up to the workflow
 * that contains it.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import type * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Agent from "./Agent.js"
import type { ExecContext } from "./internal/engine.js"
import * as WorkflowError from "./WorkflowError.js"
import { message as stepMessage, type StepInput } from "./StepInput.js"
import * as StepOutput from "./StepOutput.js"
import type * as Team from "./Team.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/Step")

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * What a step does when it fails: fail the run (default) or record an
 * unsuccessful output and go on.
 *
 * @since 0.1.0
 * @category models
 */
export type OnError = "fail" | "skip"

/**
 * @since 0.1.0
 * @category models
 */
export interface Step<out E = never, out R = never> extends Pipeable {
  readonly [TypeId]: {
    readonly _E: (_: never) => E
    readonly _R: (_: never) => R
  }
  readonly name: string
  readonly kind: WorkflowEvent.StepKind
  readonly description: string | undefined
  readonly onError: OnError
  readonly retry: Schedule.Schedule<unknown, never> | undefined
  /**
   * Runs the node. Returns a `StepOutput`, or any other value as the content
   * of a successful output. Called by the engine, which emits the step's
   * events, applies `retry`/`onError` and records the output.
   *
   * @internal
   */
  readonly execute: (input: StepInput, ctx: ExecContext) => Effect.Effect<unknown, E, R>
}

/**
 * Any step.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Step<unknown, unknown> {}

/**
 * The errors of a step type.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Error<S> = S extends Step<infer E, infer _R> ? E : never

/**
 * The requirements of a step type.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Context<S> = S extends Step<infer _E, infer R> ? R : never

/**
 * @since 0.1.0
 * @category options
 */
export interface Options {
  readonly description?: string | undefined
  readonly onError?: OnError | undefined
  readonly retry?: Schedule.Schedule<unknown, never> | undefined
}

const Proto = {
  pipe() {
    return pipeArguments(this, arguments)
  }
}

/**
 * Builds a step node. Container modules (`Steps`, `Condition`, `Router`,
 * `Loop`, `Parallel`) and agents use it; most code wants {@link make}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeNode = <E, R>(options: {
  readonly name: string
  readonly kind: WorkflowEvent.StepKind
  readonly execute: (input: StepInput, ctx: ExecContext) => Effect.Effect<unknown, E, R>
  readonly description?: string | undefined
  readonly onError?: OnError | undefined
  readonly retry?: Schedule.Schedule<unknown, never> | undefined
}): Step<E, R> => {
  const step = Object.create(Proto)
  step[TypeId] = TypeId
  step.name = options.name
  step.kind = options.kind
  step.description = options.description
  step.onError = options.onError ?? "fail"
  step.retry = options.retry
  step.execute = options.execute
  return step
}

/**
 * An executor step: an Effect computed from the step input. It may read and
 * write the session state (`SessionState`, or a typed state tag) and the run
 * identity (`RunContext`); those, and anything else it needs, appear in `R`.
 * Return a `StepOutput` to control success/stop, or any value as content.
 *
 * ```ts
 * const count = Step.make("count", () =>
 *   Counter.modify((s) => [`count is ${s.count + 1}`, { count: s.count + 1 }]))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A, E = never, R = never>(
  name: string,
  execute: (input: StepInput) => Effect.Effect<A, E, R>,
  options?: Options
): Step<E, R> => makeNode({ name, kind: "step", execute: (input) => execute(input), ...options })

/**
 * An executor from an async function. A rejection fails the step with
 * `StepError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const promise = <A>(
  name: string,
  execute: (input: StepInput, signal: AbortSignal) => Promise<A>,
  options?: Options
): Step<WorkflowError.StepError> =>
  make(
    name,
    (input) =>
      Effect.tryPromise({
        try: (signal) => execute(input, signal),
        catch: (cause) =>
          new WorkflowError.StepError({
            step: name,
            description: cause instanceof globalThis.Error ? cause.message : String(cause),
            cause
          })
      }),
    options
  )

/**
 * A streaming executor. Every string it emits is published as a `TextDelta`
 * event as soon as it arrives; a `StepOutput` it emits becomes the step's
 * output (else the output is the concatenated text).
 *
 * @since 0.1.0
 * @category constructors
 */
export const stream = <E = never, R = never>(
  name: string,
  execute: (input: StepInput) => Stream.Stream<string | StepOutput.StepOutput, E, R>,
  options?: Options
): Step<E, R> =>
  make(
    name,
    (input) =>
      Effect.suspend(() => {
        let text = ""
        let output: StepOutput.StepOutput | undefined
        return execute(input).pipe(
          Stream.runForEach((item) => {
            if (typeof item === "string") {
              text += item
              return WorkflowEvent.emit({ _tag: "TextDelta", delta: item })
            }
            output = item
            return Effect.void
          }),
          Effect.map(() => output ?? text)
        )
      }),
    options
  )

/**
 * Options of agent and team steps.
 *
 * @since 0.1.0
 * @category options
 */
export interface AgentOptions extends Options {
  /**
   * The message for the agent. Default: `StepInput.message(input)`, i.e. the
   * run input for the first step, else the previous step's content (JSON
   * text when it is not a string).
   */
  readonly message?: ((input: StepInput) => unknown) | undefined
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
export const runInputHeading = "The workflow's input (what the user asked for at the start of this run):"

const agentMessage = (input: StepInput, options: AgentOptions | undefined) => {
  const message = options?.message === undefined ? stepMessage(input) : options.message(input)
  const includeRunInput = (options?.includeRunInput ?? true) && input.input !== undefined && message !== input.input
  return {
    message,
    additionalContext: includeRunInput
      ? `${runInputHeading}\n${StepOutput.contentText(input.input)}`
      : undefined
  }
}

const stepOptions = (options: AgentOptions | undefined): Options => ({
  description: options?.description,
  onError: options?.onError,
  retry: options?.retry
})

/**
 * A step that runs an agent on the step's message (see
 * {@link AgentOptions.message}); its content is the agent's output: the final
 * text, or the decoded structured output (which a next agent step receives as
 * JSON text). The agent's tools share the run's session state; its text
 * deltas and tool calls are published at the step's path. The agent's errors
 * and requirements (its model, its tools' handlers and dependencies) become
 * the step's.
 *
 * @since 0.1.0
 * @category constructors
 */
export const agent = <A, E, R>(name: string, agent: Agent.Agent<A, E, R>, options?: AgentOptions): Step<E, R> =>
  makeNode({
    name,
    kind: "agent",
    ...stepOptions(options),
    execute: (input) => {
      const { additionalContext, message } = agentMessage(input, options)
      return Effect.map(Agent.run(agent, message, { additionalContext }), (result) => result.content)
    }
  })

/**
 * A step that runs a team (see `Team`): the leader gets the step's message,
 * delegates to members, and its output is the step's content. Members'
 * events are published one level below the step's path.
 *
 * @since 0.1.0
 * @category constructors
 */
export const team = <A, E, R>(
  name: string,
  team: Team.Team<A, E, R>,
  options?: AgentOptions
): Step<E, R> =>
  makeNode({
    name,
    kind: "team",
    ...stepOptions(options),
    execute: (input) => {
      const { additionalContext, message } = agentMessage(input, options)
      return Effect.map(Agent.run(team.leader, message, { additionalContext }), (result) => result.content)
    }
  })

/**
 * Retries the step (its whole execution) on failure with `schedule`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withRetry: {
  (schedule: Schedule.Schedule<unknown, never>): <E, R>(self: Step<E, R>) => Step<E, R>
  <E, R>(self: Step<E, R>, schedule: Schedule.Schedule<unknown, never>): Step<E, R>
} = dual(
  2,
  <E, R>(self: Step<E, R>, schedule: Schedule.Schedule<unknown, never>): Step<E, R> =>
    makeNode({ ...self, retry: schedule })
)

/**
 * When the step fails, record an unsuccessful output (with the error's
 * message) and continue with the next step instead of failing the run.
 *
 * @since 0.1.0
 * @category combinators
 */
export const skipOnError = <E, R>(self: Step<E, R>): Step<E, R> => makeNode({ ...self, onError: "skip" })

/**
 * Renames a step.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withName: {
  (name: string): <E, R>(self: Step<E, R>) => Step<E, R>
  <E, R>(self: Step<E, R>, name: string): Step<E, R>
} = dual(2, <E, R>(self: Step<E, R>, name: string): Step<E, R> => makeNode({ ...self, name }))
