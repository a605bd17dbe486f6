/**
 * A scripted `LanguageModel` for tests and offline runs.
 *
 * A script is a list of replies, consumed one per model call, or a function
 * that picks the reply from the request (the latest user message, the tool
 * results the model is being shown, the calling agent, …); list entries may be
 * functions too. Running out of script is a defect with a message saying
 * which call had no reply. Every request is recorded (`TestModel.requests`).
 *
 * ```ts
 * TestModel.layer([
 *   TestModel.toolCalls(["add_item", { item: "milk" }], ["add_item", { item: "bread" }]),
 *   TestModel.text("Added milk and bread.")
 * ])
 *
 * TestModel.layer((request) =>
 *   request.toolResults.length > 0
 *     ? TestModel.text(`Done: ${request.toolResults.map((r) => r.result).join("; ")}`)
 *     : TestModel.toolCalls(["list_items", {}]))
 * ```
 *
 * When streamed, a text reply arrives as one delta per word (or the deltas
 * given to {@link text}).
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as internal from "./internal/agent/agent.js"
import * as RunContext from "./RunContext.js"
import { contentText } from "./StepOutput.js"

/**
 * A scripted reply.
 *
 * @since 0.1.0
 * @category models
 */
export type Reply = TextReply | ToolCallsReply | ObjectReply | FailReply | PartsReply

/**
 * @since 0.1.0
 * @category models
 */
export interface TextReply {
  readonly _tag: "Text"
  readonly text: string
  /** the deltas of a streamed reply */
  readonly deltas: ReadonlyArray<string>
  /** the tokens the reply reports (zeros when not given, see {@link withUsage}) */
  readonly usage?: Usage | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolCallsReply {
  readonly _tag: "ToolCalls"
  readonly calls: ReadonlyArray<{ readonly name: string; readonly params: unknown }>
  /** text before the calls, if any */
  readonly text: string | undefined
  readonly usage?: Usage | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ObjectReply {
  readonly _tag: "Object"
  readonly value: unknown
  readonly usage?: Usage | undefined
}

/**
 * The token counts a scripted reply reports, as a provider would in its
 * `finish` part (`totalTokens` defaults to input + output).
 *
 * @since 0.1.0
 * @category models
 */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly totalTokens?: number | undefined
  readonly reasoningTokens?: number | undefined
  readonly cachedInputTokens?: number | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface FailReply {
  readonly _tag: "Fail"
  readonly error: AiError.AiError
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PartsReply {
  readonly _tag: "Parts"
  readonly parts: ReadonlyArray<Response.PartEncoded>
}

/**
 * A tool result shown to the model.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolResult {
  readonly id: string
  readonly name: string
  readonly result: unknown
  readonly isFailure: boolean
}

/**
 * What the model was asked.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  /** 0 for the first call the model received, then 1, 2, … */
  readonly index: number
  readonly method: "generateText" | "streamText"
  /** the agent making the call, when called from an agent */
  readonly agent: string | undefined
  /** the input of the workflow run making the call (`undefined` outside of runs) */
  readonly runInput: unknown
  readonly prompt: Prompt.Prompt
  /** the system messages, joined */
  readonly system: string
  /** the text of the latest user message */
  readonly lastUserMessage: string | undefined
  /** how many assistant messages follow the latest user message (0 on an agent's first turn) */
  readonly turn: number
  /** the results of the tool calls of the previous assistant message (empty if none) */
  readonly toolResults: ReadonlyArray<ToolResult>
  /** the names of the tools offered */
  readonly tools: ReadonlyArray<string>
  readonly toolChoice: LanguageModel.ToolChoice<string>
  /** true when structured (JSON) output was asked for */
  readonly structured: boolean
  readonly objectName: string | undefined
}

/**
 * Picks a reply from the request.
 *
 * @since 0.1.0
 * @category models
 */
export type Responder = (request: Request) => Reply | Effect.Effect<Reply>

/**
 * A list of replies (or responders), consumed in order, or one responder for
 * every call.
 *
 * @since 0.1.0
 * @category models
 */
export type Script = ReadonlyArray<Reply | Responder> | Responder

/**
 * A text reply. Give an array to choose the streamed deltas; a string is
 * streamed one word at a time.
 *
 * @since 0.1.0
 * @category replies
 */
export const text = (text: string | ReadonlyArray<string>): Reply =>
  typeof text === "string"
    ? { _tag: "Text", text, deltas: splitWords(text) }
    : { _tag: "Text", text: text.join(""), deltas: [...text] }

/**
 * A reply with one or more tool calls, each `[name, arguments]`.
 *
 * @since 0.1.0
 * @category replies
 */
export const toolCalls = (...calls: ReadonlyArray<readonly [name: string, params: unknown]>): Reply => ({
  _tag: "ToolCalls",
  calls: calls.map(([name, params]) => ({ name, params })),
  text: undefined
})

/**
 * A reply with text and tool calls.
 *
 * @since 0.1.0
 * @category replies
 */
export const textAndToolCalls = (
  text: string,
  ...calls: ReadonlyArray<readonly [name: string, params: unknown]>
): Reply => ({ _tag: "ToolCalls", calls: calls.map(([name, params]) => ({ name, params })), text })

/**
 * A structured output reply: the value as JSON text.
 *
 * @since 0.1.0
 * @category replies
 */
export const object = (value: unknown): Reply => ({ _tag: "Object", value })

/**
 * A failed call: the given `AiError`, or an `UnknownError` with the given
 * description.
 *
 * @since 0.1.0
 * @category replies
 */
export const fail = (error: AiError.AiError | string): Reply => ({
  _tag: "Fail",
  error: typeof error === "string"
    ? new AiError.UnknownError({ module: "TestModel", method: "reply", description: error })
    : error
})

/**
 * A text, tool-call or structured reply that reports `usage` (the tokens of
 * the call): summed over a run's model calls into `RunOutput.usage`. A failed
 * or raw-parts reply throws a `TypeError` (a raw-parts reply says its usage in
 * its own `finish` part).
 *
 * ```ts
 * TestModel.withUsage(TestModel.text("Hi!"), { inputTokens: 12, outputTokens: 3 })
 * ```
 *
 * @since 0.1.0
 * @category replies
 */
export const withUsage: {
  (usage: Usage): (reply: Reply) => Reply
  (reply: Reply, usage: Usage): Reply
} = dual(2, (reply: Reply, usage: Usage): Reply => {
  if (reply._tag === "Fail" || reply._tag === "Parts") {
    throw new TypeError(
      `TestModel.withUsage: a ${
        reply._tag === "Fail" ? "failed" : "raw parts"
      } reply has no usage to report (give a parts reply its own finish part)`
    )
  }
  return { ...reply, usage }
})

/**
 * A reply made of raw response parts (as a provider would produce them).
 *
 * @since 0.1.0
 * @category replies
 */
export const parts = (parts: ReadonlyArray<Response.PartEncoded>): Reply => ({ _tag: "Parts", parts })

/**
 * @since 0.1.0
 * @category models
 */
export interface RecorderService {
  /** every request received so far, in order */
  readonly requests: Effect.Effect<ReadonlyArray<Request>>
}

/**
 * The requests a `TestModel` layer received.
 *
 * @since 0.1.0
 * @category tags
 */
export class Recorder extends Context.Tag("@sessionflow/core/TestModel/Recorder")<Recorder, RecorderService>() {}

/**
 * Every request received so far.
 *
 * @since 0.1.0
 * @category accessors
 */
export const requests: Effect.Effect<ReadonlyArray<Request>, never, Recorder> = Effect.flatMap(
  Recorder,
  (r) => r.requests
)

/**
 * The prompt of every request received so far.
 *
 * @since 0.1.0
 * @category accessors
 */
export const prompts: Effect.Effect<ReadonlyArray<Prompt.Prompt>, never, Recorder> = Effect.map(
  requests,
  (rs) => rs.map((r) => r.prompt)
)

const noUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 }

/** What a reply's `finish` part reports. */
const usageOf = (reply: TextReply | ToolCallsReply | ObjectReply): typeof Response.Usage.Encoded => {
  const usage = reply.usage
  if (usage === undefined) return noUsage
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    totalTokens: usage.totalTokens ?? usage.inputTokens + usage.outputTokens,
    ...(usage.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
    ...(usage.cachedInputTokens === undefined ? {} : { cachedInputTokens: usage.cachedInputTokens })
  }
}

const splitWords = (s: string): ReadonlyArray<string> => {
  const words = s.match(/\s*\S+\s*/g)
  return words === null ? (s.length === 0 ? [] : [s]) : words
}

const messageText = (message: Prompt.Message): string => {
  if (typeof message.content === "string") return message.content
  return message.content.map((part) => (part.type === "text" ? part.text : "")).join("")
}

const makeRequest = (
  options: LanguageModel.ProviderOptions,
  method: Request["method"],
  index: number,
  agent: string | undefined,
  runInput: unknown
): Request => {
  const messages = options.prompt.content
  const system = messages.filter((m) => m.role === "system").map(messageText).join("\n")
  let lastUser = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "user") {
      lastUser = i
      break
    }
  }
  let lastAssistant = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "assistant") {
      lastAssistant = i
      break
    }
  }
  const toolResults: Array<ToolResult> = []
  if (lastAssistant > lastUser) {
    for (const message of messages.slice(lastAssistant + 1)) {
      if (message.role !== "tool") continue
      for (const part of message.content) {
        toolResults.push({ id: part.id, name: part.name, result: part.result, isFailure: part.isFailure })
      }
    }
  }
  return {
    index,
    method,
    agent,
    runInput,
    prompt: options.prompt,
    system,
    lastUserMessage: lastUser === -1 ? undefined : messageText(messages[lastUser]!),
    turn: messages.slice(lastUser + 1).filter((m) => m.role === "assistant").length,
    toolResults,
    tools: options.tools.map((t) => t.name),
    toolChoice: options.toolChoice,
    structured: options.responseFormat.type === "json",
    objectName: options.responseFormat.type === "json" ? options.responseFormat.objectName : undefined
  }
}

const toParts = (reply: Reply, index: number): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> => {
  switch (reply._tag) {
    case "Fail":
      return Effect.fail(reply.error)
    case "Parts":
      return Effect.succeed([...reply.parts])
    case "Text":
      return Effect.succeed([{ type: "text", text: reply.text }, {
        type: "finish",
        reason: "stop",
        usage: usageOf(reply)
      }])
    case "Object":
      return Effect.succeed([
        { type: "text", text: JSON.stringify(reply.value) },
        { type: "finish", reason: "stop", usage: usageOf(reply) }
      ])
    case "ToolCalls":
      return Effect.succeed([
        ...(reply.text === undefined ? [] : [{ type: "text" as const, text: reply.text }]),
        ...reply.calls.map((call, i) => ({
          type: "tool-call" as const,
          id: `call_${index}_${i}`,
          name: call.name,
          params: call.params
        })),
        { type: "finish", reason: "tool-calls", usage: usageOf(reply) }
      ])
  }
}

const textChunks = (id: string, deltas: ReadonlyArray<string>): Array<Chunk.Chunk<Response.StreamPartEncoded>> => [
  Chunk.of<Response.StreamPartEncoded>({ type: "text-start", id }),
  ...deltas.map((delta) => Chunk.of<Response.StreamPartEncoded>({ type: "text-delta", id, delta })),
  Chunk.of<Response.StreamPartEncoded>({ type: "text-end", id })
]

/**
 * Text parts are streamed one delta per chunk; everything else (tool calls
 * and the finish part) arrives together in the last chunk, as providers send
 * them at the end of a response.
 */
const toStream = (reply: Reply, index: number): Stream.Stream<Response.StreamPartEncoded, AiError.AiError> => {
  switch (reply._tag) {
    case "Fail":
      return Stream.fail(reply.error)
    case "Text":
      return Stream.fromChunks(
        ...textChunks(`text_${index}`, reply.deltas),
        Chunk.of<Response.StreamPartEncoded>({ type: "finish", reason: "stop", usage: usageOf(reply) })
      )
    default: {
      const chunks: Array<Chunk.Chunk<Response.StreamPartEncoded>> = []
      const rest: Array<Response.StreamPartEncoded> = []
      let n = 0
      for (const part of Effect.runSync(toParts(reply, index))) {
        if (part.type === "text") {
          chunks.push(
            ...textChunks(`text_${index}_${n++}`, reply._tag === "Object" ? [part.text] : splitWords(part.text))
          )
        } else {
          rest.push(part as Response.StreamPartEncoded)
        }
      }
      if (rest.length > 0) chunks.push(Chunk.fromIterable(rest))
      return Stream.fromChunks(...chunks)
    }
  }
}

/**
 * Makes a scripted model service and its recorder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  script: Script
): Effect.Effect<{ readonly model: LanguageModel.Service; readonly recorder: RecorderService }> =>
  Effect.gen(function*() {
    const recorded: Array<Request> = []
    const length = typeof script === "function" ? undefined : script.length
    const next = (options: LanguageModel.ProviderOptions, method: Request["method"]) =>
      Effect.flatMap(
        Effect.zip(FiberRef.get(internal.currentAgent), Effect.serviceOption(RunContext.RunContext)),
        ([agent, run]) =>
          Effect.suspend((): Effect.Effect<readonly [Reply, number]> => {
            const index = recorded.length
            const request = makeRequest(
              options,
              method,
              index,
              agent,
              run._tag === "Some" ? run.value.input : undefined
            )
            recorded.push(request)
            const responder = typeof script === "function" ? script : script[index]
            if (responder === undefined) {
              return Effect.dieMessage(
                `TestModel: the script has no reply for model call #${index + 1} (it has ${length} ${
                  length === 1 ? "reply" : "replies"
                })${agent === undefined ? "" : ` from agent '${agent}'`}; latest user message: ${
                  JSON.stringify(request.lastUserMessage ?? "")
                }`
              )
            }
            const reply = typeof responder === "function" ? responder(request) : responder
            return Effect.map(Effect.isEffect(reply) ? reply : Effect.succeed(reply), (r) => [r, index] as const)
          })
      )
    const model = yield* LanguageModel.make({
      generateText: (options) =>
        Effect.flatMap(next(options, "generateText"), ([reply, index]) => toParts(reply, index)),
      streamText: (options) =>
        Stream.unwrap(Effect.map(next(options, "streamText"), ([reply, index]) => toStream(reply, index)))
    })
    return { model, recorder: { requests: Effect.sync(() => [...recorded]) } }
  })

/**
 * A scripted `LanguageModel` layer, with its `Recorder`. Each build of the
 * layer starts the script from the beginning.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (script: Script): Layer.Layer<LanguageModel.LanguageModel | Recorder> =>
  Layer.effectContext(
    Effect.map(make(script), ({ model, recorder }) =>
      Context.make(LanguageModel.LanguageModel, model).pipe(Context.add(Recorder, recorder)))
  )

/**
 * Renders a prompt as readable text (one line per part), for assertions and
 * debugging.
 *
 * @since 0.1.0
 * @category utils
 */
export const render = (prompt: Prompt.Prompt): string => {
  const lines: Array<string> = []
  for (const message of prompt.content) {
    if (typeof message.content === "string") {
      lines.push(`${message.role}: ${message.content}`)
      continue
    }
    for (const part of message.content) {
      switch (part.type) {
        case "text":
          lines.push(`${message.role}: ${part.text}`)
          break
        case "tool-call":
          lines.push(`${message.role}: call ${part.name}(${contentText(part.params)})`)
          break
        case "tool-result":
          lines.push(
            `${message.role}: ${part.name} ${part.isFailure ? "failed" : "returned"}: ${contentText(part.result)}`
          )
          break
        default:
          lines.push(`${message.role}: [${part.type}]`)
      }
    }
  }
  return lines.join("\n")
}
