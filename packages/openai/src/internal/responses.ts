/**
 * Conversions between `@effect/ai` and the Responses API wire format.
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
  FunctionTool,
  Response as OpenAIResponse,
  ResponseCreateParamsNonStreaming,
  ResponseInputContent,
  ResponseInputItem,
  ResponseStreamEvent,
  ResponseUsage
} from "openai/resources/responses/responses"
import * as Shared from "./shared.js"

const MODULE = "OpenAIResponses"

/** @internal */
export const prepareInput = (
  prompt: Prompt.Prompt
): Effect.Effect<Array<ResponseInputItem>, AiError.MalformedInput> =>
  Effect.gen(function*() {
    const items: Array<ResponseInputItem> = []
    for (const message of prompt.content) {
      switch (message.role) {
        case "system": {
          items.push({ role: "system", content: message.content })
          break
        }
        case "user": {
          const content: Array<ResponseInputContent> = []
          for (const part of message.content) {
            if (part.type === "text") {
              content.push({ type: "input_text", text: part.text })
            } else if (part.mediaType.startsWith("image/")) {
              content.push({ type: "input_image", image_url: Shared.fileUrl(part), detail: "auto" })
            } else if (part.mediaType === "application/pdf") {
              content.push({
                type: "input_file",
                filename: part.fileName ?? "document.pdf",
                file_data: Shared.fileUrl(part)
              })
            } else {
              return yield* Shared.unsupportedFile(MODULE, part)
            }
          }
          items.push({ role: "user", content })
          break
        }
        case "assistant": {
          let text = ""
          const flushText = () => {
            if (text.length > 0) items.push({ role: "assistant", content: text })
            text = ""
          }
          for (const part of message.content) {
            if (part.type === "text") {
              text += part.text
            } else if (part.type === "tool-call" && !part.providerExecuted) {
              flushText()
              items.push({
                type: "function_call",
                call_id: part.id,
                name: part.name,
                arguments: JSON.stringify(part.params ?? {})
              })
            }
          }
          flushText()
          break
        }
        case "tool": {
          for (const part of message.content) {
            items.push({ type: "function_call_output", call_id: part.id, output: Shared.toolResultText(part.result) })
          }
          break
        }
      }
    }
    return items
  })

/** @internal */
export const prepareTools = (tools: ReadonlyArray<Shared.PreparedTool>): Array<FunctionTool> =>
  tools.map((tool) => ({
    type: "function",
    name: tool.name,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    parameters: tool.parameters as Record<string, unknown>,
    strict: tool.strict
  }))

/** @internal */
export const prepareToolChoice = (
  toolChoice: LanguageModel.ToolChoice<string>
): NonNullable<ResponseCreateParamsNonStreaming["tool_choice"]> => {
  if (typeof toolChoice === "string") return toolChoice
  if ("tool" in toolChoice) return { type: "function", name: toolChoice.tool }
  return toolChoice.mode ?? "auto"
}

/** @internal */
export const usage = (usage: ResponseUsage | null | undefined): typeof Response.Usage.Encoded =>
  usage == null
    ? Shared.emptyUsage
    : Shared.makeUsage({
      inputTokens: usage.input_tokens,
      outputTokens: usage.output_tokens,
      totalTokens: usage.total_tokens,
      reasoningTokens: usage.output_tokens_details?.reasoning_tokens,
      cachedInputTokens: usage.input_tokens_details?.cached_tokens
    })

/** @internal */
export const finishReason = (response: OpenAIResponse, hasToolCalls: boolean): Response.FinishReason => {
  switch (response.status) {
    case "incomplete": {
      const reason = response.incomplete_details?.reason
      return reason === "max_output_tokens" ? "length" : reason === "content_filter" ? "content-filter" : "other"
    }
    case "failed":
      return "error"
    case "completed":
    case undefined:
      return hasToolCalls ? "tool-calls" : "stop"
    default:
      return "other"
  }
}

const metadataPart = (response: OpenAIResponse): Response.ResponseMetadataPartEncoded => {
  const timestamp = Shared.timestampFromSeconds(response.created_at)
  return {
    type: "response-metadata",
    ...(response.id ? { id: response.id } : {}),
    ...(response.model ? { modelId: response.model } : {}),
    ...(timestamp !== undefined ? { timestamp } : {})
  }
}

const failure = (method: string, response: OpenAIResponse): AiError.UnknownError =>
  new AiError.UnknownError({
    module: MODULE,
    method,
    description: `The response failed${
      response.error ? `: ${response.error.code}: ${response.error.message}` : ""
    }`
  })

/** @internal */
export const makeResponse = (
  response: OpenAIResponse,
  tools: ReadonlyArray<Shared.PreparedTool>,
  format: Shared.PreparedFormat | undefined
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
  Effect.gen(function*() {
    if (response.status === "failed") return yield* failure("generateText", response)
    const parts: Array<Response.PartEncoded> = [metadataPart(response)]
    let text = ""
    let hasToolCalls = false
    const toolCalls: Array<Response.PartEncoded> = []
    for (const item of response.output ?? []) {
      switch (item.type) {
        case "message": {
          for (const content of item.content) {
            if (content.type === "output_text") {
              text += content.text
            } else if (content.type === "refusal") {
              parts.push({ type: "text", text: content.refusal, metadata: { openai: { refusal: content.refusal } } })
            }
          }
          break
        }
        case "function_call": {
          hasToolCalls = true
          const params = Shared.parseToolParams(tools, item.name, item.arguments)
          toolCalls.push({
            type: "tool-call",
            id: item.call_id,
            name: item.name,
            params,
            ...(item.id ? { metadata: { openai: { itemId: item.id } } } : {})
          })
          break
        }
        case "reasoning": {
          const summary = item.summary.map((s) => s.text).join("\n\n")
          if (summary.length > 0) parts.push({ type: "reasoning", text: summary })
          break
        }
      }
    }
    if (text.length > 0) {
      parts.push({ type: "text", text: format !== undefined ? Shared.finalizeStructuredText(text, format) : text })
    }
    parts.push(...toolCalls)
    parts.push({ type: "finish", reason: finishReason(response, hasToolCalls), usage: usage(response.usage) })
    return parts
  })

interface ActiveToolCall {
  readonly callId: string
  readonly name: string
  readonly itemId: string | undefined
  args: string
}

/**
 * A stateful converter of stream events to stream parts; one per request.
 * @internal
 */
export const makeStreamConverter = (
  tools: ReadonlyArray<Shared.PreparedTool>,
  idGenerator: IdGenerator.Service
) => {
  let finished = false
  let sawToolCalls = false
  const openText = new Set<string>()
  const openReasoning = new Map<string, Array<string>>()
  const active = new Map<number, ActiveToolCall>()

  const toolCallByItem = (outputIndex: number, itemId: string): ActiveToolCall | undefined =>
    active.get(outputIndex) ?? [...active.values()].find((call) => call.itemId === itemId)

  const onChunk = (event: ResponseStreamEvent) =>
    Effect.gen(function*() {
      const parts: Array<Response.StreamPartEncoded> = []
      switch (event.type) {
        case "response.created": {
          parts.push(metadataPart(event.response))
          break
        }
        case "response.output_item.added": {
          const item = event.item
          if (item.type === "message") {
            openText.add(item.id)
            parts.push({ type: "text-start", id: item.id })
          } else if (item.type === "function_call") {
            sawToolCalls = true
            const callId = item.call_id || (yield* idGenerator.generateId())
            active.set(event.output_index, { callId, name: item.name, itemId: item.id, args: item.arguments ?? "" })
            parts.push({ type: "tool-params-start", id: callId, name: item.name })
            if (item.arguments) parts.push({ type: "tool-params-delta", id: callId, delta: item.arguments })
          }
          break
        }
        case "response.output_text.delta":
        case "response.refusal.delta": {
          if (!openText.has(event.item_id)) {
            openText.add(event.item_id)
            parts.push({ type: "text-start", id: event.item_id })
          }
          parts.push({ type: "text-delta", id: event.item_id, delta: event.delta })
          break
        }
        case "response.function_call_arguments.delta": {
          const call = toolCallByItem(event.output_index, event.item_id)
          if (call !== undefined) {
            call.args += event.delta
            parts.push({ type: "tool-params-delta", id: call.callId, delta: event.delta })
          }
          break
        }
        case "response.reasoning_summary_text.delta": {
          const id = `${event.item_id}:${event.summary_index}`
          const open = openReasoning.get(event.item_id) ?? []
          if (!open.includes(id)) {
            open.push(id)
            openReasoning.set(event.item_id, open)
            parts.push({ type: "reasoning-start", id })
          }
          parts.push({ type: "reasoning-delta", id, delta: event.delta })
          break
        }
        case "response.output_item.done": {
          const item = event.item
          if (item.type === "message") {
            if (openText.delete(item.id)) parts.push({ type: "text-end", id: item.id })
          } else if (item.type === "function_call") {
            const call = active.get(event.output_index) ??
              { callId: item.call_id, name: item.name, itemId: item.id, args: item.arguments }
            active.delete(event.output_index)
            const args = typeof item.arguments === "string" && item.arguments.length > 0 ? item.arguments : call.args
            parts.push({ type: "tool-params-end", id: call.callId })
            const params = Shared.parseToolParams(tools, call.name, args)
            parts.push({
              type: "tool-call",
              id: call.callId,
              name: call.name,
              params,
              ...(call.itemId ? { metadata: { openai: { itemId: call.itemId } } } : {})
            })
          } else if (item.type === "reasoning") {
            for (const id of openReasoning.get(item.id) ?? []) parts.push({ type: "reasoning-end", id })
            openReasoning.delete(item.id)
          }
          break
        }
        case "response.completed":
        case "response.incomplete": {
          finished = true
          parts.push(...closeOpen())
          parts.push({
            type: "finish",
            reason: finishReason(event.response, sawToolCalls),
            usage: usage(event.response.usage)
          })
          break
        }
        case "response.failed": {
          return yield* failure("streamText", event.response)
        }
        case "error": {
          return yield* new AiError.UnknownError({
            module: MODULE,
            method: "streamText",
            description: `The API reported an error: ${event.code ? `${event.code}: ` : ""}${event.message}`
          })
        }
      }
      return parts
    })

  const closeOpen = (): Array<Response.StreamPartEncoded> => {
    const parts: Array<Response.StreamPartEncoded> = []
    for (const id of openText) parts.push({ type: "text-end", id })
    openText.clear()
    for (const ids of openReasoning.values()) for (const id of ids) parts.push({ type: "reasoning-end", id })
    openReasoning.clear()
    return parts
  }

  const onEnd = Effect.sync((): Array<Response.StreamPartEncoded> => {
    if (finished) return []
    // the stream ended without `response.completed`
    return [...closeOpen(), { type: "finish", reason: "unknown", usage: Shared.emptyUsage }]
  })

  return { onChunk, onEnd } as const
}
