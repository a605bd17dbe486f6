/**
 * Helpers of the agent loop: prompts, response parts, lenient request tools,
 * tool outcomes and error texts.
 *
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { contentText } from "../StepOutput.js"

/**
 * The name of the agent whose loop is running in this fiber (read by
 * `TestModel` to tell scripted replies apart).
 *
 * @internal
 */
export const currentAgent: FiberRef.FiberRef<string | undefined> = FiberRef.unsafeMake<string | undefined>(undefined)

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
 * A tool the loop can execute: its declaration (sent to the model) and how to
 * run a call of it. `run` never fails: failures are outcomes for the model.
 *
 * @internal
 */
export interface ToolEntry {
  readonly tool: Tool.Any
  readonly run: (params: unknown) => Effect.Effect<ToolOutcome, never, any>
}

/**
 * One tool call requested by the model.
 *
 * @internal
 */
export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly params: unknown
  readonly providerExecuted: boolean
  readonly providerName: string | undefined
}

/**
 * What one model turn produced.
 *
 * @internal
 */
export interface Turn {
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  /** results of tools the provider executed itself */
  readonly providerResults: ReadonlyArray<Prompt.ToolResultPart>
}

/**
 * Accumulates the parts of one model response (complete parts from
 * `generateText`, stream parts from `streamText`, or the raw encoded parts
 * recovered from a response that named an unknown tool).
 *
 * @internal
 */
export class TurnCollector {
  private text = ""
  private readonly toolCalls: Array<ToolCall> = []
  private readonly providerResults: Array<Prompt.ToolResultPart> = []
  /** the first `error` stream part, if any */
  error: { readonly error: unknown } | undefined = undefined

  /** Adds a part; returns the text delta to publish, if the part is one. */
  add(part: unknown): string | undefined {
    if (!Predicate.isRecord(part)) return undefined
    switch (part.type) {
      case "text": {
        if (typeof part.text === "string") this.text += part.text
        return undefined
      }
      case "text-delta": {
        if (typeof part.delta !== "string" || part.delta.length === 0) return undefined
        this.text += part.delta
        return part.delta
      }
      case "tool-call": {
        this.toolCalls.push({
          id: String(part.id),
          name: String(part.name),
          params: part.params,
          providerExecuted: part.providerExecuted === true,
          providerName: typeof part.providerName === "string" ? part.providerName : undefined
        })
        return undefined
      }
      case "tool-result": {
        if (part.providerExecuted === true) {
          this.providerResults.push(Prompt.makePart("tool-result", {
            id: String(part.id),
            name: typeof part.providerName === "string" ? part.providerName : String(part.name),
            isFailure: part.isFailure === true,
            result: "encodedResult" in part ? part.encodedResult : part.result,
            providerExecuted: true
          }))
        }
        return undefined
      }
      case "error": {
        if (this.error === undefined) this.error = { error: part.error }
        return undefined
      }
      default:
        return undefined
    }
  }

  get turn(): Turn {
    return { text: this.text, toolCalls: this.toolCalls, providerResults: this.providerResults }
  }
}

/**
 * The raw (encoded) parts of a model response that `LanguageModel` could not
 * decode, when the failure is a Schema decoding failure of the response. The
 * response schema only admits calls of the request's tools, so a call of an
 * unknown tool fails the whole response; the parts are recovered from the
 * parse error (whose `actual` is the response array, or the stream chunk) so
 * the loop can answer the unknown call with an error result instead.
 *
 * @internal
 */
export const recoverRawParts = (error: unknown): ReadonlyArray<unknown> | undefined => {
  if (!AiError.isAiError(error) || error._tag !== "MalformedOutput") return undefined
  const cause = error.cause
  if (!ParseResult.isParseError(cause)) return undefined
  const actual: unknown = (cause.issue as { readonly actual?: unknown }).actual
  if (Array.isArray(actual)) return actual
  if (Chunk.isChunk(actual)) return Chunk.toReadonlyArray(actual)
  return undefined
}

/**
 * Whether the raw parts call a tool that the request did not declare.
 *
 * @internal
 */
export const callsUnknownTool = (parts: ReadonlyArray<unknown>, known: ReadonlySet<string>): boolean =>
  parts.some((part) =>
    Predicate.isRecord(part) && part.type === "tool-call" && part.providerExecuted !== true &&
    !known.has(String(part.name))
  )

const lenientTools = new WeakMap<Tool.Any, Tool.Any>()

/**
 * The tool as sent in model requests: the same name, description and JSON
 * Schema, but parameters that decode anything. `LanguageModel` decodes tool
 * call parameters while decoding the response, so with the tool's own schema
 * a call with bad arguments would fail the whole response; with this copy the
 * loop decodes the arguments itself and answers bad ones with an error result.
 *
 * @internal
 */
export const lenientTool = (tool: Tool.Any): Tool.Any => {
  if (Tool.isProviderDefined(tool)) return tool
  const cached = lenientTools.get(tool)
  if (cached !== undefined) return cached
  const ast = tool.parametersSchema.ast
  const description = tool.description ?? Tool.getDescriptionFromSchemaAst(ast)
  const parameters = Schema.Unknown.annotations({
    jsonSchema: Tool.getJsonSchemaFromSchemaAst(ast),
    ...(description === undefined ? {} : { description })
  })
  const lenient = (tool as unknown as {
    readonly setParameters: (schema: Schema.Schema<unknown>) => Tool.Any
  }).setParameters(parameters)
  lenientTools.set(tool, lenient)
  return lenient
}

/**
 * A readable text for any error value: its own `message`, unless that is the
 * field dump a `Schema.TaggedError` without a message makes (`@effect/ai`'s
 * `MalformedOutput`, `MalformedInput`), which becomes
 * `module.method: description` (or the cause's text when there is no
 * description).
 *
 * @internal
 */
export const errorText = (error: unknown): string => {
  if (ParseResult.isParseError(error)) return ParseResult.TreeFormatter.formatErrorSync(error)
  if (Predicate.isRecord(error) || error instanceof Error) {
    const record = error as Record<string, unknown>
    const message = typeof record.message === "string" ? record.message.trim() : ""
    // a tagged error without its own message renders its fields as "{ ... }"
    const generated = typeof record._tag === "string" && message.startsWith("{")
    if (message.length > 0 && !generated) return message
    const where = typeof record.module === "string" && typeof record.method === "string"
      ? `${record.module}.${record.method}: `
      : ""
    if (typeof record.description === "string" && record.description.length > 0) {
      return `${where}${record.description}`
    }
    if (where.length > 0 && record.cause !== undefined && record.cause !== error) {
      return `${where}${errorText(record.cause)}`
    }
    if (typeof record._tag === "string") {
      const fields = Object.fromEntries(
        Object.entries(record).filter(([key, value]) => key !== "_tag" && key !== "cause" && value !== undefined)
      )
      return Object.keys(fields).length === 0 ? record._tag : `${record._tag} ${safeJson(fields)}`
    }
  }
  if (typeof error === "string") return error
  return safeJson(error)
}

const safeJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * Runs a call of a tool from a toolkit: decodes the arguments with the tool's
 * parameters Schema (bad arguments become an error result), then runs the
 * handler through the toolkit; a failing handler becomes an error result
 * too. Defects and interruptions propagate.
 *
 * @internal
 */
export const runToolkitTool = (
  handle: (name: string, params: unknown) => Effect.Effect<{ readonly encodedResult: unknown; readonly isFailure: boolean }, unknown, unknown>,
  tool: Tool.Any
) =>
(params: unknown): Effect.Effect<ToolOutcome, never, unknown> =>
  Schema.decodeUnknown(tool.parametersSchema as Schema.Schema<unknown, unknown, unknown>)(params).pipe(
    Effect.matchEffect({
      onFailure: (error) =>
        Effect.succeed<ToolOutcome>({
          isFailure: true,
          result: `Invalid arguments for tool '${tool.name}': ${errorText(error)}`
        }),
      onSuccess: () =>
        handle(tool.name, params).pipe(
          Effect.map((r): ToolOutcome => ({ result: r.encodedResult, isFailure: r.isFailure })),
          Effect.catchAll((error) =>
            Effect.succeed<ToolOutcome>({
              isFailure: true,
              result: AiError.isAiError(error) && error._tag === "MalformedInput"
                ? `Tool '${tool.name}' returned an invalid result: ${errorText(error.cause ?? error)}`
                : `Tool '${tool.name}' failed: ${errorText(error)}`
            })
          )
        )
    })
  )

/**
 * The error result of a call to a tool the agent does not have.
 *
 * @internal
 */
export const unknownToolOutcome = (name: string, known: ReadonlyArray<string>): ToolOutcome => ({
  isFailure: true,
  result: known.length === 0
    ? `Unknown tool '${name}': no tools are available.`
    : `Unknown tool '${name}'. Available tools: ${known.join(", ")}.`
})

/** @internal */
export const systemMessage = (text: string): Prompt.Message => Prompt.makeMessage("system", { content: text })

/** @internal */
export const userMessage = (text: string): Prompt.Message =>
  Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text })] })

/** @internal */
export const assistantMessage = (turn: Turn): Prompt.Message | undefined => {
  const content: Array<Prompt.AssistantMessagePart> = []
  if (turn.text.length > 0) content.push(Prompt.makePart("text", { text: turn.text }))
  for (const call of turn.toolCalls) {
    content.push(Prompt.makePart("tool-call", {
      id: call.id,
      name: call.providerName ?? call.name,
      params: call.params,
      providerExecuted: call.providerExecuted
    }))
  }
  content.push(...turn.providerResults)
  return content.length === 0 ? undefined : Prompt.makeMessage("assistant", { content })
}

/** @internal */
export const toolMessage = (results: ReadonlyArray<Prompt.ToolResultPart>): Prompt.Message =>
  Prompt.makeMessage("tool", { content: results })

/**
 * The messages an agent starts from: its system prompt (when there is one),
 * the earlier exchanges of the conversation (user input, assistant output),
 * then the message: a `Prompt` as it is, a string as a user message, any
 * other value as JSON text.
 *
 * @internal
 */
export const initialMessages = (
  system: string,
  history: ReadonlyArray<{ readonly input: unknown; readonly output: unknown }>,
  message: unknown
): Array<Prompt.Message> => {
  const out: Array<Prompt.Message> = []
  if (system.length > 0) out.push(systemMessage(system))
  for (const turn of history) {
    out.push(userMessage(contentText(turn.input)))
    const reply = assistantMessage({ text: contentText(turn.output), toolCalls: [], providerResults: [] })
    if (reply !== undefined) out.push(reply)
  }
  if (Prompt.isPrompt(message)) out.push(...message.content)
  else out.push(userMessage(contentText(message)))
  return out
}

/**
 * The object name used for structured output requests (the library's own
 * rule, plus the AST identifier, falling back to the agent's name).
 *
 * @internal
 */
export const objectName = (schema: Schema.Schema.Any, agentName: string): string | undefined => {
  if ("_tag" in schema || "identifier" in schema) return undefined
  const id = SchemaAST.getIdentifierAnnotation(schema.ast)
  if (id._tag === "Some") return id.value
  const cleaned = agentName.replace(/[^a-zA-Z0-9_-]+/g, "_").replace(/^_+|_+$/g, "")
  return cleaned.length === 0 ? undefined : cleaned
}

/**
 * Whether a failure of `LanguageModel.generateObject` is about the reply
 * itself (no text, text that is not JSON, JSON that does not fit the
 * schema), as opposed to a transport or provider error.
 *
 * @internal
 */
export const isStructuredReplyFailure = (error: unknown): error is AiError.MalformedOutput =>
  AiError.isAiError(error) && error._tag === "MalformedOutput" && error.module === "LanguageModel" &&
  error.method === "generateObject"

/**
 * The reply text of a failed structured output, recovered from the parse
 * error (its `actual` is the JSON text).
 *
 * @internal
 */
export const structuredReplyText = (error: AiError.MalformedOutput): string | undefined => {
  if (!ParseResult.isParseError(error.cause)) return undefined
  const actual: unknown = (error.cause.issue as { readonly actual?: unknown }).actual
  return typeof actual === "string" ? actual : undefined
}

/**
 * What went wrong with a structured reply, for the repair message and the
 * final error: "not JSON", or the Schema's decode error on the parsed value.
 *
 * @internal
 */
export const describeStructuredFailure = (
  schema: Schema.Schema<unknown, unknown, unknown>,
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
    Effect.match({
      onFailure: (e) => errorText(e),
      onSuccess: () => errorText(error.cause ?? error)
    })
  )
}

/**
 * The message of the one repair turn of a structured output.
 *
 * @internal
 */
export const repairMessage = (problem: string): string =>
  [
    "Your previous reply could not be decoded into the required output:",
    problem,
    "Reply again with only the corrected JSON value, matching the required schema exactly."
  ].join("\n")

/**
 * The members section of a team leader's system prompt.
 *
 * @internal
 */
export const teamRoster = (
  teamName: string,
  toolName: string,
  members: ReadonlyArray<{ readonly name: string; readonly description: string | undefined; readonly instructions: ReadonlyArray<string> }>
): string => {
  const lines = [
    `You lead the team '${teamName}'. Delegate work to a member with the \`${toolName}\` tool (the member's name and the task); the member's reply comes back as the tool result.`,
    "Members:"
  ]
  for (const member of members) {
    const about = member.description ?? member.instructions.join(" ")
    lines.push(about.length === 0 ? `- ${member.name}` : `- ${member.name}: ${about}`)
  }
  return lines.join("\n")
}

/**
 * Turns a model's title reply into a clean session name of at most
 * `maxWords` words.
 *
 * @internal
 */
export const cleanTitle = (text: string, maxWords: number): string => {
  const firstLine = text.split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? ""
  const stripped = firstLine
    .replace(/^(title|session name|name)\s*:\s*/i, "")
    .replace(/[*_#`]/g, "")
    .replace(/^["'“”‘’\s]+|["'“”‘’\s]+$/g, "")
  const words = stripped.split(/\s+/).filter((w) => w.length > 0).slice(0, maxWords)
  return words.join(" ").replace(/[.,;:!?]+$/, "")
}
