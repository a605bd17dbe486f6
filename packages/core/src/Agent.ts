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
 * - Inside a workflow step, model text deltas are published as `TextDelta`
 *   events and each tool call as `ToolCallStarted` / `ToolCallCompleted`, at
 *   the step's path (the model is streamed only when someone consumes the
 *   run's events).
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as EffectContext from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Covariant } from "effect/Types"
import * as internal from "./internal/agent.js"
import * as RunContext from "./RunContext.js"
import * as SessionNamer from "./SessionNamer.js"
import { contentText } from "./StepOutput.js"
import type { SessionStoreError } from "./WorkflowError.js"
import * as WorkflowEvent from "./WorkflowEvent.js"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/Agent")

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * The key of an agent's built-in tools (a team leader's delegate tool).
 *
 * @since 0.1.0
 * @category type ids
 */
export const BuiltinToolsId: unique symbol = Symbol.for("@sessionflow/core/Agent/BuiltinTools")

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
  /** @internal */
  readonly [BuiltinToolsId]: ReadonlyArray<internal.ToolEntry>
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
export const ErrorTypeId: unique symbol = Symbol.for("@sessionflow/core/Agent/AgentError")

/**
 * @since 0.1.0
 * @category type ids
 */
export type ErrorTypeId = typeof ErrorTypeId

/**
 * The model still asked for tools after `maxTurns` turns. The tool calls of
 * the last turn were not executed.
 *
 * @since 0.1.0
 * @category errors
 */
export class MaxTurnsExceeded extends Schema.TaggedError<MaxTurnsExceeded>("@sessionflow/core/Agent/MaxTurnsExceeded")(
  "MaxTurnsExceeded",
  { agent: Schema.String, maxTurns: Schema.Number }
) {
  /** @since 0.1.0 */
  readonly [ErrorTypeId]: ErrorTypeId = ErrorTypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Agent '${this.agent}' exceeded its limit of ${this.maxTurns} model turn${
      this.maxTurns === 1 ? "" : "s"
    } and still asked for tools`
  }
}

/**
 * The model's structured output did not decode with the agent's
 * `outputSchema`, even after one repair turn.
 *
 * @since 0.1.0
 * @category errors
 */
export class StructuredOutputError
  extends Schema.TaggedError<StructuredOutputError>("@sessionflow/core/Agent/StructuredOutputError")(
    "StructuredOutputError",
    {
      agent: Schema.String,
      /** the decode error of the last reply */
      description: Schema.String,
      /** the last reply's text, if there was one */
      text: Schema.optional(Schema.String),
      cause: Schema.optional(Schema.Defect)
    }
  )
{
  /** @since 0.1.0 */
  readonly [ErrorTypeId]: ErrorTypeId = ErrorTypeId
  /** @since 0.1.0 */
  override get message(): string {
    return `Agent '${this.agent}' did not produce a valid structured output after one repair attempt: ${this.description}`
  }
}

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
  | (O extends { readonly tools: Toolkit.Toolkit<infer T> } ? Tool.HandlersFor<T> | Tool.Requirements<T[keyof T]> : never)
  | (O extends { readonly outputSchema: Schema.Schema<infer _A, infer _I, infer R> } ? R : never)
  | (O extends { readonly model: Layer.Layer<infer _ROut, infer _E, infer RIn> } ? RIn : LanguageModel.LanguageModel)

const Proto = {
  [TypeId]: { _A: (_: never) => _, _E: (_: never) => _, _R: (_: never) => _ },
  pipe() {
    return pipeArguments(this, arguments)
  },
  toJSON(this: Any) {
    return { _id: "Agent", name: this.name }
  }
}

/**
 * Builds an agent (with built-in tools, for teams).
 *
 * @internal
 */
export const unsafeMake = (options: MakeOptions, builtinTools: ReadonlyArray<internal.ToolEntry>): Any => {
  const maxTurns = options.maxTurns ?? 10
  if (!Number.isInteger(maxTurns) || maxTurns < 1) {
    throw new RangeError(`Agent '${options.name}': maxTurns must be a positive integer, got ${maxTurns}`)
  }
  const names = new Set(Object.keys(options.tools?.tools ?? {}))
  for (const entry of builtinTools) {
    if (names.has(entry.tool.name)) {
      throw new globalThis.Error(`Agent '${options.name}': the tool name '${entry.tool.name}' is reserved`)
    }
  }
  const agent = Object.create(Proto)
  agent.name = options.name
  agent.description = options.description
  agent.instructions = options.instructions === undefined
    ? []
    : typeof options.instructions === "string"
    ? [options.instructions]
    : [...options.instructions]
  agent.toolkit = options.tools
  agent.outputSchema = options.outputSchema
  agent.maxTurns = maxTurns
  const lastRuns = options.history?.lastRuns
  if (lastRuns !== undefined && (!Number.isInteger(lastRuns) || lastRuns < 0)) {
    throw new RangeError(`Agent '${options.name}': history.lastRuns must be a non-negative integer, got ${lastRuns}`)
  }
  agent.history = options.history
  agent.model = options.model
  agent[BuiltinToolsId] = builtinTools
  return agent
}

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
): Agent<MakeOutput<O>, MakeError<O>, MakeContext<O>> => unsafeMake(options, []) as any

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

type RequestToolkit = {
  readonly tools: Record<string, Tool.Any>
  readonly handle: (name: string, params: unknown) => Effect.Effect<never>
}

type LooseModel = {
  readonly generateText: (options: object) => Effect.Effect<LanguageModel.GenerateTextResponse<any>, unknown>
  readonly streamText: (options: object) => Stream.Stream<unknown, unknown>
  readonly generateObject: (options: object) => Effect.Effect<LanguageModel.GenerateObjectResponse<any, unknown>, unknown, unknown>
}

/** The session's earlier exchanges, when the agent runs inside a workflow run. */
const conversation = (history: HistoryOptions) =>
  Effect.flatMap(Effect.serviceOption(RunContext.RunContext), (run) =>
    Option.isNone(run) ? Effect.succeed([]) : run.value.chatHistory({ lastRuns: history.lastRuns }))

const systemPrompt = (self: Any, options: RunOptions | undefined): string => {
  const parts = self.instructions.length === 0 ? [] : [self.instructions.join("\n")]
  if (options?.additionalContext !== undefined && options.additionalContext.length > 0) {
    parts.push(options.additionalContext)
  }
  return parts.join("\n\n")
}

const withModel = <A, E, R>(
  self: Any,
  f: (model: LooseModel) => Effect.Effect<A, E, R>
): Effect.Effect<A, unknown, unknown> =>
  self.model === undefined
    ? Effect.flatMap(LanguageModel.LanguageModel, (model) => f(model as unknown as LooseModel))
    : Effect.scoped(
      Effect.flatMap(
        Layer.build(self.model),
        (context) => f(EffectContext.get(context as EffectContext.Context<LanguageModel.LanguageModel>, LanguageModel.LanguageModel) as unknown as LooseModel)
      )
    )

const runLoop = (self: Any, message: unknown, options: RunOptions | undefined): Effect.Effect<Result<unknown>, unknown, unknown> =>
  withModel(self, (model) =>
    Effect.gen(function*() {
      // -- tools ----------------------------------------------------------------
      const entries = new Map<string, internal.ToolEntry>()
      if (self.toolkit !== undefined) {
        const withHandler = yield* (self.toolkit as unknown as Effect.Effect<Toolkit.WithHandler<Record<string, Tool.Any>>>)
        const handle = withHandler.handle as unknown as (
          name: string,
          params: unknown
        ) => Effect.Effect<{ readonly encodedResult: unknown; readonly isFailure: boolean }, unknown, unknown>
        for (const tool of Object.values(withHandler.tools)) {
          entries.set(tool.name, { tool, run: internal.runToolkitTool(handle, tool) })
        }
      }
      for (const entry of self[BuiltinToolsId]) entries.set(entry.tool.name, entry)
      const known = new Set(entries.keys())
      const requestToolkit: RequestToolkit | undefined = entries.size === 0 ? undefined : {
        tools: Object.fromEntries([...entries.values()].map((e) => [e.tool.name, internal.lenientTool(e.tool)])),
        handle: () => Effect.dieMessage("sessionflow: tool calls are resolved by the agent loop")
      }
      const toolOptions = requestToolkit === undefined ? {} : { toolkit: requestToolkit, disableToolCallResolution: true }
      const streaming = yield* WorkflowEvent.isEnabled

      // -- one model turn -------------------------------------------------------
      const collectRaw = (collector: internal.TurnCollector, parts: ReadonlyArray<unknown>) =>
        Effect.forEach(parts, (part) => {
          const delta = collector.add(part)
          return delta === undefined ? Effect.void : WorkflowEvent.emit({ _tag: "TextDelta", delta })
        }, { discard: true })

      const recoverOrFail = (collector: internal.TurnCollector) => (error: unknown) => {
        const raw = internal.recoverRawParts(error)
        return raw !== undefined && internal.callsUnknownTool(raw, known)
          ? collectRaw(collector, raw)
          : Effect.fail(error)
      }

      const callText = (prompt: Prompt.Prompt): Effect.Effect<internal.Turn, unknown, unknown> =>
        Effect.suspend(() => {
          const collector = new internal.TurnCollector()
          const request = { prompt, ...toolOptions }
          const run = streaming
            ? model.streamText(request).pipe(
              Stream.runForEach((part) => {
                const delta = collector.add(part)
                return delta === undefined ? Effect.void : WorkflowEvent.emit({ _tag: "TextDelta", delta })
              })
            )
            : Effect.flatMap(model.generateText(request), (response) => collectRaw(collector, response.content))
          return run.pipe(
            Effect.catchAll(recoverOrFail(collector)),
            Effect.flatMap(() =>
              collector.error === undefined ? Effect.succeed(collector.turn) : Effect.fail(
                new AiError.UnknownError({
                  module: "Agent",
                  method: "run",
                  description: `The model reported an error: ${internal.errorText(collector.error.error)}`,
                  cause: collector.error.error
                })
              )
            )
          )
        })

      // -- one tool call --------------------------------------------------------
      const executeCall = (call: internal.ToolCall) =>
        Effect.gen(function*() {
          yield* WorkflowEvent.emit({
            _tag: "ToolCallStarted",
            toolCallId: call.id,
            toolName: call.name,
            arguments: call.params
          })
          const entry = entries.get(call.name)
          const outcome = entry === undefined
            ? internal.unknownToolOutcome(call.name, [...known])
            : yield* entry.run(call.params)
          yield* WorkflowEvent.emit({
            _tag: "ToolCallCompleted",
            toolCallId: call.id,
            toolName: call.name,
            result: outcome.result,
            isError: outcome.isFailure
          })
          return Prompt.makePart("tool-result", {
            id: call.id,
            name: call.providerName ?? call.name,
            isFailure: outcome.isFailure,
            result: outcome.result,
            providerExecuted: false
          })
        })

      // -- the loop ---------------------------------------------------------------
      const history = self.history === undefined ? [] : yield* conversation(self.history)
      const messages = internal.initialMessages(systemPrompt(self, options), history, message)
      const schema = self.outputSchema as Schema.Schema<unknown, unknown, unknown> | undefined
      let turns = 0
      let text = ""
      if (schema === undefined || entries.size > 0) {
        while (true) {
          turns++
          const turn = yield* callText(Prompt.fromMessages([...messages]))
          const assistant = internal.assistantMessage(turn)
          if (assistant !== undefined) messages.push(assistant)
          text = turn.text
          const calls = turn.toolCalls.filter((call) => !call.providerExecuted)
          if (calls.length === 0) break
          if (turns >= self.maxTurns) {
            return yield* new MaxTurnsExceeded({ agent: self.name, maxTurns: self.maxTurns })
          }
          const results: Array<Prompt.ToolResultPart> = []
          for (const call of calls) results.push(yield* executeCall(call))
          messages.push(internal.toolMessage(results))
        }
      }
      if (schema === undefined) {
        return { content: text, text, prompt: Prompt.fromMessages([...messages]), turns }
      }

      // -- structured output ------------------------------------------------------
      if (text.length > 0) {
        // The tool loop's final reply may already be the JSON value.
        const direct = yield* Effect.option(Schema.decodeUnknown(Schema.parseJson(schema))(text))
        if (Option.isSome(direct)) {
          return { content: direct.value, text, prompt: Prompt.fromMessages([...messages]), turns }
        }
      }
      const name = internal.objectName(schema, self.name)
      const attempt = Effect.suspend(() => {
        turns++
        return model.generateObject({
          prompt: Prompt.fromMessages([...messages]),
          schema,
          ...(name === undefined ? {} : { objectName: name }),
          ...(requestToolkit === undefined ? {} : { ...toolOptions, toolChoice: "none" })
        })
      }).pipe(
        Effect.map((response) => ({ _tag: "Decoded" as const, value: response.value, text: response.text })),
        Effect.catchIf(internal.isStructuredReplyFailure, (error) => {
          const replyText = internal.structuredReplyText(error)
          return Effect.map(
            internal.describeStructuredFailure(schema, error, replyText),
            (problem) => ({ _tag: "Invalid" as const, problem, text: replyText, error })
          )
        })
      )
      const first = yield* attempt
      if (first._tag === "Invalid") {
        if (first.text !== undefined && first.text.length > 0) {
          messages.push(internal.assistantMessage({ text: first.text, toolCalls: [], providerResults: [] })!)
        }
        messages.push(internal.userMessage(internal.repairMessage(first.problem)))
      }
      const final = first._tag === "Decoded" ? first : yield* attempt
      if (final._tag === "Invalid") {
        return yield* new StructuredOutputError({
          agent: self.name,
          description: final.problem,
          ...(final.text === undefined ? {} : { text: final.text }),
          cause: final.error
        })
      }
      messages.push(internal.assistantMessage({ text: final.text, toolCalls: [], providerResults: [] })!)
      return { content: final.value, text: final.text, prompt: Prompt.fromMessages([...messages]), turns }
    })).pipe(
      Effect.locally(internal.currentAgent, self.name),
      Effect.annotateLogs("agent", self.name)
    )

/**
 * Runs the agent on a message: a string, a `Prompt` (a whole conversation),
 * or any other value (sent as JSON text). Usable inside workflow steps, where
 * the agent's tools share the run's session state and its events join the
 * run's stream, and outside of workflows.
 *
 * @since 0.1.0
 * @category running
 */
export const run: <A, E, R>(
  self: Agent<A, E, R>,
  message: unknown,
  options?: RunOptions
) => Effect.Effect<Result<A>, E, R> = Effect.fn("Agent.run")(
  function*<A, E, R>(self: Agent<A, E, R>, message: unknown, options?: RunOptions) {
    yield* Effect.annotateCurrentSpan("agent", self.name)
    return yield* runLoop(self as unknown as Any, message, options)
  }
) as any

/**
 * An event of {@link stream}.
 *
 * @since 0.1.0
 * @category models
 */
export type StreamEvent<A> =
  | { readonly _tag: "TextDelta"; readonly delta: string }
  | { readonly _tag: "ToolCallStarted"; readonly toolCallId: string; readonly toolName: string; readonly arguments: unknown }
  | {
    readonly _tag: "ToolCallCompleted"
    readonly toolCallId: string
    readonly toolName: string
    readonly result: unknown
    readonly isError: boolean
  }
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
  Stream.unwrapScoped(
    Effect.gen(function*() {
      const mailbox = yield* Mailbox.make<StreamEvent<A>, E>()
      const outer = yield* FiberRef.get(WorkflowEvent.currentEmitter)
      const emitter: WorkflowEvent.Emitter = {
        enabled: true,
        emit: (payload, path) => {
          switch (payload._tag) {
            case "TextDelta":
              return Effect.asVoid(mailbox.offer({ _tag: "TextDelta", delta: payload.delta }))
            case "ToolCallStarted":
              return Effect.asVoid(mailbox.offer({
                _tag: "ToolCallStarted",
                toolCallId: payload.toolCallId,
                toolName: payload.toolName,
                arguments: payload.arguments
              }))
            case "ToolCallCompleted":
              return Effect.asVoid(mailbox.offer({
                _tag: "ToolCallCompleted",
                toolCallId: payload.toolCallId,
                toolName: payload.toolName,
                result: payload.result,
                isError: payload.isError
              }))
            default:
              return outer.enabled ? outer.emit(payload, path) : Effect.void
          }
        }
      }
      yield* run(self, message, options).pipe(
        Effect.flatMap((result) => mailbox.offer({ _tag: "Completed", result })),
        Effect.asVoid,
        Effect.locally(WorkflowEvent.currentEmitter, emitter),
        Mailbox.into(mailbox),
        Effect.forkScoped
      )
      return Mailbox.toStream(mailbox)
    })
  )

/**
 * The name of the agent whose loop runs in the current fiber, if any (model
 * layers such as `TestModel` may use it).
 *
 * @since 0.1.0
 * @category fiber refs
 */
export const currentAgent: FiberRef.FiberRef<string | undefined> = internal.currentAgent

/**
 * @since 0.1.0
 * @category options
 */
export interface SessionNamerOptions {
  /** the most words of a name (default 6) */
  readonly maxWords?: number | undefined
  /** replaces the default instructions */
  readonly instructions?: string | undefined
}

/**
 * A `SessionNamer` that asks the `LanguageModel` for a short title (at most
 * six words) from the session's first input and output; used by
 * `Workflow.setSessionName(wf, id, { autogenerate: true })`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSessionNamer = (
  options?: SessionNamerOptions
): Layer.Layer<SessionNamer.SessionNamer, never, LanguageModel.LanguageModel> =>
  Layer.effect(
    SessionNamer.SessionNamer,
    Effect.map(LanguageModel.LanguageModel, (model): SessionNamer.Service => {
      const maxWords = options?.maxWords ?? 6
      const instructions = options?.instructions ??
        `You name conversations. Reply with a short, descriptive title of at most ${maxWords} words for the conversation below: the title only, without quotes or trailing punctuation.`
      return {
        name: (request) =>
          Effect.gen(function*() {
            const lines = [`Workflow: ${request.workflowName}`]
            if (request.description !== undefined) lines.push(`Description: ${request.description}`)
            lines.push("", "First input:", truncate(contentText(request.firstInput), 2000))
            lines.push("", "First output:", truncate(contentText(request.firstOutput), 2000))
            const response = yield* model.generateText({
              prompt: [
                { role: "system", content: instructions },
                { role: "user", content: lines.join("\n") }
              ]
            })
            const title = internal.cleanTitle(response.text, maxWords)
            if (title.length === 0) {
              return yield* new AiError.MalformedOutput({
                module: "Agent",
                method: "layerSessionNamer",
                description: "The model replied with an empty title"
              })
            }
            return title
          }).pipe(Effect.withSpan("Agent.layerSessionNamer.name"))
      }
    })
  )

const truncate = (s: string, max: number): string => (s.length > max ? `${s.slice(0, max)}…` : s)
