/**
 * Conversions between `@effect/ai` and the Chat Completions wire format.
 *
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import type * as IdGenerator from "@effect/ai/IdGenerator"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption
} from "openai/resources/chat/completions"
import type { CompletionUsage } from "openai/resources/completions"
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
            messages.push({ role: "user", content: message.content.map((part) => (part as Prompt.TextPart).text).join("") })
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
export const finishReason = (
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
export const usage = (usage: CompletionUsage | null | undefined): typeof Response.Usage.Encoded =>
  usage == null
    ? Shared.emptyUsage
    : Shared.makeUsage({
      inputTokens: usage.prompt_tokens,
      outputTokens: usage.completion_tokens,
      totalTokens: usage.total_tokens,
      reasoningTokens: usage.completion_tokens_details?.reasoning_tokens,
      cachedInputTokens: usage.prompt_tokens_details?.cached_tokens
    })

const metadataPart = (
  id: string | undefined,
  model: string | undefined,
  created: number | undefined
): Response.ResponseMetadataPartEncoded => {
  const timestamp = Shared.timestampFromSeconds(created)
  return {
    type: "response-metadata",
    ...(id ? { id } : {}),
    ...(model ? { modelId: model } : {}),
    ...(timestamp !== undefined ? { timestamp } : {})
  }
}

/** @internal */
export const makeResponse = (
  response: ChatCompletion,
  tools: ReadonlyArray<Shared.PreparedTool>,
  format: Shared.PreparedFormat | undefined
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
  Effect.gen(function*() {
    const parts: Array<Response.PartEncoded> = [metadataPart(response.id, response.model, response.created)]
    const choice = response.choices?.[0]
    if (choice === undefined) {
      return yield* new AiError.MalformedOutput({
        module: MODULE,
        method: "generateText",
        description: "The response contains no choices"
      })
    }
    const message = choice.message
    if (typeof message.content === "string" && message.content.length > 0) {
      const text = format !== undefined ? Shared.finalizeStructuredText(message.content, format) : message.content
      parts.push({ type: "text", text })
    }
    if (typeof message.refusal === "string" && message.refusal.length > 0) {
      parts.push({ type: "text", text: message.refusal, metadata: { openai: { refusal: message.refusal } } })
    }
    let hasToolCalls = false
    for (const toolCall of message.tool_calls ?? []) {
      if (toolCall.type !== "function") continue
      hasToolCalls = true
      const params = Shared.parseToolParams(tools, toolCall.function.name, toolCall.function.arguments)
      parts.push({ type: "tool-call", id: toolCall.id, name: toolCall.function.name, params })
    }
    parts.push({
      type: "finish",
      reason: finishReason(choice.finish_reason, hasToolCalls),
      usage: usage(response.usage)
    })
    return parts
  })

interface ActiveToolCall {
  id: string
  name: string
  args: string
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
  let metadataSent = false
  let textId: string | undefined
  let reason: string | null | undefined
  let lastUsage: CompletionUsage | null | undefined
  let sawToolCalls = false
  let flushed = false
  const active = new Map<number, ActiveToolCall>()

  const flush = (parts: Array<Response.StreamPartEncoded>) =>
    Effect.gen(function*() {
      if (flushed) return
      flushed = true
      if (textId !== undefined) {
        parts.push({ type: "text-end", id: textId })
      }
      const calls = [...active.entries()].sort(([a], [b]) => a - b).map(([, call]) => call)
      for (const call of calls) {
        if (!call.started) {
          call.started = true
          parts.push({ type: "tool-params-start", id: call.id, name: call.name })
          if (call.args.length > 0) parts.push({ type: "tool-params-delta", id: call.id, delta: call.args })
        }
        parts.push({ type: "tool-params-end", id: call.id })
        const params = Shared.parseToolParams(tools, call.name, call.args)
        parts.push({ type: "tool-call", id: call.id, name: call.name, params })
      }
    })

  const onChunk = (chunk: ChatCompletionChunk) =>
    Effect.gen(function*() {
      const parts: Array<Response.StreamPartEncoded> = []
      if (!metadataSent) {
        metadataSent = true
        parts.push(metadataPart(chunk.id, chunk.model, chunk.created))
      }
      if (chunk.usage != null) lastUsage = chunk.usage
      const choice = chunk.choices?.[0]
      if (choice === undefined) return parts
      const delta = choice.delta ?? {}
      for (const text of [delta.content, delta.refusal]) {
        if (typeof text === "string" && text.length > 0 && !flushed) {
          if (textId === undefined) {
            textId = chunk.id || (yield* idGenerator.generateId())
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
          : [...active.entries()].find(([, call]) => call.id === toolDelta.id)?.[0] ?? active.size
        let call = active.get(key)
        if (call === undefined) {
          call = { id: toolDelta.id || (yield* idGenerator.generateId()), name: "", args: "", started: false }
          active.set(key, call)
        }
        if (call.name === "" && toolDelta.function?.name) call.name = toolDelta.function.name
        const argsDelta = toolDelta.function?.arguments ?? ""
        if (!call.started && call.name !== "") {
          call.started = true
          parts.push({ type: "tool-params-start", id: call.id, name: call.name })
          // arguments received before the name, if any
          if (call.args.length > 0) parts.push({ type: "tool-params-delta", id: call.id, delta: call.args })
        }
        if (argsDelta.length > 0) {
          call.args += argsDelta
          if (call.started) parts.push({ type: "tool-params-delta", id: call.id, delta: argsDelta })
        }
      }
      if (choice.finish_reason != null) {
        reason = choice.finish_reason
        yield* flush(parts)
      }
      return parts
    })

  const onEnd = Effect.gen(function*() {
    const parts: Array<Response.StreamPartEncoded> = []
    yield* flush(parts)
    parts.push({ type: "finish", reason: finishReason(reason, sawToolCalls), usage: usage(lastUsage) })
    return parts
  })

  return { onChunk, onEnd } as const
}
