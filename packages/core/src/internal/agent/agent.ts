/**
 * Agents: the agent value and its tool-call loop.
 *
 * A run resolves the agent's tools ({@link resolveTools}), then calls the
 * model with the conversation so far ({@link callModel}) and runs the tool
 * calls of each reply one after the other ({@link runToolCall}), until a
 * reply asks for none ({@link toolLoop}); an agent with an output Schema then
 * gets its structured output, with one repair turn ({@link structuredOutput}).
 * Each step takes the conversation (a small immutable value) and returns the
 * next one. A call of a tool that needs approval asks (and pauses the
 * workflow run), leaving the conversation as the question's checkpoint; when
 * the step runs again with the answer, the run carries on from there
 * (`beginApprovals`, `finishTurn`).
 *
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as EffectContext from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import { pipeArguments } from "effect/Pipeable"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as Stream from "effect/Stream"
import type * as Agent from "../../Agent.js"
import * as RunContext from "../../RunContext.js"
import { contentText } from "../../StepOutput.js"
import type * as WorkflowError from "../../WorkflowError.js"
import type * as WorkflowEvent from "../../WorkflowEvent.js"
import * as boundary from "../boundary.js"
import * as events from "../events.js"
import { errorText } from "../format.js"
import * as record from "../record.js"
import { decodeResponse } from "../step/executors.js"
import { type Answer, ask, currentQuestions, latestAnswer, type Questions, startRun } from "../step/questions.js"
import * as tracing from "../tracing.js"
import { usageAttributes, type UsageReport } from "../usage.js"

// -----------------------------------------------------------------------------
// the agent value
// -----------------------------------------------------------------------------

/** @internal */
export const TypeId: unique symbol = Symbol.for("@sessionflow/core/Agent")

/** @internal */
export type TypeId = typeof TypeId

/** @internal */
export const ErrorTypeId: unique symbol = Symbol.for("@sessionflow/core/Agent/AgentError")

/** @internal */
export type ErrorTypeId = typeof ErrorTypeId

/** @internal */
export class MaxTurnsExceeded extends Schema.TaggedError<MaxTurnsExceeded>("@sessionflow/core/Agent/MaxTurnsExceeded")(
  "MaxTurnsExceeded",
  { agent: Schema.String, maxTurns: Schema.Number }
) {
  readonly [ErrorTypeId]: ErrorTypeId = ErrorTypeId
  override get message(): string {
    return `Agent '${this.agent}' exceeded its limit of ${this.maxTurns} model turn${
      this.maxTurns === 1 ? "" : "s"
    } and still asked for tools`
  }
}

/** @internal */
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
  readonly [ErrorTypeId]: ErrorTypeId = ErrorTypeId
  override get message(): string {
    return `Agent '${this.agent}' did not produce a valid structured ` +
      `output after one repair attempt: ${this.description}`
  }
}

/**
 * The name of the agent whose loop is running in this fiber (read by
 * `TestModel` to tell scripted replies apart).
 *
 * @internal
 */
export const currentAgent: FiberRef.FiberRef<string | undefined> = FiberRef.unsafeMake<string | undefined>(undefined)

const Proto = {
  [TypeId]: { _A: (_: never) => _, _E: (_: never) => _, _R: (_: never) => _ },
  pipe() {
    return pipeArguments(this, arguments)
  },
  toJSON(this: Agent.Any) {
    return { _id: "Agent", name: this.name }
  }
}

/** The tools an agent has besides its toolkit's (a team leader's delegate tool). */
const builtinTools = new WeakMap<Agent.Any, ReadonlyArray<ToolEntry>>()

/** An agent's instructions as lines. @internal */
export const instructionLines = (text: string | ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
  text === undefined ? [] : typeof text === "string" ? [text] : [...text]

/**
 * Builds an agent, with built-in tools (for teams).
 *
 * @internal
 */
export const make = (options: Agent.MakeOptions, builtins: ReadonlyArray<ToolEntry> = []): Agent.Any => {
  const maxTurns = options.maxTurns ?? 10
  if (!Number.isInteger(maxTurns) || maxTurns < 1) {
    throw new RangeError(`Agent '${options.name}': maxTurns must be a positive integer, got ${maxTurns}`)
  }
  const names = new Set(Object.keys(options.tools?.tools ?? {}))
  for (const entry of builtins) {
    if (names.has(entry.tool.name)) {
      throw new Error(`Agent '${options.name}': the tool name '${entry.tool.name}' is reserved`)
    }
  }
  const lastRuns = options.history?.lastRuns
  if (lastRuns !== undefined && (!Number.isInteger(lastRuns) || lastRuns < 0)) {
    throw new RangeError(`Agent '${options.name}': history.lastRuns must be a non-negative integer, got ${lastRuns}`)
  }
  const agent = Object.create(Proto)
  agent.name = options.name
  agent.description = options.description
  agent.instructions = instructionLines(options.instructions)
  agent.toolkit = options.tools
  agent.outputSchema = options.outputSchema
  agent.maxTurns = maxTurns
  agent.history = options.history
  agent.model = options.model
  builtinTools.set(agent, builtins)
  return agent
}

// -----------------------------------------------------------------------------
// tools
// -----------------------------------------------------------------------------

/**
 * What a tool call gave back to the model: the encoded result, or an error
 * text with `isFailure`.
 *
 * @internal
 */
export interface ToolOutcome {
  readonly result: unknown
  readonly isFailure: boolean
}

/**
 * A tool the loop can run: its declaration (sent to the model), how to run a
 * call of it, and whether a call needs a person's approval first. `run` fails
 * only with the `ResponseDecodeError` of a nested agent's approval (a bad
 * answer, so that the run waits for another): other failures are outcomes
 * for the model.
 *
 * @internal
 */
export interface ToolEntry<R = unknown> {
  readonly tool: Tool.Any
  readonly run: (params: unknown) => Effect.Effect<ToolOutcome, WorkflowError.ResponseDecodeError, R>
  /** whether this call (its arguments as sent) waits for a person; never for arguments that do not decode */
  readonly needsApproval: (params: unknown) => Effect.Effect<boolean, never, R>
}

const isResponseDecodeError = (u: unknown): u is WorkflowError.ResponseDecodeError =>
  typeof u === "object" && u !== null && (u as { readonly _tag?: unknown })._tag === "ResponseDecodeError"

/**
 * How every tool call runs: the arguments are decoded with `parameters` (bad
 * ones are an error result), `run` gets them (and the arguments as sent),
 * and its failure is an error result too, worded by `failure`. Defects and
 * interruptions propagate. Toolkit tools and a team's delegate tool both run
 * this way. `approval` says which calls wait for a person (none by default).
 *
 * @internal
 */
export const makeToolEntry = <P, RP, R>(tool: Tool.Any, options: {
  readonly parameters: Schema.Schema<P, any, RP>
  readonly run: (params: P, raw: unknown) => Effect.Effect<ToolOutcome, unknown, R>
  readonly failure: (error: unknown, params: P) => string
  readonly approval?: ApprovalPolicy | undefined
}): ToolEntry<R | RP> => {
  const decode = Schema.decodeUnknown(options.parameters)
  const approval = options.approval ?? false
  return {
    tool,
    run: (raw) =>
      decode(raw).pipe(
        Effect.matchEffect({
          onFailure: (error) =>
            Effect.succeed({
              isFailure: true,
              result: `Invalid arguments for tool '${tool.name}': ${errorText(error)}`
            }),
          onSuccess: (params) =>
            options.run(params, raw).pipe(
              Effect.catchAll((error) =>
                isResponseDecodeError(error)
                  ? Effect.fail(error)
                  : Effect.succeed({ isFailure: true, result: options.failure(error, params) })
              )
            )
        })
      ),
    needsApproval: (raw) =>
      approval === false ? Effect.succeed(false) : decode(raw).pipe(
        Effect.map((params) => approval === true || (approval as (params: P) => boolean)(params)),
        Effect.orElseSucceed(() => false)
      )
  }
}

/** A toolkit with its handlers, as the loop calls it (by name, with the arguments as sent). */
interface ToolkitHandler {
  readonly tools: Readonly<Record<string, Tool.Any>>
  readonly handle: (
    name: string,
    params: unknown
  ) => Effect.Effect<{ readonly encodedResult: unknown; readonly isFailure: boolean }, unknown, unknown>
}

const toolkitEntry = (toolkit: ToolkitHandler, tool: Tool.Any): ToolEntry =>
  makeToolEntry(tool, {
    parameters: tool.parametersSchema,
    run: (_, raw) =>
      Effect.map(toolkit.handle(tool.name, raw), (r) => ({ result: r.encodedResult, isFailure: r.isFailure })),
    failure: (error) =>
      AiError.isAiError(error) && error._tag === "MalformedInput"
        ? `Tool '${tool.name}' returned an invalid result: ${errorText(error.cause ?? error)}`
        : `Tool '${tool.name}' failed: ${errorText(error)}`,
    approval: approvalOf(tool)
  })

/**
 * The tools of one run: how to run a call of each, and the toolkit that
 * declares them to the model (none when the agent has no tools).
 *
 * @internal
 */
interface Tools {
  readonly entries: ReadonlyMap<string, ToolEntry>
  readonly toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> | undefined
  /** whether a tool may need a person's approval */
  readonly approvals: boolean
}

/**
 * The agent's tools: its toolkit's (with their handlers, from the context)
 * and its built-in ones.
 *
 * @internal
 */
const resolveTools = (agent: Agent.Any): Effect.Effect<Tools, never, unknown> =>
  Effect.map(
    agent.toolkit === undefined
      ? Effect.succeed(undefined)
      // a Toolkit is the Effect of its handlers
      : agent.toolkit as unknown as Effect.Effect<ToolkitHandler, never, unknown>,
    (toolkit) => {
      const entries = new Map<string, ToolEntry>()
      for (const tool of Object.values(toolkit?.tools ?? {})) entries.set(tool.name, toolkitEntry(toolkit!, tool))
      for (const entry of builtinTools.get(agent) ?? []) entries.set(entry.tool.name, entry)
      return {
        entries,
        approvals: Object.values(toolkit?.tools ?? {}).some((tool) => approvalOf(tool) !== false),
        toolkit: entries.size === 0 ? undefined : requestToolkit(agent, toolkit?.tools, entries)
      }
    }
  )

/** Each agent's request toolkit, with the toolkit tools it was made from. */
const requestToolkits = new WeakMap<Agent.Any, {
  readonly source: Readonly<Record<string, Tool.Any>> | undefined
  readonly toolkit: Toolkit.WithHandler<Record<string, Tool.Any>>
}>()

/**
 * The toolkit sent with the agent's model requests: its tools as
 * {@link lenientTool}s, whose calls the loop makes itself. It is the same
 * value from run to run (while the agent's toolkit resolves to the same
 * tools), so that a model can keep what it derives from a toolkit (e.g. the
 * Schema of its replies) instead of rebuilding it on every request.
 */
const requestToolkit = (
  agent: Agent.Any,
  source: Readonly<Record<string, Tool.Any>> | undefined,
  entries: ReadonlyMap<string, ToolEntry>
): Toolkit.WithHandler<Record<string, Tool.Any>> => {
  const cached = requestToolkits.get(agent)
  if (cached !== undefined && cached.source === source) return cached.toolkit
  const toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> = {
    tools: Object.fromEntries([...entries.values()].map((e) => [e.tool.name, lenientTool(e.tool)])),
    handle: () => Effect.dieMessage("sessionflow: tool calls are resolved by the agent loop")
  }
  requestToolkits.set(agent, { source, toolkit })
  return toolkit
}

const lenientTools = new WeakMap<Tool.Any, Tool.Any>()

/**
 * The tool as sent in model requests: the same name, description and JSON
 * Schema, but parameters that decode anything. `LanguageModel` decodes tool
 * call parameters while decoding the response, so with the tool's own schema
 * a call with bad arguments would fail the whole response; with this copy the
 * loop decodes the arguments itself and answers bad ones with an error result.
 */
const lenientTool = (tool: Tool.Any): Tool.Any => {
  if (Tool.isProviderDefined(tool)) return tool
  const cached = lenientTools.get(tool)
  if (cached !== undefined) return cached
  const ast = tool.parametersSchema.ast
  const description = tool.description ?? Tool.getDescriptionFromSchemaAst(ast)
  const parameters = Schema.Unknown.annotations({
    jsonSchema: Tool.getJsonSchemaFromSchemaAst(ast),
    ...(description === undefined ? {} : { description })
  })
  // every user-defined tool has `setParameters`; `Tool.Any` does not declare it
  const lenient = (tool as unknown as { readonly setParameters: (schema: Schema.Schema<unknown>) => Tool.Any })
    .setParameters(parameters)
  lenientTools.set(tool, lenient)
  return lenient
}

const requestOptions = (tools: Tools) =>
  tools.toolkit === undefined ? {} : { toolkit: tools.toolkit, disableToolCallResolution: true as const }

// -----------------------------------------------------------------------------
// the conversation
// -----------------------------------------------------------------------------

/**
 * One run's conversation: its messages, how many model calls it took, and
 * the text of the last reply.
 *
 * @internal
 */
interface Conversation {
  readonly messages: ReadonlyArray<Prompt.Message>
  readonly turns: number
  readonly text: string
}

const userMessage = (text: string): Prompt.Message =>
  Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text })] })

/** The assistant message of a reply, if it said or called anything. */
const assistantMessage = (
  reply: Pick<Reply, "text" | "toolCalls" | "providerResults">
): ReadonlyArray<Prompt.Message> => {
  const content: Array<Prompt.AssistantMessagePart> = []
  if (reply.text.length > 0) content.push(Prompt.makePart("text", { text: reply.text }))
  for (const call of reply.toolCalls) {
    content.push(Prompt.makePart("tool-call", {
      id: call.id,
      name: call.providerName ?? call.name,
      params: call.params,
      providerExecuted: call.providerExecuted
    }))
  }
  content.push(...reply.providerResults)
  return content.length === 0 ? [] : [Prompt.makeMessage("assistant", { content })]
}

const assistantText = (text: string) => assistantMessage({ text, toolCalls: [], providerResults: [] })

const append = (conversation: Conversation, messages: ReadonlyArray<Prompt.Message>): Conversation => ({
  ...conversation,
  messages: [...conversation.messages, ...messages]
})

const toPrompt = (conversation: Conversation): Prompt.Prompt => Prompt.fromMessages([...conversation.messages])

/**
 * The conversation an agent starts from: its system prompt (when there is
 * one), the earlier exchanges of the session (user input, assistant output),
 * then the message: a `Prompt` as it is, a string as a user message, any
 * other value as JSON text.
 *
 * @internal
 */
const startConversation = (
  system: string,
  history: ReadonlyArray<{ readonly input: unknown; readonly output: unknown }>,
  message: unknown
): Conversation => {
  const messages: Array<Prompt.Message> = []
  if (system.length > 0) messages.push(Prompt.makeMessage("system", { content: system }))
  for (const exchange of history) {
    messages.push(userMessage(contentText(exchange.input)), ...assistantText(contentText(exchange.output)))
  }
  if (Prompt.isPrompt(message)) messages.push(...message.content)
  else messages.push(userMessage(contentText(message)))
  return { messages, turns: 0, text: "" }
}

// -----------------------------------------------------------------------------
// calling the model
// -----------------------------------------------------------------------------

/**
 * One tool call requested by the model.
 *
 * @internal
 */
interface ToolCall {
  readonly id: string
  readonly name: string
  readonly params: unknown
  readonly providerExecuted: boolean
  readonly providerName: string | undefined
}

/**
 * What one model call replied.
 *
 * @internal
 */
interface Reply {
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  /** results of tools the provider executed itself */
  readonly providerResults: ReadonlyArray<Prompt.ToolResultPart>
  /** the first `error` part of a streamed reply */
  readonly error: Option.Option<unknown>
  /** the tokens the call used (its `finish` part's), and the model that replied, when reported */
  readonly usage: UsageReport | undefined
  readonly model: string | undefined
}

const emptyReply: Reply = {
  text: "",
  toolCalls: [],
  providerResults: [],
  error: Option.none(),
  usage: undefined,
  model: undefined
}

/**
 * A part of a response: decoded (from `generateText` and `streamText`), or as
 * the provider encoded it (recovered from a response that named an unknown
 * tool).
 */
type ResponsePart = Response.AllParts<Record<string, Tool.Any>> | Response.AllPartsEncoded

const addPart = (reply: Reply, part: ResponsePart): Reply => {
  switch (part.type) {
    case "text":
      return { ...reply, text: reply.text + part.text }
    case "text-delta":
      return { ...reply, text: reply.text + part.delta }
    case "tool-call": {
      const call: ToolCall = {
        id: part.id,
        name: part.name,
        params: part.params,
        providerExecuted: part.providerExecuted === true,
        providerName: part.providerName
      }
      return { ...reply, toolCalls: [...reply.toolCalls, call] }
    }
    case "tool-result": {
      if (part.providerExecuted !== true) return reply
      const result = Prompt.makePart("tool-result", {
        id: part.id,
        name: part.providerName ?? part.name,
        isFailure: part.isFailure,
        result: "encodedResult" in part ? part.encodedResult : part.result,
        providerExecuted: true
      })
      return { ...reply, providerResults: [...reply.providerResults, result] }
    }
    case "error":
      return Option.isNone(reply.error) ? { ...reply, error: Option.some(part.error) } : reply
    case "finish":
      return { ...reply, usage: part.usage }
    case "response-metadata": {
      const model = modelIdOf(part)
      return model === undefined ? reply : { ...reply, model }
    }
    default:
      return reply
  }
}

/** The model a `response-metadata` part names (an `Option` once decoded). */
const modelIdOf = (part: { readonly modelId?: Option.Option<string> | string | undefined }): string | undefined =>
  typeof part.modelId === "string"
    ? part.modelId
    : part.modelId === undefined
    ? undefined
    : Option.getOrUndefined(part.modelId)

/**
 * One model call: counted in the run's token usage, and (when the run is
 * traced) an `Agent.modelCall` span with the model and the tokens it used.
 */
const modelCall = <A, E, R>(
  call: Effect.Effect<A, E, R>,
  method: string,
  reported: (a: A) => { readonly usage: UsageReport | undefined; readonly model: string | undefined },
  request: { readonly prompt: Prompt.Prompt }
): Effect.Effect<A, E, R> =>
  tracing.span(
    Effect.tap(call, (a) =>
      Effect.flatMap(FiberRef.get(currentQuestions), (questions) => {
        questions?.usage?.add(reported(a).usage)
        return boundary.active()
          ? Effect.flatMap(
            FiberRef.get(currentAgent),
            (agent) =>
              boundary.at(() => ({
                _tag: "AfterModelCall",
                agent: agent ?? "",
                method,
                request: request.prompt.content
              }))
          )
          : Effect.void
      })),
    "Agent.modelCall",
    () => ({ "gen_ai.operation.name": method }),
    (a) => {
      const { model, usage } = reported(a)
      return { ...(model === undefined ? {} : { [tracing.attr.model]: model }), ...usageAttributes(usage) }
    }
  )

const replyReport = (reply: Reply) => reply
const objectReport = (response: LanguageModel.GenerateObjectResponse<Record<string, Tool.Any>, unknown>) => {
  const metadata = response.content.find((part) => part.type === "response-metadata")
  return { usage: response.usage, model: metadata === undefined ? undefined : modelIdOf(metadata) }
}

/** What a reply of the tool loop is as a recorded one (`ModelReplied`, when the run records). */
const recordedReply = (call: Effect.Effect<Reply, AiError.AiError>): Effect.Effect<Reply, AiError.AiError> =>
  Effect.flatMap(FiberRef.get(currentAgent), (agent) =>
    call.pipe(
      Effect.tap((reply) =>
        record.reply(agent, (): WorkflowEvent.RecordedReply => {
          if (Option.isSome(reply.error)) return { _tag: "Fail", error: errorText(reply.error.value) }
          const usage = record.usageOf(reply.usage)
          const calls = reply.toolCalls.filter((call) => !call.providerExecuted)
          return calls.length === 0
            ? { _tag: "Text", text: reply.text, ...(usage === undefined ? {} : { usage }) }
            : {
              _tag: "ToolCalls",
              calls: calls.map((call) => ({ name: call.name, params: call.params })),
              ...(reply.text.length === 0 ? {} : { text: reply.text }),
              ...(usage === undefined ? {} : { usage })
            }
        })
      ),
      Effect.tapError((error) => record.reply(agent, () => ({ _tag: "Fail", error: error.message })))
    ))

const publishDelta = (part: ResponsePart): Effect.Effect<void> =>
  part.type === "text-delta" && part.delta.length > 0
    ? events.emit({ _tag: "TextDelta", delta: part.delta })
    : Effect.void

/**
 * The parts of a response that `LanguageModel` could not decode because it
 * calls a tool the request did not declare (the response schema admits only
 * the request's tools, so such a call fails the whole response). They are
 * recovered from the parse error, whose `actual` is the provider's response
 * (or stream chunk), so that the loop can answer the call with an error result.
 */
const unknownToolParts = (error: AiError.AiError, tools: Tools): ReadonlyArray<ResponsePart> | undefined => {
  if (error._tag !== "MalformedOutput" || !ParseResult.isParseError(error.cause)) return undefined
  const actual: unknown = error.cause.issue.actual
  // what the provider produced: its encoded response parts
  const parts = (Array.isArray(actual) ? actual : Chunk.isChunk(actual) ? Chunk.toReadonlyArray(actual) : undefined) as
    | ReadonlyArray<Response.AllPartsEncoded>
    | undefined
  const callsUnknown = parts?.some((part) =>
    part.type === "tool-call" && part.providerExecuted !== true && !tools.entries.has(part.name)
  )
  return callsUnknown === true ? parts : undefined
}

/**
 * Calls the model once with the conversation and the tools: streamed (each
 * text delta published as a `TextDelta` event) when the run's events are
 * consumed, else in one response.
 *
 * @internal
 */
const callModel = (
  model: LanguageModel.Service,
  tools: Tools,
  conversation: Conversation,
  streaming: boolean
): Effect.Effect<Reply, AiError.AiError> => {
  const request = { prompt: toPrompt(conversation), ...requestOptions(tools) }
  const reply = streaming
    ? Effect.suspend(() => {
      let reply = emptyReply
      const collect = (part: ResponsePart) => {
        reply = addPart(reply, part)
        return publishDelta(part)
      }
      return Stream.runForEach(model.streamText(request), collect).pipe(
        Effect.catchAll((error) => {
          const parts = unknownToolParts(error, tools)
          return parts === undefined ? Effect.fail(error) : Effect.forEach(parts, collect, { discard: true })
        }),
        Effect.map(() => reply)
      )
    })
    // a complete response has no text deltas to publish
    : model.generateText(request).pipe(
      Effect.map((response): Reply => response.content.reduce(addPart, emptyReply)),
      Effect.catchAll((error) => {
        const parts = unknownToolParts(error, tools)
        return parts === undefined ? Effect.fail(error) : Effect.succeed(parts.reduce(addPart, emptyReply))
      })
    )
  return Effect.flatMap(
    recordedReply(modelCall(reply, streaming ? "streamText" : "generateText", replyReport, request)),
    (result) =>
      Option.isSome(result.error)
        ? new AiError.UnknownError({
          module: "Agent",
          method: "run",
          description: `The model reported an error: ${errorText(result.error.value)}`,
          cause: result.error.value
        })
        : Effect.succeed(result)
  )
}

// -----------------------------------------------------------------------------
// approvals
// -----------------------------------------------------------------------------

/**
 * Which calls of a tool wait for a person's approval: none (`false`), all
 * (`true`), or those whose decoded arguments the predicate accepts.
 *
 * @internal
 */
export type ApprovalPolicy = boolean | ((params: never) => boolean)

/**
 * The tool annotation saying which calls of a tool wait for a person's
 * approval (default: none).
 *
 * @internal
 */
export class NeedsApproval extends EffectContext.Reference<NeedsApproval>()("@sessionflow/core/Agent/NeedsApproval", {
  defaultValue: (): ApprovalPolicy => false
}) {}

/** @internal */
export const NeedsApprovalTypeId: unique symbol = Symbol.for("@sessionflow/core/Agent/NeedsApproval")

/** @internal */
export type NeedsApprovalTypeId = typeof NeedsApprovalTypeId

/**
 * The tool with the {@link NeedsApproval} annotation (and the mark that lets
 * an agent's type know it may pause).
 *
 * @internal
 */
export const needsApproval = (tool: Tool.Any, when: ApprovalPolicy, timeout?: Duration.DurationInput): Tool.Any => {
  if (!Tool.isUserDefined(tool)) {
    throw new TypeError(
      `Agent.needsApproval: the provider runs the tool '${tool.name}' itself; it cannot wait for approval`
    )
  }
  const annotated = tool.annotate(NeedsApproval, when)
  const timed = timeout === undefined ? annotated : annotated.annotate(ApprovalTimeout, Duration.decode(timeout))
  return Object.assign(timed, { [NeedsApprovalTypeId]: NeedsApprovalTypeId })
}

/**
 * How long a call of a tool waits for a person's approval before it is
 * rejected (none: for ever).
 *
 * @internal
 */
class ApprovalTimeout extends EffectContext.Reference<ApprovalTimeout>()("@sessionflow/core/Agent/ApprovalTimeout", {
  defaultValue: (): Duration.Duration | undefined => undefined
}) {}

const approvalTimeoutOf = (tool: Tool.Any): Duration.Duration | undefined =>
  EffectContext.get(tool.annotations as EffectContext.Context<ApprovalTimeout>, ApprovalTimeout)

/** The decision on a call nobody approved in time: rejected, saying so to the model. */
const timedOutDecision: typeof ApprovalResponse.Type = {
  approved: false,
  reason: "not approved in time"
}

/** A tool's approval policy (from its annotation). */
const approvalOf = (tool: Tool.Any): ApprovalPolicy =>
  EffectContext.get(tool.annotations as EffectContext.Context<NeedsApproval>, NeedsApproval)

/** @internal */
export const ApprovalRequest = Schema.Struct({
  /** the agent whose model made the call */
  agent: Schema.String,
  tool: Schema.String,
  toolCallId: Schema.String,
  /** the arguments as the model sent them */
  arguments: Schema.Unknown
}).annotations({ identifier: "ApprovalRequest" })

/** @internal */
export const ApprovalResponse = Schema.Struct({
  approved: Schema.Boolean,
  /** why (given to the model with a rejection) */
  reason: Schema.optional(Schema.String)
}).annotations({ identifier: "ApprovalResponse" })

const PendingCall = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  params: Schema.Unknown,
  providerName: Schema.optional(Schema.String)
})

/**
 * What an agent run that asks for approval leaves with its question, to
 * carry on from without calling the model again: which run of which agent it
 * is (in its top-level step), the conversation up to the reply that made the
 * calls, the results of that reply's calls made before the question, the
 * calls still to make (the one asked about first), and the run's state (its
 * tools' changes so far are kept, not made again).
 */
const Checkpoint = Schema.Struct({
  agent: Schema.String,
  run: Schema.Number,
  prompt: Prompt.Prompt,
  turns: Schema.Number,
  text: Schema.String,
  results: Schema.Array(Prompt.ToolResultPart),
  pending: Schema.NonEmptyArray(PendingCall),
  state: Schema.optional(Schema.Unknown)
})

const encodeCheckpoint = Schema.encode(Checkpoint)
const decodeCheckpoint = Schema.decodeUnknown(Checkpoint)

/**
 * Where an agent run asks: the questions of the workflow run (none outside
 * of runs: nobody can be asked), and which run of the agent this is in the
 * current top-level step.
 */
interface Approvals {
  readonly questions: Questions | undefined
  readonly run: number
}

/** The tool calls of one reply still to make. */
interface Turn {
  readonly calls: ReadonlyArray<ToolCall>
  /** the results of the reply's calls made before these */
  readonly results: ReadonlyArray<Prompt.ToolResultPart>
  /** the answer to the question about the first call, when it was asked */
  readonly decision: typeof ApprovalResponse.Type | undefined
}

const ownedBy = (agent: string, run: number) => (answer: Answer): boolean => {
  const checkpoint = answer.checkpoint as { readonly agent?: unknown; readonly run?: unknown } | undefined
  return typeof checkpoint === "object" && checkpoint !== null && checkpoint.agent === agent && checkpoint.run === run
}

/**
 * Where an agent run stands on approvals: outside a workflow run, nowhere;
 * inside, it counts as the agent's next run of the top-level step, and when
 * that run asked before (the step runs again after `Workflow.continue`), it
 * carries on from its latest answered question: the conversation and calls
 * of the checkpoint, with the answer's decision.
 */
const beginApprovals = (
  agent: Agent.Any,
  tools: Tools
): Effect.Effect<
  {
    readonly approvals: Approvals
    readonly restored: { readonly conversation: Conversation; readonly turn: Turn } | undefined
  },
  WorkflowError.ResponseDecodeError
> =>
  Effect.gen(function*() {
    const questions = yield* FiberRef.get(currentQuestions)
    if (questions === undefined || !tools.approvals) {
      return { approvals: { questions: undefined, run: 0 }, restored: undefined }
    }
    const run = startRun(questions, agent.name)
    const answer = latestAnswer(questions, agent.name, ownedBy(agent.name, run))
    if (answer === undefined) {
      return { approvals: { questions, run }, restored: undefined }
    }
    // the checkpoint is this library's own: one that does not decode is a defect
    const checkpoint = yield* Effect.orDie(decodeCheckpoint(answer.checkpoint))
    const decision = answer.timedOut === true
      ? timedOutDecision
      : yield* decodeResponse(ApprovalResponse, answer.response)
    // the state as it was at the question (it was valid then)
    if (questions.state !== undefined && checkpoint.state !== undefined) {
      yield* Effect.orDie(questions.state.restore(checkpoint.state))
    }
    return {
      approvals: { questions, run },
      restored: {
        conversation: { messages: checkpoint.prompt.content, turns: checkpoint.turns, text: checkpoint.text },
        turn: {
          calls: checkpoint.pending.map((call) => ({
            ...call,
            providerExecuted: false,
            providerName: call.providerName
          })),
          results: checkpoint.results,
          decision
        }
      }
    }
  })

/** The result of a call nobody can approve (the agent runs outside a workflow run). */
const nobodyToAsk = (tool: string): ToolOutcome => ({
  isFailure: true,
  result:
    `Tool '${tool}' needs a person's approval, and nobody can be asked outside a workflow run: the call was not made.`
})

/** The result of a call a person rejected. */
const rejected = (reason: string | undefined): ToolOutcome => ({
  isFailure: true,
  result: reason === undefined || reason.trim().length === 0
    ? "Rejected by a person."
    : `Rejected by a person: ${reason}`
})

const sameCall = (a: { readonly name: string; readonly params: unknown }, b: ToolCall) =>
  a.name === b.name && JSON.stringify(a.params) === JSON.stringify(b.params)

// -----------------------------------------------------------------------------
// the tool loop
// -----------------------------------------------------------------------------

const unknownTool = (name: string, known: ReadonlyArray<string>): ToolOutcome => ({
  isFailure: true,
  result: known.length === 0
    ? `Unknown tool '${name}': no tools are available.`
    : `Unknown tool '${name}'. Available tools: ${known.join(", ")}.`
})

const callStarted = (call: ToolCall) =>
  events.emit({ _tag: "ToolCallStarted", toolCallId: call.id, toolName: call.name, arguments: call.params })

/** Ends a tool call: its `ToolCallCompleted` event, and the result the model gets. */
const callCompleted = (call: ToolCall, outcome: ToolOutcome): Effect.Effect<Prompt.ToolResultPart> =>
  Effect.as(
    events.emit({
      _tag: "ToolCallCompleted",
      toolCallId: call.id,
      toolName: call.name,
      result: outcome.result,
      isError: outcome.isFailure
    }),
    Prompt.makePart("tool-result", {
      id: call.id,
      name: call.providerName ?? call.name,
      isFailure: outcome.isFailure,
      result: outcome.result,
      providerExecuted: false
    })
  )

/** Makes a call (a tool the agent does not have is an error result). */
const execute = (tools: Tools, call: ToolCall) => {
  const entry = tools.entries.get(call.name)
  return entry === undefined
    ? Effect.succeed(unknownTool(call.name, [...tools.entries.keys()]))
    : boundary.active()
    ? Effect.tap(entry.run(call.params), () =>
      boundary.at(() => ({
        _tag: "AfterTool",
        tool: call.name,
        params: call.params,
        idempotent: EffectContext.get(entry.tool.annotations, Tool.Idempotent) ||
          EffectContext.get(entry.tool.annotations, Tool.Readonly)
      })))
    : entry.run(call.params)
}

/**
 * Runs one tool call the model asked for, between its `ToolCallStarted` and
 * `ToolCallCompleted` events, and returns the result the model gets.
 *
 * @internal
 */
const runToolCall = (
  tools: Tools,
  call: ToolCall
): Effect.Effect<Prompt.ToolResultPart, WorkflowError.ResponseDecodeError, unknown> =>
  Effect.zipRight(
    callStarted(call),
    toolSpan(call, Effect.flatMap(execute(tools, call), (outcome) => callCompleted(call, outcome)))
  )

/** Makes (approved) or answers (rejected) a call a person decided on. */
const decided = (tools: Tools, call: ToolCall, decision: typeof ApprovalResponse.Type) =>
  toolSpan(
    call,
    Effect.flatMap(
      decision.approved ? execute(tools, call) : Effect.succeed(rejected(decision.reason)),
      (outcome) => callCompleted(call, outcome)
    )
  )

/** A tool call in its `Agent.toolCall` span (when the run is traced). */
const toolSpan = <E, R>(call: ToolCall, self: Effect.Effect<Prompt.ToolResultPart, E, R>) =>
  tracing.span(
    self,
    "Agent.toolCall",
    () => ({ [tracing.attr.tool]: call.name, [tracing.attr.toolCallId]: call.id }),
    (result) => ({ [tracing.attr.toolError]: result.isFailure })
  )

/**
 * What the agent loop works with: the agent, its model and tools, whether the
 * model is streamed, and where it asks for approvals.
 *
 * @internal
 */
interface Loop {
  readonly agent: Agent.Any
  readonly model: LanguageModel.Service
  readonly tools: Tools
  readonly streaming: boolean
  readonly approvals: Approvals
}

/**
 * Makes the calls of one reply, one after the other, in the order the model
 * gave them, and adds their results to the conversation. A call that needs
 * approval asks (after its `ToolCallStarted`): inside a workflow run the run
 * pauses, leaving the conversation and the calls still to make as the
 * question's checkpoint; outside, the call is refused with an error result.
 */
const finishTurn = (loop: Loop, conversation: Conversation, turn: Turn) =>
  Effect.gen(function*() {
    const { agent, approvals, tools } = loop
    const results = [...turn.results]
    for (const [i, call] of turn.calls.entries()) {
      if (i === 0 && turn.decision !== undefined) {
        results.push(yield* decided(tools, call, turn.decision))
        continue
      }
      const entry = tools.entries.get(call.name)
      if (entry === undefined || !(yield* entry.needsApproval(call.params))) {
        results.push(yield* runToolCall(tools, call))
        continue
      }
      yield* callStarted(call)
      if (approvals.questions === undefined) {
        results.push(yield* callCompleted(call, nobodyToAsk(call.name)))
        continue
      }
      const pending = turn.calls.slice(i).map(({ id, name, params, providerName }) => ({
        id,
        name,
        params,
        ...(providerName === undefined ? {} : { providerName })
      }))
      const checkpoint = yield* Effect.orDie(encodeCheckpoint({
        agent: agent.name,
        run: approvals.run,
        prompt: toPrompt(conversation),
        turns: conversation.turns,
        text: conversation.text,
        results,
        pending: [pending[0]!, ...pending.slice(1)],
        ...(approvals.questions.state === undefined
          ? {}
          : { state: yield* Effect.orDie(approvals.questions.state.save) })
      }))
      const payload: typeof ApprovalRequest.Encoded = {
        agent: agent.name,
        tool: call.name,
        toolCallId: call.id,
        arguments: call.params
      }
      // pauses the run, unless this question was answered: then the step ran
      // again and this run did not carry on from its checkpoint (it took
      // another course before): the answer holds only for the same call
      const timeout = approvalTimeoutOf(entry.tool)
      const timeoutAt = timeout === undefined
        ? undefined
        : (yield* Clock.currentTimeMillis) + Duration.toMillis(timeout)
      const answer = yield* ask(
        approvals.questions,
        agent.name,
        payload,
        checkpoint,
        timeoutAt === undefined ? undefined : { kind: "question", wakeAt: timeoutAt, timeoutAt }
      )
      const asked =
        (answer.checkpoint as { readonly pending?: ReadonlyArray<{ readonly name: string; readonly params: unknown }> })
          .pending?.[0]
      if (asked === undefined || !sameCall(asked, call)) {
        return yield* Effect.dieMessage(
          `Agent '${agent.name}': the answer found for its call of '${call.name}' was ` +
            `given about another tool call (the run took another course when it continued)`
        )
      }
      results.push(
        yield* decided(
          tools,
          call,
          answer.timedOut === true ? timedOutDecision : yield* decodeResponse(ApprovalResponse, answer.response)
        )
      )
    }
    return append(conversation, [Prompt.makeMessage("tool", { content: results })])
  })

/**
 * Calls the model until a reply asks for no tools, making the tool calls of
 * each reply ({@link finishTurn}); first the rest of `resume`'s calls, when
 * the run carries on from an approval. Fails with `MaxTurnsExceeded` when the
 * model still asks for tools after `maxTurns` calls (those calls are not
 * made).
 *
 * @internal
 */
const toolLoop = (
  loop: Loop,
  start: Conversation,
  resume: Turn | undefined
): Effect.Effect<Conversation, AiError.AiError | MaxTurnsExceeded | WorkflowError.ResponseDecodeError, unknown> =>
  Effect.gen(function*() {
    const { agent, model, streaming, tools } = loop
    let conversation = resume === undefined ? start : yield* finishTurn(loop, start, resume)
    while (true) {
      const reply = yield* callModel(model, tools, conversation, streaming)
      conversation = {
        ...append(conversation, assistantMessage(reply)),
        turns: conversation.turns + 1,
        text: reply.text
      }
      const calls = reply.toolCalls.filter((call) => !call.providerExecuted)
      if (calls.length === 0) return conversation
      if (conversation.turns >= agent.maxTurns) {
        return yield* new MaxTurnsExceeded({ agent: agent.name, maxTurns: agent.maxTurns })
      }
      conversation = yield* finishTurn(loop, conversation, { calls, results: [], decision: undefined })
    }
  })

// -----------------------------------------------------------------------------
// structured output
// -----------------------------------------------------------------------------

/**
 * The object name of a structured output request: the Schema's identifier,
 * else the agent's name (none for Schemas the library names itself).
 */
const objectName = (schema: Schema.Schema.Any, agentName: string): string | undefined => {
  if ("_tag" in schema || "identifier" in schema) return undefined
  const id = SchemaAST.getIdentifierAnnotation(schema.ast)
  if (id._tag === "Some") return id.value
  const cleaned = agentName.replace(/[^a-zA-Z0-9_-]+/g, "_").replace(/^_+|_+$/g, "")
  return cleaned.length === 0 ? undefined : cleaned
}

/** A failure of `generateObject` that is about the reply itself (no text, not JSON, not the Schema's shape). */
const isReplyFailure = (error: AiError.AiError): error is AiError.MalformedOutput =>
  error._tag === "MalformedOutput" && error.module === "LanguageModel" && error.method === "generateObject"

/** The text of a reply that failed to decode (the parse error's `actual`). */
const replyText = (error: AiError.MalformedOutput): string | undefined => {
  if (!ParseResult.isParseError(error.cause)) return undefined
  const actual: unknown = error.cause.issue.actual
  return typeof actual === "string" ? actual : undefined
}

/** What went wrong with a structured reply: "not JSON", or the Schema's decode error on the parsed value. */
const describeReplyFailure = (
  schema: OutputSchema,
  error: AiError.MalformedOutput,
  text: string | undefined
): Effect.Effect<string, never, unknown> => {
  if (text === undefined) {
    return Effect.succeed(
      ParseResult.isParseError(error.cause)
        ? errorText(error.cause)
        : "The reply contained no text; a JSON value was expected."
    )
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (cause) {
    return Effect.succeed(`The reply is not valid JSON (${cause instanceof Error ? cause.message : String(cause)}).`)
  }
  return Schema.decodeUnknown(schema)(json, { errors: "all" }).pipe(
    Effect.match({ onFailure: errorText, onSuccess: () => errorText(error.cause ?? error) })
  )
}

const repairMessage = (problem: string): string =>
  [
    "Your previous reply could not be decoded into the required output:",
    problem,
    "Reply again with only the corrected JSON value, matching the required schema exactly."
  ].join("\n")

/** An output Schema: the model is asked for a JSON object. */
type OutputSchema = Schema.Schema<unknown, Record<string, unknown>, unknown>

type Attempt =
  | { readonly _tag: "Decoded"; readonly value: unknown; readonly text: string }
  | { readonly _tag: "Invalid"; readonly problem: string; readonly text: string | undefined; readonly error: unknown }

/**
 * The structured output of a conversation: the last reply, if it is already
 * the JSON value; else a structured-output request (tools off), and when its
 * reply does not decode, one repair turn that tells the model why; a second
 * failure is a `StructuredOutputError`.
 *
 * @internal
 */
const structuredOutput = (
  agent: Agent.Any,
  model: LanguageModel.Service,
  tools: Tools,
  schema: OutputSchema,
  start: Conversation
): Effect.Effect<
  { readonly value: unknown; readonly conversation: Conversation },
  AiError.AiError | StructuredOutputError,
  unknown
> =>
  Effect.gen(function*() {
    if (start.text.length > 0) {
      const direct = yield* Effect.option(Schema.decodeUnknown(Schema.parseJson(schema))(start.text))
      if (Option.isSome(direct)) return { value: direct.value, conversation: start }
    }
    const name = objectName(schema, agent.name)
    const attempt = (conversation: Conversation): Effect.Effect<Attempt, AiError.AiError, unknown> => {
      const prompt = toPrompt(conversation)
      return modelCall(
        model.generateObject({
          prompt,
          schema,
          ...(name === undefined ? {} : { objectName: name }),
          ...(tools.toolkit === undefined ? {} : { ...requestOptions(tools), toolChoice: "none" as const })
        }),
        "generateObject",
        objectReport,
        { prompt }
      ).pipe(
        Effect.tap((response) =>
          record.reply(agent.name, () => {
            const usage = record.usageOf(response.usage)
            return { _tag: "Text", text: response.text, ...(usage === undefined ? {} : { usage }) }
          })
        ),
        Effect.tapError((error) =>
          record.reply(agent.name, () => {
            const text = isReplyFailure(error) ? replyText(error) : undefined
            return text === undefined ? { _tag: "Fail", error: error.message } : { _tag: "Text", text }
          })
        ),
        Effect.map((response): Attempt => ({ _tag: "Decoded", value: response.value, text: response.text })),
        Effect.catchIf(isReplyFailure, (error) => {
          const text = replyText(error)
          return Effect.map(
            describeReplyFailure(schema, error, text),
            (problem): Attempt => ({ _tag: "Invalid", problem, text, error })
          )
        })
      )
    }
    const first = yield* attempt(start)
    let conversation: Conversation = { ...start, turns: start.turns + 1 }
    let final = first
    if (first._tag === "Invalid") {
      conversation = append(conversation, [
        ...assistantText(first.text ?? ""),
        userMessage(repairMessage(first.problem))
      ])
      final = yield* attempt(conversation)
      conversation = { ...conversation, turns: conversation.turns + 1 }
    }
    if (final._tag === "Invalid") {
      return yield* new StructuredOutputError({
        agent: agent.name,
        description: final.problem,
        ...(final.text === undefined ? {} : { text: final.text }),
        cause: final.error
      })
    }
    return {
      value: final.value,
      conversation: { ...append(conversation, assistantText(final.text)), text: final.text }
    }
  })

// -----------------------------------------------------------------------------
// a run
// -----------------------------------------------------------------------------

/** The session's earlier exchanges, when the agent runs inside a workflow run. */
const history = (agent: Agent.Any) =>
  agent.history === undefined
    ? Effect.succeed([])
    : Effect.flatMap(
      Effect.serviceOption(RunContext.RunContext),
      (run) => Option.isNone(run) ? Effect.succeed([]) : run.value.chatHistory({ lastRuns: agent.history!.lastRuns })
    )

const systemPrompt = (agent: Agent.Any, options: Agent.RunOptions | undefined): string => {
  const parts = agent.instructions.length === 0 ? [] : [agent.instructions.join("\n")]
  if (options?.additionalContext !== undefined && options.additionalContext.length > 0) {
    parts.push(options.additionalContext)
  }
  return parts.join("\n\n")
}

/** The agent's own model (its layer built for this run), else the context's. */
const withModel = <A, E, R>(
  agent: Agent.Any,
  f: (model: LanguageModel.Service) => Effect.Effect<A, E, R>
): Effect.Effect<A, unknown, unknown> =>
  Effect.flatMap(FiberRef.get(record.modelOverride), (replayed) =>
    replayed !== undefined
      ? f(replayed)
      : agent.model === undefined
      ? Effect.flatMap(LanguageModel.LanguageModel, f)
      : Effect.scoped(
        Effect.flatMap(
          Layer.build(agent.model),
          (context) => f(EffectContext.get(context, LanguageModel.LanguageModel))
        )
      ))

/**
 * Runs an agent on a message: the tool loop (unless it has an output Schema
 * and no tools), then its structured output (with an output Schema).
 *
 * @internal
 */
export const run = (
  agent: Agent.Any,
  message: unknown,
  options: Agent.RunOptions | undefined
): Effect.Effect<Agent.Result<unknown>, unknown, unknown> =>
  withModel(agent, (model) =>
    Effect.gen(function*() {
      const tools = yield* resolveTools(agent)
      const streaming = yield* events.isEnabled
      const { approvals, restored } = yield* beginApprovals(agent, tools)
      const start = restored?.conversation ??
        startConversation(systemPrompt(agent, options), yield* history(agent), message)
      const schema = agent.outputSchema as OutputSchema | undefined
      const conversation = schema === undefined || tools.entries.size > 0
        ? yield* toolLoop({ agent, model, tools, streaming, approvals }, start, restored?.turn)
        : start
      if (schema === undefined) {
        return {
          content: conversation.text,
          text: conversation.text,
          prompt: toPrompt(conversation),
          turns: conversation.turns
        }
      }
      const output = yield* structuredOutput(agent, model, tools, schema, conversation)
      const { text, turns } = output.conversation
      return { content: output.value, text, prompt: toPrompt(output.conversation), turns }
    })).pipe(
      Effect.locally(currentAgent, agent.name),
      Effect.annotateLogs("agent", agent.name)
    )
