/**
 * Pieces shared by the Chat Completions and Responses implementations.
 *
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import * as IdGenerator from "@effect/ai/IdGenerator"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import type * as ConfigError from "effect/ConfigError"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { OpenAI } from "openai"
import * as Encoding from "effect/Encoding"
import type * as Schema from "effect/Schema"
import * as OpenAIClient from "../OpenAIClient.js"
import * as JsonSchema from "./jsonSchema.js"

/** @internal */
export interface PreparedTool {
  readonly name: string
  readonly description: string | undefined
  /** What is sent (strict-mode form when `strict`). */
  readonly parameters: JsonSchema.JsonSchema
  readonly strict: boolean
  /** The schema generated from the tool's Effect Schema. */
  readonly original: JsonSchema.JsonSchema
}

/** @internal */
export interface PreparedFormat {
  readonly name: string
  readonly description: string | undefined
  readonly schema: JsonSchema.JsonSchema
  readonly strict: boolean
  /** The root was not an object and is sent as `{ value: <schema> }`. */
  readonly wrapped: boolean
  /** The schema generated from the Effect Schema (before wrapping). */
  readonly original: JsonSchema.JsonSchema
}

const jsonSchemas = new WeakMap<object, JsonSchema.JsonSchema>()

/** JSON Schemas are generated once per Schema (tools are sent on every call). */
const jsonSchemaOf = (schema: Schema.Schema.All | Tool.AnyParametersSchema): JsonSchema.JsonSchema => {
  let json = jsonSchemas.get(schema.ast)
  if (json === undefined) {
    json = Tool.getJsonSchemaFromSchemaAst(schema.ast) as unknown as JsonSchema.JsonSchema
    jsonSchemas.set(schema.ast, json)
  }
  return json
}

const strictSchemas = new WeakMap<JsonSchema.JsonSchema, ReturnType<typeof JsonSchema.toStrict>>()

const toStrict = (schema: JsonSchema.JsonSchema): ReturnType<typeof JsonSchema.toStrict> => {
  let converted = strictSchemas.get(schema)
  if (converted === undefined) {
    converted = JsonSchema.toStrict(schema)
    strictSchemas.set(schema, converted)
  }
  return converted
}

/** @internal */
export const prepareTools = (
  options: LanguageModel.ProviderOptions,
  strict: boolean,
  module: string
): Effect.Effect<ReadonlyArray<PreparedTool>, AiError.MalformedInput> =>
  Effect.forEach(options.tools, (tool) => {
    if (Tool.isProviderDefined(tool)) {
      return Effect.fail(
        new AiError.MalformedInput({
          module,
          method: "prepareTools",
          description: `Provider-defined tool '${tool.name}' is not supported by ${module}`
        })
      )
    }
    const original = jsonSchemaOf(tool.parametersSchema)
    const converted = strict ? toStrict(original) : { schema: original, strict: false }
    return Effect.succeed<PreparedTool>({
      name: tool.name,
      description: tool.description ?? Tool.getDescriptionFromSchemaAst(tool.parametersSchema.ast),
      parameters: converted.schema,
      strict: converted.strict,
      original
    })
  })

/**
 * OpenAI accepts `^[a-zA-Z0-9_-]{1,64}$` as a response format name.
 * @internal
 */
export const sanitizeName = (name: string): string => {
  const cleaned = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64)
  return cleaned.length === 0 ? "response" : cleaned
}

/** @internal */
export const prepareResponseFormat = (
  options: LanguageModel.ProviderOptions,
  strict: boolean
): PreparedFormat | undefined => {
  const format = options.responseFormat
  if (format.type !== "json") return undefined
  const original = jsonSchemaOf(format.schema)
  const wrapped = !JsonSchema.isObjectRoot(original)
  const base = wrapped ? JsonSchema.wrapValue(original) : original
  const converted = strict ? JsonSchema.toStrict(base) : { schema: base, strict: false }
  return {
    name: sanitizeName(format.objectName),
    description: Tool.getDescriptionFromSchemaAst(format.schema.ast),
    schema: converted.schema,
    strict: converted.strict,
    wrapped,
    original
  }
}

/**
 * Turns the model's JSON text back into what the Effect Schema expects:
 * unwraps `{ value }` and removes the `null`s strict mode forced on optional
 * properties. Text that is not JSON is returned unchanged (decoding then fails
 * with `MalformedOutput` in `LanguageModel.generateObject`).
 * @internal
 */
export const finalizeStructuredText = (text: string, format: PreparedFormat): string => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return text
  }
  if (format.wrapped) {
    if (typeof value !== "object" || value === null || !("value" in value)) return text
    value = (value as { readonly value: unknown }).value
  }
  if (format.strict) value = JsonSchema.denull(value, format.original)
  return JSON.stringify(value)
}

/** @internal */
export const parseToolParams = (
  tools: ReadonlyArray<PreparedTool>,
  name: string,
  args: string
): unknown => {
  const trimmed = args.trim()
  if (trimmed === "") return {}
  let value: unknown
  try {
    value = Tool.unsafeSecureJsonParse(trimmed)
  } catch {
    // Arguments that are not JSON are passed on as the raw text: decoding them
    // against the tool's Schema fails, and an agent loop can tell the model
    // so (instead of the whole reply failing).
    return args
  }
  const tool = tools.find((tool) => tool.name === name)
  return tool !== undefined && tool.strict ? JsonSchema.denull(value, tool.original) : value
}

/** @internal */
export const makeUsage = (usage: {
  readonly inputTokens: number | undefined
  readonly outputTokens: number | undefined
  readonly totalTokens: number | undefined
  readonly reasoningTokens?: number | undefined
  readonly cachedInputTokens?: number | undefined
}): typeof Response.Usage.Encoded => ({
  inputTokens: usage.inputTokens,
  outputTokens: usage.outputTokens,
  totalTokens: usage.totalTokens,
  ...(usage.reasoningTokens !== undefined ? { reasoningTokens: usage.reasoningTokens } : {}),
  ...(usage.cachedInputTokens !== undefined ? { cachedInputTokens: usage.cachedInputTokens } : {})
})

/** @internal */
export const emptyUsage: typeof Response.Usage.Encoded = {
  inputTokens: undefined,
  outputTokens: undefined,
  totalTokens: undefined
}

/**
 * Tool results are sent as text: strings as they are, anything else as JSON.
 * @internal
 */
export const toolResultText = (result: unknown): string =>
  typeof result === "string" ? result : JSON.stringify(result ?? null)

/**
 * A file part as a URL (`http(s):`/`data:`), base64-encoding bytes.
 * @internal
 */
export const fileUrl = (part: Prompt.FilePart): string => {
  const mediaType = part.mediaType === "image/*" ? "image/jpeg" : part.mediaType
  if (part.data instanceof URL) return part.data.toString()
  if (part.data instanceof Uint8Array) return `data:${mediaType};base64,${Encoding.encodeBase64(part.data)}`
  if (/^(https?|data):/i.test(part.data)) return part.data
  return `data:${mediaType};base64,${part.data}`
}

/** @internal */
export const unsupportedFile = (module: string, part: Prompt.FilePart): AiError.MalformedInput =>
  new AiError.MalformedInput({
    module,
    method: "prepareMessages",
    description: `Unsupported media type for a file part: '${part.mediaType}' (images and application/pdf are supported)`
  })

/** @internal */
export const timestampFromSeconds = (seconds: number | undefined): string | undefined =>
  typeof seconds === "number" && Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : undefined

/**
 * The layer constructors and the config override every provider module
 * exports, made from its `layer` and its `Config` tag.
 *
 * @internal
 */
export const makeModelApi = <ConfigService extends object>(
  layer: (options: { readonly model: string; readonly config?: ConfigService | undefined }) => Layer.Layer<
    LanguageModel.LanguageModel,
    never,
    OpenAIClient.OpenAIClient
  >,
  Config: Context.Tag<any, ConfigService>
) => ({
  model: (model: string, config?: ConfigService): Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError> =>
    Layer.provide(layer({ model, config }), OpenAIClient.layerFromConfig),
  modelWithClient: <E, R>(
    model: string,
    client: Layer.Layer<OpenAIClient.OpenAIClient, E, R>,
    config?: ConfigService
  ): Layer.Layer<LanguageModel.LanguageModel, E, R> => Layer.provide(layer({ model, config }), client),
  withConfigOverride: dual(
    2,
    <A, E, R>(self: Effect.Effect<A, E, R>, overrides: ConfigService): Effect.Effect<A, E, R> =>
      Effect.flatMap(
        Effect.serviceOption(Config),
        (current) => Effect.provideService(self, Config, { ...Option.getOrUndefined(current), ...overrides })
      )
  ) as {
    (overrides: ConfigService): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    <A, E, R>(self: Effect.Effect<A, E, R>, overrides: ConfigService): Effect.Effect<A, E, R>
  }
})

/**
 * The `LanguageModel` skeleton both APIs share: prepare the request, then
 * either one call turned into response parts, or a streamed call whose chunks
 * a converter turns into stream parts.
 *
 * @internal
 */
export const makeLanguageModel = <Body, Result, Chunk>(spec: {
  readonly module: string
  readonly path: string
  readonly prepare: (
    options: LanguageModel.ProviderOptions
  ) => Effect.Effect<
    { readonly body: Body; readonly tools: ReadonlyArray<PreparedTool>; readonly format: PreparedFormat | undefined },
    AiError.AiError
  >
  readonly generate: (sdk: OpenAI, body: Body, signal: AbortSignal) => PromiseLike<Result>
  readonly makeResponse: (
    result: Result,
    tools: ReadonlyArray<PreparedTool>,
    format: PreparedFormat | undefined
  ) => Effect.Effect<Array<Response.PartEncoded>, AiError.AiError>
  readonly stream: (sdk: OpenAI, body: Body, signal: AbortSignal) => PromiseLike<AsyncIterable<Chunk>>
  readonly makeStreamConverter: (
    tools: ReadonlyArray<PreparedTool>,
    idGenerator: IdGenerator.Service
  ) => {
    readonly onChunk: (chunk: Chunk) => Effect.Effect<Iterable<Response.StreamPartEncoded>, AiError.AiError>
    readonly onEnd: Effect.Effect<Iterable<Response.StreamPartEncoded>, AiError.AiError>
  }
}): Effect.Effect<LanguageModel.Service, never, OpenAIClient.OpenAIClient> =>
  Effect.gen(function*() {
    const client = yield* OpenAIClient.OpenAIClient
    const generateText = Effect.fn(`${spec.module}.generateText`)(
      function*(providerOptions: LanguageModel.ProviderOptions) {
        const { body, format, tools } = yield* spec.prepare(providerOptions)
        const result = yield* client.request(
          { module: spec.module, method: "generateText", path: spec.path },
          (sdk, signal) => spec.generate(sdk, body, signal)
        )
        return yield* spec.makeResponse(result, tools, format)
      }
    )
    const streamText = (
      providerOptions: LanguageModel.ProviderOptions
    ): Stream.Stream<Response.StreamPartEncoded, AiError.AiError, IdGenerator.IdGenerator> =>
      Stream.unwrap(Effect.gen(function*() {
        const { body, tools } = yield* spec.prepare(providerOptions)
        const converter = spec.makeStreamConverter(tools, yield* IdGenerator.IdGenerator)
        return client.stream(
          { module: spec.module, method: "streamText", path: spec.path },
          (sdk, signal) => spec.stream(sdk, body, signal)
        ).pipe(
          Stream.mapEffect(converter.onChunk),
          Stream.concat(Stream.fromEffect(converter.onEnd)),
          Stream.flattenIterables
        )
      })).pipe(Stream.withSpan(`${spec.module}.streamText`))
    return yield* LanguageModel.make({ generateText, streamText })
  })
