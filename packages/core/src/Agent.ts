/**
 * Agents: instructions, an `@effect/ai` Toolkit and an optional output
 * Schema around a `LanguageModel`, run as a bounded tool-call loop.
 *
 * - Each turn asks the model with the conversation so far and the agent's
 *   tools. Tool calls are executed one after the other, in the order the model
 *   gave them; their results go back to the model in the next turn. The loop
 *   ends at the first reply without tool calls (its text is the agent's
 *   output), or fails with `MaxTurnsExceeded` when the model still wants tools
 *   after `maxTurns` turns.
 * - Tool handlers come from the Toolkit's handler layer (`toolkit.toLayer`),
 *   provided by the caller. They run in the caller's context, so inside a
 *   workflow they can `yield*` the session state (`SessionState`, a typed
 *   state tag) and `RunContext`: declare them as the tool's `dependencies`.
 * - A call with arguments that fail the tool's parameters Schema, a call of a
 *   tool the agent does not have, and a handler that fails, are answered with
 *   an error result the model sees (and can recover from, within `maxTurns`).
 *   Defects and interruptions are not caught.
 * - With `outputSchema`, the model is asked for structured output
 *   (`LanguageModel.generateObject`, i.e. a JSON response format). A reply
 *   that does not decode gets one repair turn, which tells the model the
 *   decode error; a second failure is a `StructuredOutputError`.
 * - A tool made with `needsApproval` waits for a person: inside a workflow
 *   run, a call of it pauses the run (`RunPaused`, the payload an
 *   `ApprovalRequest`) and `Workflow.continue(wf, runId, { approved, reason? })`
 *   carries the agent on from where it stood (its conversation and session
 *   state at the question), without calling the model again for the turns
 *   before. Outside a workflow run the call is refused with an error result.
 * - Inside a workflow step, model text deltas are published as `TextDelta`
 *   events and each tool call as `ToolCallStarted` / `ToolCallCompleted`, at
 *   the step's path (the model is streamed only when someone consumes the
 *   run's events).
 *
 * @since 0.1.0
 */
import type * as AiError from "@effect/ai/AiError"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FiberRef from "effect/FiberRef"
import type * as Layer from "effect/Layer"
import type { Pipeable } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import type * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { Covariant } from "effect/Types"
import * as internal from "./internal/agent/agent.js"
import * as events from "./internal/events.js"
import type { ResponseDecodeError, RunPaused, SessionStoreError } from "./WorkflowError.js"
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
 * An agent whose output is `A` (text, or the decoded structured output), whose
 * runs may fail with `E` and need `R`: the `LanguageModel` (unless the agent
 * has its own model layer), the handlers of its toolkit and what those tools
 * depend on.
 *
 * @since 0.1.0
 * @category models
 */
export interface Agent<out A, out E = never, out R = never> extends Pipeable {
  readonly [TypeId]: {
    readonly _A: Covariant<A>
    readonly _E: Covariant<E>
    readonly _R: Covariant<R>
  }
  readonly name: string
  /** a short description (used by a team leader to describe its members) */
  readonly description: string | undefined
  readonly instructions: ReadonlyArray<string>
  readonly toolkit: Toolkit.Any | undefined
  readonly outputSchema: Schema.Schema.Any | undefined
  /** the most model turns of the tool-call loop */
  readonly maxTurns: number
  /** how much of the session's conversation the agent is given (see {@link MakeOptions.history}) */
  readonly history: HistoryOptions | undefined
  /** the agent's own model, used instead of the `LanguageModel` in context */
  readonly model: Layer.Layer<LanguageModel.LanguageModel, unknown, unknown> | undefined
}

/**
 * Any agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Agent<unknown, unknown, unknown> {}

/**
 * The output of an agent type.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Output<T> = T extends Agent<infer A, infer _E, infer _R> ? A : never

/**
 * The errors of an agent type.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Error<T> = T extends Agent<infer _A, infer E, infer _R> ? E : never

/**
 * The requirements of an agent type.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Context<T> = T extends Agent<infer _A, infer _E, infer R> ? R : never

/**
 * @since 0.1.0
 * @category type ids
 */
export const ErrorTypeId: typeof internal.ErrorTypeId = internal.ErrorTypeId

/**
 * @since 0.1.0
 * @category type ids
 */
export type ErrorTypeId = internal.ErrorTypeId

/**
 * The model still asked for tools after `maxTurns` turns. The tool calls of
 * the last turn were not executed.
 *
 * @since 0.1.0
 * @category errors
 */
export const MaxTurnsExceeded: typeof internal.MaxTurnsExceeded = internal.MaxTurnsExceeded

/**
 * @since 0.1.0
 * @category errors
 */
export type MaxTurnsExceeded = internal.MaxTurnsExceeded

/**
 * The model's structured output did not decode with the agent's
 * `outputSchema`, even after one repair turn.
 *
 * @since 0.1.0
 * @category errors
 */
export const StructuredOutputError: typeof internal.StructuredOutputError = internal.StructuredOutputError

/**
 * @since 0.1.0
 * @category errors
 */
export type StructuredOutputError = internal.StructuredOutputError

/**
 * The errors of the agent loop itself (besides the model's `AiError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type AgentError = MaxTurnsExceeded | StructuredOutputError

/**
 * @since 0.1.0
 * @category refinements
 */
export const isAgentError = (u: unknown): u is AgentError => Predicate.hasProperty(u, ErrorTypeId)

// -----------------------------------------------------------------------------
// approvals
// -----------------------------------------------------------------------------

/**
 * Which calls of a tool wait for a person's approval: none (`false`), every
 * call (`true`), or the calls whose decoded arguments the predicate accepts.
 *
 * @since 0.1.0
 * @category approvals
 */
export type ApprovalPolicy<Params = never> = boolean | ((params: Params) => boolean)

/**
 * The tool annotation read by the agent loop: which calls of the tool wait
 * for a person's approval (default `false`: none). Set it with
 * {@link needsApproval}, which also tells the agent's type that it may pause;
 * `tool.annotate(Agent.NeedsApproval, …)` works at run time, but the agent's
 * error type does not know.
 *
 * @since 0.1.0
 * @category approvals
 */
export const NeedsApproval: typeof internal.NeedsApproval = internal.NeedsApproval

/**
 * @since 0.1.0
 * @category approvals
 */
export type NeedsApproval = internal.NeedsApproval

/**
 * @since 0.1.0
 * @category type ids
 */
export const NeedsApprovalTypeId: typeof internal.NeedsApprovalTypeId = internal.NeedsApprovalTypeId

/**
 * @since 0.1.0
 * @category type ids
 */
export type NeedsApprovalTypeId = internal.NeedsApprovalTypeId

/**
 * The mark of a tool made with {@link needsApproval}: an agent with such a
 * tool may pause its workflow run (`RunPaused`), and a bad answer is a
 * `ResponseDecodeError`.
 *
 * @since 0.1.0
 * @category approvals
 */
export interface ApprovalTool {
  readonly [NeedsApprovalTypeId]: NeedsApprovalTypeId
}

/**
 * The tool, needing a person's approval before it runs: for every call, or
 * for the calls whose decoded arguments `when` accepts.
 *
 * Inside a workflow run, when the model calls it, the agent asks (the
 * `ToolCallStarted` event, then the run pauses with `RunPaused`, its payload
 * an {@link ApprovalRequest}); `Workflow.continue(wf, runId, { approved,
 * reason? })` (an {@link ApprovalResponse}) carries on without calling the
 * model again for the turns before: an approved call runs, a rejected one
 * goes back to the model as the tool's error result, with the reason.
 * Outside a workflow run nobody can be asked: the call is not made and the
 * model gets an error result saying so.
 *
 * ```ts
 * const RecordExpense = Agent.needsApproval(
 *   Tool.make("record_expense", {
 *     parameters: { item: Schema.String, amount: Schema.Number },
 *     success: Schema.String
 *   }),
 *   ({ amount }) => amount > 100
 * )
 * ```
 *
 * Apply it last: the tool's own methods (`annotate`, …) return a tool
 * without the mark (the annotation stays). A provider-defined tool (run by
 * the provider itself) cannot wait: it is a `TypeError`.
 *
 * With `timeout`, a call nobody approves or rejects within it is rejected:
 * the run wakes by itself (`DurableRuns`, or `Workflow.recover`) and the
 * model gets the rejection ("nobody approved the call in time"). The
 * `RunPaused` of the question says when (`timeoutAt`).
 *
 * @since 0.1.0
 * @category approvals
 */
export const needsApproval = <T extends Tool.Any>(
  tool: T,
  when: true | ((params: Tool.Parameters<T>) => boolean) = true,
  options?: { readonly timeout?: Duration.DurationInput | undefined }
): T & ApprovalTool =>
  // the annotated copy is the same kind of tool, marked
  internal.needsApproval(tool, when as ApprovalPolicy, options?.timeout) as T & ApprovalTool

/**
 * The question an agent asks about a tool call (the `payload` of its
 * `RunPaused`): the agent, the tool, the call's id and its arguments as the
 * model sent them.
 *
 * @since 0.1.0
 * @category approvals
 */
export const ApprovalRequest: typeof internal.ApprovalRequest = internal.ApprovalRequest

/**
 * @since 0.1.0
 * @category approvals
 */
export type ApprovalRequest = typeof internal.ApprovalRequest.Type

/**
 * The answer to an {@link ApprovalRequest}, given to `Workflow.continue`:
 * `{ approved: true }`, or `{ approved: false, reason? }`.
 *
 * @since 0.1.0
 * @category approvals
 */
export const ApprovalResponse: typeof internal.ApprovalResponse = internal.ApprovalResponse

/**
 * @since 0.1.0
 * @category approvals
 */
export type ApprovalResponse = typeof internal.ApprovalResponse.Type

/**
 * The errors a toolkit's tools add to an agent: `RunPaused` and
 * `ResponseDecodeError` when one of them needs approval.
 *
 * @since 0.1.0
 * @category type-level
 */
export type ApprovalError<Tools> = [Extract<Tools, ApprovalTool>] extends [never] ? never
  : RunPaused | ResponseDecodeError

/**
 * How much of the session's conversation an agent is given.
 *
 * @since 0.1.0
 * @category options
 */
export interface HistoryOptions {
  /** the most recent completed runs of the session (failed runs are left out first) */
  readonly lastRuns: number
}

/**
 * The options of {@link make}.
 *
 * @since 0.1.0
 * @category options
 */
export interface MakeOptions {
  readonly name: string
  readonly description?: string | undefined
  /** the system prompt, one string or several lines */
  readonly instructions?: string | ReadonlyArray<string> | undefined
  /** an `@effect/ai` Toolkit; its handler layer (`toolkit.toLayer`) is required to run the agent */
  readonly tools?: Toolkit.Any | undefined
  /** ask for structured output decoded with this Schema; it becomes the agent's output */
  readonly outputSchema?: Schema.Schema.All | undefined
  /** the most model turns of the tool-call loop (default 10) */
  readonly maxTurns?: number | undefined
  /**
   * Inside a workflow run, put the session's earlier runs into the agent's
   * messages (after its instructions, before the message): one user message
   * (the run's input) and one assistant message (the run's output) for each of
   * the last `lastRuns` completed runs, oldest first, so a multi-turn assistant
   * remembers what was said. Outside a run there is no history.
   */
  readonly history?: HistoryOptions | undefined
  /**
   * The agent's own model (e.g. another model id), instead of the
   * `LanguageModel` in context. The layer is built for each run of the agent
   * and used only for the agent's model calls (its tools still see the
   * context's services); a `TestModel` given here starts its script again on
   * every run.
   */
  readonly model?: Layer.Layer<LanguageModel.LanguageModel, unknown, unknown> | undefined
}

/**
 * The output of an agent made with options `O`.
 *
 * @since 0.1.0
 * @category type-level
 */
export type MakeOutput<O> = O extends { readonly outputSchema: Schema.Schema<infer A, infer _I, infer _R> } ? A : string

/**
 * The errors of an agent made with options `O`.
 *
 * @since 0.1.0
 * @category type-level
 */
export type MakeError<O> =
  | AiError.AiError
  | MaxTurnsExceeded
  | (O extends { readonly tools: Toolkit.Toolkit<infer T> } ? ApprovalError<T[keyof T]> : never)
  | (O extends { readonly outputSchema: Schema.Schema<infer _A, infer _I, infer _R> } ? StructuredOutputError : never)
  | (O extends { readonly model: Layer.Layer<infer _ROut, infer E, infer _RIn> } ? E : never)
  | (O extends { readonly history: HistoryOptions } ? SessionStoreError : never)

/**
 * The requirements of an agent made with options `O`.
 *
 * @since 0.1.0
 * @category type-level
 */
export type MakeContext<O> =
  | (O extends { readonly tools: Toolkit.Toolkit<infer T> } ? Tool.HandlersFor<T> | Tool.Requirements<T[keyof T]>
    : never)
  | (O extends { readonly outputSchema: Schema.Schema<infer _A, infer _I, infer R> } ? R : never)
  | (O extends { readonly model: Layer.Layer<infer _ROut, infer _E, infer RIn> } ? RIn : LanguageModel.LanguageModel)

/**
 * Makes an agent.
 *
 * ```ts
 * const assistant = Agent.make({
 *   name: "Shopping Assistant",
 *   instructions: ["You are a helpful shopping assistant.", "Always use the provided tools."],
 *   tools: ShoppingTools
 * })
 * //    ^? Agent<string, AiError | MaxTurnsExceeded, LanguageModel | Handler<"add_item"> | ... | ShoppingList>
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const O extends MakeOptions>(
  options: O
): Agent<MakeOutput<O>, MakeError<O>, MakeContext<O>> =>
  // the types say what the options give: output, errors and requirements
  internal.make(options) as Agent<MakeOutput<O>, MakeError<O>, MakeContext<O>>

/**
 * The result of a run of an agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface Result<A> {
  /** the output: the final text, or the decoded structured output */
  readonly content: A
  /** the text of the final reply (the JSON text, for structured output) */
  readonly text: string
  /** the whole conversation, system prompt first */
  readonly prompt: Prompt.Prompt
  /** how many model calls the run made */
  readonly turns: number
}

/**
 * @since 0.1.0
 * @category options
 */
export interface RunOptions {
  /** text appended to the agent's system prompt for this run (e.g. the workflow's input) */
  readonly additionalContext?: string | undefined
}

/**
 * Runs the agent on a message: a string, a `Prompt` (a whole conversation),
 * or any other value (sent as JSON text). Usable inside workflow steps, where
 * the agent's tools share the run's session state and its events join the
 * run's stream, and outside of workflows.
 *
 * @since 0.1.0
 * @category running
 */
export const run = <A, E, R>(
  self: Agent<A, E, R>,
  message: unknown,
  options?: RunOptions
): Effect.Effect<Result<A>, E, R> =>
  // the loop runs any agent; this agent's type says what it produces, fails with and needs
  runAny(self, message, options) as Effect.Effect<Result<A>, E, R>

const runAny = Effect.fn("Agent.run")(function*(self: Any, message: unknown, options?: RunOptions) {
  yield* Effect.annotateCurrentSpan("sessionflow.agent.name", self.name)
  return yield* internal.run(self, message, options)
})

/**
 * An event of {@link stream}: the agent's text deltas and tool calls (the
 * payloads of the workflow events of the same tags), then its result.
 *
 * @since 0.1.0
 * @category models
 */
export type StreamEvent<A> =
  | WorkflowEvent.PayloadOf<"TextDelta" | "ToolCallStarted" | "ToolCallCompleted">
  | { readonly _tag: "Completed"; readonly result: Result<A> }

/**
 * Runs the agent and streams its text deltas and tool calls, ending with a
 * `Completed` event carrying the result. The streamed events are not
 * published to an enclosing workflow run (so a streaming step can forward
 * them itself); other events (state changes) still are.
 *
 * Inside a plain `Step.make`, {@link run} already publishes the agent's
 * events to the run's stream; this is for code that wants the deltas itself.
 *
 * @since 0.1.0
 * @category running
 */
export const stream = <A, E, R>(
  self: Agent<A, E, R>,
  message: unknown,
  options?: RunOptions
): Stream.Stream<StreamEvent<A>, E, R> =>
  events.toStream((offer: (event: StreamEvent<A>) => Effect.Effect<void>) =>
    run(self, message, options).pipe(
      Effect.flatMap((result) => offer({ _tag: "Completed", result })),
      events.capture(["TextDelta", "ToolCallStarted", "ToolCallCompleted"], offer)
    )
  )

/**
 * The name of the agent whose loop runs in the current fiber, if any (model
 * layers such as `TestModel` may use it).
 *
 * @since 0.1.0
 * @category fiber refs
 */
export const currentAgent: FiberRef.FiberRef<string | undefined> = internal.currentAgent
