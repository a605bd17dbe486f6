/**
 * Conversions between `@effect/ai` and the Chat Completions wire format.
 *
 * @internal
 */
import type * as AiError from "@effect/ai/AiError"
import type * as IdGenerator from "@effect/ai/IdGenerator"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type {
  ChatCompletionContentPart,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption
} from "openai/resources/chat/completions"
import * as Shared from "./shared.js"

const MODULE = "OpenAIChat"

/** @internal */
export const prepareMessages = (
  prompt: Prompt.Prompt
): Effect.Effect<Array<ChatCompletionMessageParam>, AiError.MalformedInput> =>
  Effect.gen(function*() {
    const messages: Array<ChatCompletionMessageParam> = []
    for (const message of prompt.content) {
      switch (message.role) {
        case "system": {
          messages.push({ role: "system", content: message.content })
          break
        }
        case "user": {
          const onlyText = message.content.every((part) => part.type === "text")
          if (onlyText) {
            messages.push({
              role: "user",
              content: message.content.map((part) => (part as Prompt.TextPart).text).join("")
            })
            break
          }
          const content: Array<ChatCompletionContentPart> = []
          for (const part of message.content) {
            if (part.type === "text") {
              content.push({ type: "text", text: part.text })
            } else if (part.mediaType.startsWith("image/")) {
              content.push({ type: "image_url", image_url: { url: Shared.fileUrl(part) } })
            } else if (part.mediaType === "application/pdf") {
              content.push({
                type: "file",
                file: { filename: part.fileName ?? "document.pdf", file_data: Shared.fileUrl(part) }
              })
            } else {
              return yield* Shared.unsupportedFile(MODULE, part)
            }
          }
          messages.push({ role: "user", content })
          break
        }
        case "assistant": {
          let text = ""
          const toolCalls: Array<ChatCompletionMessageFunctionToolCall> = []
          for (const part of message.content) {
            if (part.type === "text") {
              text += part.text
            } else if (part.type === "tool-call" && !part.providerExecuted) {
              toolCalls.push({
                id: part.id,
                type: "function",
                function: { name: part.name, arguments: JSON.stringify(part.params ?? {}) }
              })
            }
          }
          if (text.length === 0 && toolCalls.length === 0) break
          messages.push({
            role: "assistant",
            content: text.length > 0 ? text : null,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
          })
          break
        }
        case "tool": {
          for (const part of message.content) {
            messages.push({ role: "tool", tool_call_id: part.id, content: Shared.toolResultText(part.result) })
          }
          break
        }
      }
    }
    return messages
  })

/** @internal */
export const prepareTools = (
  tools: ReadonlyArray<Shared.PreparedTool>
): Array<ChatCompletionTool> =>
  tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      parameters: tool.parameters as Record<string, unknown>,
      strict: tool.strict
    }
  }))

/** @internal */
export const prepareToolChoice = (
  toolChoice: LanguageModel.ToolChoice<string>
): ChatCompletionToolChoiceOption => {
  if (typeof toolChoice === "string") return toolChoice
  if ("tool" in toolChoice) return { type: "function", function: { name: toolChoice.tool } }
  return toolChoice.mode ?? "auto"
}

/** @internal */
const finishReason = (
  reason: string | null | undefined,
  hasToolCalls: boolean
): Response.FinishReason => {
  switch (reason) {
    case "stop":
      return hasToolCalls ? "tool-calls" : "stop"
    case "length":
      return "length"
    case "content_filter":
      return "content-filter"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case null:
    case undefined:
      return hasToolCalls ? "tool-calls" : "unknown"
    default:
      return "other"
  }
}

/** @internal */
const usage = (u: unknown): typeof Response.Usage.Encoded =>
  Shared.readUsage(u, {
    input: "prompt_tokens",
    output: "completion_tokens",
    inputDetails: "prompt_tokens_details",
    outputDetails: "completion_tokens_details"
  })

// ---- what the provider reads from a reply -------------------------------------

const WireCompletion = Schema.Struct({
  id: Schema.optional(Schema.Unknown),
  model: Schema.optional(Schema.Unknown),
  created: Schema.optional(Schema.Unknown),
  usage: Schema.optional(Schema.Unknown),
  choices: Schema.Array(Schema.Unknown)
})

const WireToolCall = Schema.Struct({
  id: Shared.nullish(Schema.String),
  function: Schema.Struct({ name: Schema.NonEmptyString, arguments: Schema.optional(Schema.Unknown) })
})

const WireChoice = Schema.Struct({
  message: Schema.Struct({
    content: Shared.nullish(Shared.WireContent),
    refusal: Shared.nullish(Schema.String),
    tool_calls: Shared.nullish(Schema.Array(Schema.Unknown))
  }),
  finish_reason: Schema.optional(Schema.Unknown)
})

const WireChunk = Schema.Struct({
  id: Schema.optional(Schema.Unknown),
  model: Schema.optional(Schema.Unknown),
  created: Schema.optional(Schema.Unknown),
  usage: Schema.optional(Schema.Unknown),
  choices: Shared.nullish(Schema.Array(Schema.Unknown))
})

const WireChunkChoice = Schema.Struct({
  delta: Shared.nullish(Schema.Struct({
    content: Shared.nullish(Shared.WireContent),
    refusal: Shared.nullish(Schema.String),
    tool_calls: Shared.nullish(Schema.Array(Schema.Struct({
      index: Shared.nullish(Schema.Number),
      id: Shared.nullish(Schema.String),
      function: Shared.nullish(Schema.Struct({
        name: Shared.nullish(Schema.String),
        arguments: Schema.optional(Schema.Unknown)
      }))
    })))
  })),
  finish_reason: Schema.optional(Schema.Unknown)
})

/** A tool call of a type other than `function` (e.g. `custom`) is not ours to run. */
const isFunctionCall = (u: unknown): boolean => {
  const type = Shared.recordField(u)?.type
  return type === undefined || type === null || type === "function"
}

/** @internal */
export const makeResponse = (
  result: unknown,
  request: Shared.ResponseRequest
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
  Effect.gen(function*() {
    const site: Shared.Site = { module: MODULE, method: request.method }
    const response = yield* Shared.decodeReply(WireCompletion, site)(result)
    const parts: Array<Response.PartEncoded> = [Shared.metadataPart(response.id, response.model, response.created)]
    if (response.choices.length === 0) {
      return yield* Shared.malformedOutput(site, "The response contains no choices")
    }
    const choice = yield* Shared.decodeReply(WireChoice, site, ["choices", 0])(response.choices[0])
    const message = choice.message
    const content = Shared.contentText(message.content)
    if (content.length > 0) {
      const text = request.format !== undefined ? Shared.finalizeStructuredText(content, request.format) : content
      parts.push({ type: "text", text })
    }
    if (typeof message.refusal === "string" && message.refusal.length > 0) {
      parts.push({ type: "text", text: message.refusal, metadata: { openai: { refusal: message.refusal } } })
    }
    let hasToolCalls = false
    for (const [index, raw] of (message.tool_calls ?? []).entries()) {
      if (!isFunctionCall(raw)) continue
      const toolCall = yield* Shared.decodeReply(WireToolCall, site, ["choices", 0, "message", "tool_calls", index])(
        raw
      )
      hasToolCalls = true
      const name = toolCall.function.name
      const params = Shared.parseToolParams(request.tools, name, toolCall.function.arguments)
      const id = toolCall.id || (yield* request.idGenerator.generateId())
      parts.push({ type: "tool-call", id, name, params })
    }
    parts.push({
      type: "finish",
      reason: finishReason(Shared.stringField(choice.finish_reason), hasToolCalls),
      usage: usage(response.usage)
    })
    return parts
  })

interface ActiveToolCall {
  readonly index: number
  id: string
  name: string
  /** the streamed argument text */
  args: string
  /** arguments streamed as a JSON value instead of text (some servers) */
  value: unknown
  started: boolean
}

/**
 * A stateful converter of chunks to stream parts; one per request.
 * @internal
 */
export const makeStreamConverter = (
  tools: ReadonlyArray<Shared.PreparedTool>,
  idGenerator: IdGenerator.Service
) => {
  const site: Shared.Site = { module: MODULE, method: "streamText" }
  const decodeChunk = Shared.decodeReply(WireChunk, site)
  const decodeChoice = Shared.decodeReply(WireChunkChoice, site, ["choices", 0])
  let metadataSent = false
  let textId: string | undefined
  let reason: string | undefined
  let lastUsage: unknown
  let sawToolCalls = false
  let flushed = false
  const active = new Map<number, ActiveToolCall>()

  const argumentsText = (call: ActiveToolCall): string =>
    call.value === undefined ? call.args : JSON.stringify(call.value) ?? ""

  const flush = (parts: Array<Response.StreamPartEncoded>) =>
    Effect.gen(function*() {
      if (flushed) return
      flushed = true
      if (textId !== undefined) {
        parts.push({ type: "text-end", id: textId })
      }
      const calls = [...active.values()].sort((a, b) => a.index - b.index)
      for (const call of calls) {
        if (call.name === "") {
          return yield* Shared.malformedOutput(
            site,
            `The streamed tool call at index ${call.index} (id ${call.id}) never received a function name`
          )
        }
        if (!call.started) {
          call.started = true
          parts.push({ type: "tool-params-start", id: call.id, name: call.name })
          const text = argumentsText(call)
          if (text.length > 0) parts.push({ type: "tool-params-delta", id: call.id, delta: text })
        }
        parts.push({ type: "tool-params-end", id: call.id })
        const params = Shared.parseToolParams(tools, call.name, call.value === undefined ? call.args : call.value)
        parts.push({ type: "tool-call", id: call.id, name: call.name, params })
      }
    })

  const onChunk = (raw: unknown) =>
    Effect.gen(function*() {
      const chunk = yield* decodeChunk(raw)
      const parts: Array<Response.StreamPartEncoded> = []
      if (!metadataSent) {
        metadataSent = true
        parts.push(Shared.metadataPart(chunk.id, chunk.model, chunk.created))
      }
      if (chunk.usage != null) lastUsage = chunk.usage
      const first = chunk.choices?.[0]
      if (first === undefined) return parts
      const choice = yield* decodeChoice(first)
      const delta = choice.delta ?? {}
      for (const text of [Shared.contentText(delta.content), delta.refusal]) {
        if (typeof text === "string" && text.length > 0 && !flushed) {
          if (textId === undefined) {
            textId = Shared.stringField(chunk.id) ?? (yield* idGenerator.generateId())
            parts.push({ type: "text-start", id: textId })
          }
          parts.push({ type: "text-delta", id: textId, delta: text })
        }
      }
      for (const toolDelta of delta.tool_calls ?? []) {
        if (flushed) break
        sawToolCalls = true
        const key = typeof toolDelta.index === "number"
          ? toolDelta.index
          : [...active.values()].find((call) => call.id === toolDelta.id)?.index ?? active.size
        let call = active.get(key)
        if (call === undefined) {
          call = {
            index: key,
            id: toolDelta.id || (yield* idGenerator.generateId()),
            name: "",
            args: "",
            value: undefined,
            started: false
          }
          active.set(key, call)
        }
        if (call.name === "" && toolDelta.function?.name) call.name = toolDelta.function.name
        if (!call.started && call.name !== "") {
          call.started = true
          parts.push({ type: "tool-params-start", id: call.id, name: call.name })
          // arguments received before the name, if any
          const text = argumentsText(call)
          if (text.length > 0) parts.push({ type: "tool-params-delta", id: call.id, delta: text })
        }
        const argsDelta = toolDelta.function?.arguments
        if (typeof argsDelta === "string") {
          if (argsDelta.length > 0) {
            call.args += argsDelta
            if (call.started) parts.push({ type: "tool-params-delta", id: call.id, delta: argsDelta })
          }
        } else if (argsDelta !== undefined && argsDelta !== null) {
          call.value = argsDelta
          if (call.started) parts.push({ type: "tool-params-delta", id: call.id, delta: argumentsText(call) })
        }
      }
      const finish = Shared.stringField(choice.finish_reason)
      if (finish !== undefined) {
        reason = finish
        yield* flush(parts)
      }
      return parts
    })

  const onEnd = Effect.gen(function*() {
    const parts: Array<Response.StreamPartEncoded> = []
    yield* flush(parts)
    if (reason === "tool_calls" && !sawToolCalls) {
      return yield* Shared.malformedOutput(
        site,
        "The streamed reply finished with 'tool_calls' but contained no tool call. A server that cannot stream " +
          "tool calls drops them: configure the model with `stream: false`."
      )
    }
    parts.push({ type: "finish", reason: finishReason(reason, sawToolCalls), usage: usage(lastUsage) })
    return parts
  })

  return { onChunk, onEnd } as const
}
