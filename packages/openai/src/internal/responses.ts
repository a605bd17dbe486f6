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
import * as Schema from "effect/Schema"
import type {
  FunctionTool,
  ResponseCreateParamsNonStreaming,
  ResponseInputContent,
  ResponseInputItem
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
const usage = (u: unknown): typeof Response.Usage.Encoded =>
  Shared.readUsage(u, {
    input: "input_tokens",
    output: "output_tokens",
    inputDetails: "input_tokens_details",
    outputDetails: "output_tokens_details"
  })

// ---- what the provider reads from a reply -------------------------------------

/** The response object; only `output` is required (and only where it is read). */
const WireResponse = Schema.Struct({
  id: Schema.optional(Schema.Unknown),
  model: Schema.optional(Schema.Unknown),
  created_at: Schema.optional(Schema.Unknown),
  status: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.Unknown),
  incomplete_details: Schema.optional(Schema.Unknown),
  usage: Schema.optional(Schema.Unknown),
  output: Schema.optional(Schema.Unknown)
})
type WireResponse = typeof WireResponse.Type

const WireOutput = Schema.Array(Schema.Unknown)

/** A response that is not `failed` must have its `output`. */
const WireComplete = Schema.Struct({ output: WireOutput })

const WireItemType = Schema.Struct({ type: Schema.String })

const WireMessage = Schema.Struct({
  id: Shared.nullish(Schema.String),
  content: Schema.Array(Schema.Unknown)
})
const WireOutputText = Schema.Struct({ text: Schema.String })
const WireRefusal = Schema.Struct({ refusal: Schema.String })

const WireFunctionCall = Schema.Struct({
  id: Shared.nullish(Schema.String),
  call_id: Shared.nullish(Schema.String),
  name: Schema.NonEmptyString,
  arguments: Schema.optional(Schema.Unknown)
})
type WireFunctionCall = typeof WireFunctionCall.Type

const WireReasoning = Schema.Struct({
  id: Shared.nullish(Schema.String),
  summary: Shared.nullish(Schema.Array(Schema.Struct({ text: Schema.String })))
})

/** The output items the provider uses, decoded; other item types are ignored. */
type Item =
  | {
    readonly _tag: "message"
    readonly id: string | undefined
    readonly text: string
    readonly refusals: ReadonlyArray<string>
  }
  | { readonly _tag: "function_call"; readonly call: WireFunctionCall }
  | { readonly _tag: "reasoning"; readonly id: string | undefined; readonly summary: ReadonlyArray<string> }
  | { readonly _tag: "other" }

const decodeItem = (
  site: Shared.Site,
  at: ReadonlyArray<PropertyKey>
) =>
(raw: unknown): Effect.Effect<Item, AiError.MalformedOutput> =>
  Effect.gen(function*() {
    const { type } = yield* Shared.decodeReply(WireItemType, site, at)(raw)
    switch (type) {
      case "message": {
        const message = yield* Shared.decodeReply(WireMessage, site, at)(raw)
        let text = ""
        const refusals: Array<string> = []
        for (const [index, part] of message.content.entries()) {
          const where = [...at, "content", index]
          const content = yield* Shared.decodeReply(WireItemType, site, where)(part)
          if (content.type === "output_text") {
            text += (yield* Shared.decodeReply(WireOutputText, site, where)(part)).text
          } else if (content.type === "refusal") {
            refusals.push((yield* Shared.decodeReply(WireRefusal, site, where)(part)).refusal)
          }
        }
        return { _tag: "message", id: message.id ?? undefined, text, refusals }
      }
      case "function_call":
        return { _tag: "function_call", call: yield* Shared.decodeReply(WireFunctionCall, site, at)(raw) }
      case "reasoning": {
        const reasoning = yield* Shared.decodeReply(WireReasoning, site, at)(raw)
        return {
          _tag: "reasoning",
          id: reasoning.id ?? undefined,
          summary: (reasoning.summary ?? []).map((s) => s.text)
        }
      }
      default:
        return { _tag: "other" }
    }
  })

/** @internal */
const finishReason = (response: WireResponse, hasToolCalls: boolean): Response.FinishReason => {
  switch (response.status) {
    case "incomplete": {
      const reason = Shared.recordField(response.incomplete_details)?.reason
      return reason === "max_output_tokens" ? "length" : reason === "content_filter" ? "content-filter" : "other"
    }
    case "failed":
      return "error"
    case "completed":
    case undefined:
    case null:
      return hasToolCalls ? "tool-calls" : "stop"
    default:
      return "other"
  }
}

const metadataPart = (response: WireResponse): Response.ResponseMetadataPartEncoded =>
  Shared.metadataPart(response.id, response.model, response.created_at)

const failure = (method: string, response: WireResponse): AiError.UnknownError => {
  const error = Shared.recordField(response.error)
  const code = Shared.stringField(error?.code)
  const message = Shared.stringField(error?.message)
  return new AiError.UnknownError({
    module: MODULE,
    method,
    description: `The response failed${
      error === undefined ? "" : `: ${[code, message].filter((s) => s !== undefined).join(": ")}`
    }`
  })
}

const toolCallPart = (
  tools: ReadonlyArray<Shared.PreparedTool>,
  call: WireFunctionCall,
  callId: string
): Response.ToolCallPartEncoded => ({
  type: "tool-call",
  id: callId,
  name: call.name,
  params: Shared.parseToolParams(tools, call.name, call.arguments),
  ...(call.id ? { metadata: { openai: { itemId: call.id } } } : {})
})

/** @internal */
export const makeResponse = (
  result: unknown,
  request: Shared.ResponseRequest
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
  Effect.gen(function*() {
    const site: Shared.Site = { module: MODULE, method: request.method }
    const response = yield* Shared.decodeReply(WireResponse, site)(result)
    if (response.status === "failed") return yield* failure(request.method, response)
    const { output } = yield* Shared.decodeReply(WireComplete, site)(result)
    const parts: Array<Response.PartEncoded> = [metadataPart(response)]
    let text = ""
    let hasToolCalls = false
    const toolCalls: Array<Response.PartEncoded> = []
    for (const [index, raw] of output.entries()) {
      const item = yield* decodeItem(site, ["output", index])(raw)
      switch (item._tag) {
        case "message": {
          text += item.text
          for (const refusal of item.refusals) {
            parts.push({ type: "text", text: refusal, metadata: { openai: { refusal } } })
          }
          break
        }
        case "function_call": {
          hasToolCalls = true
          const callId = item.call.call_id || (yield* request.idGenerator.generateId())
          toolCalls.push(toolCallPart(request.tools, item.call, callId))
          break
        }
        case "reasoning": {
          const summary = item.summary.join("\n\n")
          if (summary.length > 0) parts.push({ type: "reasoning", text: summary })
          break
        }
      }
    }
    if (text.length > 0) {
      const format = request.format
      parts.push({ type: "text", text: format !== undefined ? Shared.finalizeStructuredText(text, format) : text })
    }
    parts.push(...toolCalls)
    parts.push({ type: "finish", reason: finishReason(response, hasToolCalls), usage: usage(response.usage) })
    return parts
  })

// ---- stream events --------------------------------------------------------------

const WireResponseEvent = Schema.Struct({ response: WireResponse })
const WireItemEvent = Schema.Struct({
  output_index: Shared.nullish(Schema.Number),
  item: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
const WireTextDelta = Schema.Struct({ item_id: Schema.String, delta: Schema.String })
const WireArgumentsDelta = Schema.Struct({
  output_index: Shared.nullish(Schema.Number),
  item_id: Shared.nullish(Schema.String),
  delta: Schema.String
})
const WireReasoningDelta = Schema.Struct({ item_id: Schema.String, summary_index: Schema.Number, delta: Schema.String })
const WireErrorEvent = Schema.Struct({
  code: Schema.optional(Schema.Unknown),
  message: Schema.optional(Schema.Unknown)
})

interface ActiveToolCall {
  readonly callId: string
  readonly call: WireFunctionCall
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
  const site: Shared.Site = { module: MODULE, method: "streamText" }
  const decodeEventType = Shared.decodeReply(WireItemType, site)
  const decodeResponseEvent = Shared.decodeReply(WireResponseEvent, site)
  const decodeItemEvent = Shared.decodeReply(WireItemEvent, site)
  let finished = false
  let sawToolCalls = false
  const openText = new Set<string>()
  const openReasoning = new Map<string, Array<string>>()
  const active = new Map<number, ActiveToolCall>()
  /** call ids whose tool-call part was emitted */
  const emitted = new Set<string>()

  const toolCallByItem = (outputIndex: number | null | undefined, itemId: string | null | undefined) =>
    (typeof outputIndex === "number" ? active.get(outputIndex) : undefined) ??
      [...active.values()].find((call) => itemId != null && call.call.id === itemId)

  const argumentsText = (args: unknown): string =>
    typeof args === "string" ? args : args === undefined || args === null ? "" : JSON.stringify(args) ?? ""

  const emitCall = (parts: Array<Response.StreamPartEncoded>, call: WireFunctionCall, callId: string) => {
    sawToolCalls = true
    emitted.add(callId)
    parts.push({ type: "tool-params-end", id: callId })
    parts.push(toolCallPart(tools, call, callId))
  }

  const onChunk = (event: unknown) =>
    Effect.gen(function*() {
      const parts: Array<Response.StreamPartEncoded> = []
      const { type } = yield* decodeEventType(event)
      switch (type) {
        case "response.created": {
          parts.push(metadataPart((yield* decodeResponseEvent(event)).response))
          break
        }
        case "response.output_item.added": {
          const added = yield* decodeItemEvent(event)
          const item = yield* decodeItem(site, ["item"])(added.item)
          if (item._tag === "message") {
            const id = item.id ?? (yield* idGenerator.generateId())
            openText.add(id)
            parts.push({ type: "text-start", id })
          } else if (item._tag === "function_call") {
            const callId = item.call.call_id || (yield* idGenerator.generateId())
            const args = argumentsText(item.call.arguments)
            active.set(added.output_index ?? active.size, { callId, call: item.call, args })
            parts.push({ type: "tool-params-start", id: callId, name: item.call.name })
            if (args.length > 0) parts.push({ type: "tool-params-delta", id: callId, delta: args })
          }
          break
        }
        case "response.output_text.delta":
        case "response.refusal.delta": {
          const delta = yield* Shared.decodeReply(WireTextDelta, site)(event)
          if (!openText.has(delta.item_id)) {
            openText.add(delta.item_id)
            parts.push({ type: "text-start", id: delta.item_id })
          }
          parts.push({ type: "text-delta", id: delta.item_id, delta: delta.delta })
          break
        }
        case "response.function_call_arguments.delta": {
          const delta = yield* Shared.decodeReply(WireArgumentsDelta, site)(event)
          const call = toolCallByItem(delta.output_index, delta.item_id)
          if (call !== undefined) {
            call.args += delta.delta
            parts.push({ type: "tool-params-delta", id: call.callId, delta: delta.delta })
          }
          break
        }
        case "response.reasoning_summary_text.delta": {
          const delta = yield* Shared.decodeReply(WireReasoningDelta, site)(event)
          const id = `${delta.item_id}:${delta.summary_index}`
          const open = openReasoning.get(delta.item_id) ?? []
          if (!open.includes(id)) {
            open.push(id)
            openReasoning.set(delta.item_id, open)
            parts.push({ type: "reasoning-start", id })
          }
          parts.push({ type: "reasoning-delta", id, delta: delta.delta })
          break
        }
        case "response.output_item.done": {
          const done = yield* decodeItemEvent(event)
          const item = yield* decodeItem(site, ["item"])(done.item)
          if (item._tag === "message") {
            if (item.id !== undefined && openText.delete(item.id)) parts.push({ type: "text-end", id: item.id })
          } else if (item._tag === "function_call") {
            const index = done.output_index ?? [...active.entries()].find(([, c]) => c.call.id === item.call.id)?.[0]
            const streamed = index === undefined ? undefined : active.get(index)
            if (index !== undefined) active.delete(index)
            const callId = streamed?.callId ?? (item.call.call_id || (yield* idGenerator.generateId()))
            if (streamed === undefined) parts.push({ type: "tool-params-start", id: callId, name: item.call.name })
            // the complete item's arguments win over the streamed pieces
            const complete = item.call.arguments
            const args = complete === undefined || complete === null || complete === ""
              ? (streamed?.args ?? complete)
              : complete
            emitCall(parts, { ...item.call, arguments: args }, callId)
          } else if (item._tag === "reasoning" && item.id !== undefined) {
            for (const id of openReasoning.get(item.id) ?? []) parts.push({ type: "reasoning-end", id })
            openReasoning.delete(item.id)
          }
          break
        }
        case "response.completed":
        case "response.incomplete": {
          const { response } = yield* decodeResponseEvent(event)
          finished = true
          parts.push(...closeOpen())
          // function calls the server did not stream (some servers cannot)
          if (response.output !== undefined && response.output !== null) {
            const output = yield* Shared.decodeReply(WireOutput, site, ["response", "output"])(response.output)
            for (const [index, raw] of output.entries()) {
              const item = yield* decodeItem(site, ["response", "output", index])(raw)
              if (item._tag !== "function_call" || (item.call.call_id && emitted.has(item.call.call_id))) continue
              const callId = item.call.call_id || (yield* idGenerator.generateId())
              parts.push({ type: "tool-params-start", id: callId, name: item.call.name })
              emitCall(parts, item.call, callId)
            }
          }
          parts.push({
            type: "finish",
            reason: finishReason(response, sawToolCalls),
            usage: usage(response.usage)
          })
          break
        }
        case "response.failed": {
          return yield* failure("streamText", (yield* decodeResponseEvent(event)).response)
        }
        case "error": {
          const error = yield* Shared.decodeReply(WireErrorEvent, site)(event)
          const code = Shared.stringField(error.code)
          return yield* new AiError.UnknownError({
            module: MODULE,
            method: "streamText",
            description: `The API reported an error: ${code !== undefined ? `${code}: ` : ""}${
              Shared.stringField(error.message) ?? "(no message)"
            }`
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
