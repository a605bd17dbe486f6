/**
 * Pieces shared by the Chat Completions and Responses implementations.
 *
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import * as IdGenerator from "@effect/ai/IdGenerator"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import type * as ConfigError from "effect/ConfigError"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { OpenAI } from "openai"
import * as OpenAIClient from "../OpenAIClient.js"
import * as JsonSchema from "./jsonSchema.js"
import * as InternalLanguageModel from "./languageModel.js"

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
const sanitizeName = (name: string): string => {
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

/**
 * The arguments of a tool call as the tool's Schema will see them:
 *
 * - JSON text: the parsed value;
 * - text that is not JSON: the text itself, so that decoding it against the
 *   tool's Schema fails and an agent loop can tell the model so (instead of
 *   the whole reply failing);
 * - no arguments (empty text, `null`, or the field left out, as some
 *   OpenAI-compatible servers send for a call without arguments): `{}`;
 * - a JSON value instead of JSON text (some servers send an object): that
 *   value.
 *
 * Values the tool's Schema rejects are not repaired here: an agent answers
 * them with a tool error, `LanguageModel` fails with `MalformedOutput`.
 *
 * @internal
 */
export const parseToolParams = (
  tools: ReadonlyArray<PreparedTool>,
  name: string,
  args: unknown
): unknown => {
  let value: unknown
  if (typeof args === "string") {
    const trimmed = args.trim()
    if (trimmed === "") return {}
    try {
      value = Tool.unsafeSecureJsonParse(trimmed)
    } catch {
      return args
    }
  } else if (args === undefined || args === null) {
    return {}
  } else {
    value = args
  }
  const tool = tools.find((tool) => tool.name === name)
  return tool !== undefined && tool.strict ? JsonSchema.denull(value, tool.original) : value
}

/**
 * Where a reply is read, for error messages.
 * @internal
 */
export interface Site {
  readonly module: string
  readonly method: string
}

/** @internal */
export const malformedOutput = (site: Site, description: string, cause?: unknown): AiError.MalformedOutput =>
  new AiError.MalformedOutput({ ...site, description, ...(cause === undefined ? {} : { cause }) })

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join("")

const isPrefix = (a: ReadonlyArray<PropertyKey>, b: ReadonlyArray<PropertyKey>): boolean =>
  a.length < b.length && a.every((key, i) => key === b[i])

/**
 * One line per problem: where a union (e.g. a field that may be `null`)
 * failed on every side, `Expected A or B, actual x`; where one side got
 * further (a deeper path), only that side.
 */
const describeIssues = (error: ParseResult.ParseError, at: ReadonlyArray<PropertyKey>): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const deepest = issues.filter((issue) => !issues.some((other) => isPrefix(issue.path, other.path)))
  const byPath = new Map<string, Array<string>>()
  for (const issue of deepest) {
    const path = formatPath([...at, ...issue.path])
    byPath.set(path, [...(byPath.get(path) ?? []), issue.message])
  }
  return [...byPath].map(([path, messages]) => {
    const parsed = messages.map((message) => /^Expected (.*), actual (.*)$/s.exec(message))
    const message = messages.length > 1 && parsed.every((match) => match !== null)
      ? `Expected ${parsed.map((match) => match![1]).join(" or ")}, actual ${parsed[0]![2]}`
      : messages.join("; ")
    return path.length === 0 ? message : `${path}: ${message}`
  }).join("; ")
}

/**
 * Decodes a piece of a server reply with a Schema of what the provider reads;
 * a reply that does not fit is a `MalformedOutput` naming each problem by its
 * path, e.g. `choices[0].message: is missing`.
 *
 * @internal
 */
export const decodeReply = <A, I>(
  schema: Schema.Schema<A, I>,
  site: Site,
  at: ReadonlyArray<PropertyKey> = []
) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (u: unknown): Effect.Effect<A, AiError.MalformedOutput> => {
    const result = decode(u)
    if (Either.isRight(result)) return Effect.succeed(result.right)
    return Effect.fail(
      malformedOutput(
        site,
        `The reply does not have the expected shape: ${describeIssues(result.left, at)}`,
        result.left
      )
    )
  }
}

/**
 * `null` or absent, as OpenAI-compatible servers write optional fields.
 * @internal
 */
export const nullish = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

/**
 * Message content as text, or as an array of content parts whose `text`
 * parts are the text (some servers send the latter).
 * @internal
 */
export const WireContent = Schema.Union(
  Schema.String,
  Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String) })).annotations({
    identifier: "ContentParts"
  })
)

/** @internal */
export const contentText = (content: typeof WireContent.Type | null | undefined): string => {
  if (content === null || content === undefined) return ""
  if (typeof content === "string") return content
  return content.map((part) => (part.type === "text" && part.text !== undefined ? part.text : "")).join("")
}

/**
 * Optional reply fields that are only informative (ids, model names,
 * timestamps, token counts) are read when they have the right type and
 * ignored otherwise: they never fail a reply.
 * @internal
 */
export const stringField = (u: unknown): string | undefined => (typeof u === "string" && u.length > 0 ? u : undefined)

/** @internal */
const numberField = (
  u: unknown
): number | undefined => (typeof u === "number" && Number.isFinite(u) ? u : undefined)

/** @internal */
export const recordField = (u: unknown): Readonly<Record<string, unknown>> | undefined =>
  Predicate.isRecord(u) ? u : undefined

/** @internal */
export const metadataPart = (
  id: unknown,
  model: unknown,
  createdSeconds: unknown
): Response.ResponseMetadataPartEncoded => {
  const timestamp = timestampFromSeconds(numberField(createdSeconds))
  const idText = stringField(id)
  const modelText = stringField(model)
  return {
    type: "response-metadata",
    ...(idText !== undefined ? { id: idText } : {}),
    ...(modelText !== undefined ? { modelId: modelText } : {}),
    ...(timestamp !== undefined ? { timestamp } : {})
  }
}

/**
 * Token counts from a reply's `usage` object, whose field names differ
 * between the APIs (`prompt_tokens` / `input_tokens`, …). Counts that are not
 * numbers are left out.
 * @internal
 */
export const readUsage = (
  u: unknown,
  names: {
    readonly input: string
    readonly output: string
    readonly inputDetails: string
    readonly outputDetails: string
  }
): typeof Response.Usage.Encoded => {
  const usage = recordField(u)
  if (usage === undefined) return emptyUsage
  const reasoningTokens = numberField(recordField(usage[names.outputDetails])?.reasoning_tokens)
  const cachedInputTokens = numberField(recordField(usage[names.inputDetails])?.cached_tokens)
  return {
    inputTokens: numberField(usage[names.input]),
    outputTokens: numberField(usage[names.output]),
    totalTokens: numberField(usage.total_tokens),
    ...(reasoningTokens !== undefined ? { reasoningTokens } : {}),
    ...(cachedInputTokens !== undefined ? { cachedInputTokens } : {})
  }
}

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
    description:
      `Unsupported media type for a file part: '${part.mediaType}' (images and application/pdf are supported)`
  })

/** @internal */
const timestampFromSeconds = (seconds: number | undefined): string | undefined =>
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
 * A complete reply as stream parts, for models configured not to stream:
 * each text (and reasoning) part becomes start, one delta, end; the other
 * parts are the same in both forms.
 *
 * @internal
 */
const toStreamParts = (
  parts: ReadonlyArray<Response.PartEncoded>,
  idGenerator: IdGenerator.Service
): Effect.Effect<Array<Response.StreamPartEncoded>> =>
  Effect.gen(function*() {
    const out: Array<Response.StreamPartEncoded> = []
    for (const part of parts) {
      switch (part.type) {
        case "text":
        case "reasoning": {
          if (part.text.length === 0) break
          const id = yield* idGenerator.generateId()
          const kind = part.type
          out.push(
            { type: `${kind}-start`, id },
            { type: `${kind}-delta`, id, delta: part.text },
            { type: `${kind}-end`, id }
          )
          break
        }
        default:
          out.push(part)
      }
    }
    return out
  })

/**
 * What a provider's `prepare` returns for one request.
 * @internal
 */
export interface Prepared<Body> {
  readonly body: Body
  readonly tools: ReadonlyArray<PreparedTool>
  readonly format: PreparedFormat | undefined
  /** `false`: `streamText` makes one non-streaming request (the `stream: false` config) */
  readonly stream: boolean
}

/**
 * What turning a complete reply into response parts needs.
 * @internal
 */
export interface ResponseRequest {
  readonly tools: ReadonlyArray<PreparedTool>
  readonly format: PreparedFormat | undefined
  readonly idGenerator: IdGenerator.Service
  /** `generateText`, or `streamText` for a model configured with `stream: false` */
  readonly method: string
}

/**
 * The `LanguageModel` skeleton both APIs share: prepare the request, then
 * either one call turned into response parts, or a streamed call whose chunks
 * a converter turns into stream parts. Replies are `unknown` here: the
 * converters decode what they read (see `decodeReply`), since OpenAI-compatible
 * servers do not always send what the SDK's types promise.
 *
 * @internal
 */
export const makeLanguageModel = <Body>(spec: {
  readonly module: string
  readonly path: string
  readonly prepare: (options: LanguageModel.ProviderOptions) => Effect.Effect<Prepared<Body>, AiError.AiError>
  readonly generate: (sdk: OpenAI, body: Body, signal: AbortSignal) => PromiseLike<unknown>
  readonly makeResponse: (
    result: unknown,
    request: ResponseRequest
  ) => Effect.Effect<Array<Response.PartEncoded>, AiError.AiError>
  readonly stream: (sdk: OpenAI, body: Body, signal: AbortSignal) => PromiseLike<AsyncIterable<unknown>>
  readonly makeStreamConverter: (
    tools: ReadonlyArray<PreparedTool>,
    idGenerator: IdGenerator.Service
  ) => {
    readonly onChunk: (chunk: unknown) => Effect.Effect<Iterable<Response.StreamPartEncoded>, AiError.AiError>
    readonly onEnd: Effect.Effect<Iterable<Response.StreamPartEncoded>, AiError.AiError>
  }
}): Effect.Effect<LanguageModel.Service, never, OpenAIClient.OpenAIClient> =>
  Effect.gen(function*() {
    const client = yield* OpenAIClient.OpenAIClient
    const generate = (prepared: Prepared<Body>, method: string) =>
      Effect.gen(function*() {
        const idGenerator = yield* IdGenerator.IdGenerator
        const result = yield* client.request(
          { module: spec.module, method, path: spec.path },
          (sdk, signal) => spec.generate(sdk, prepared.body, signal)
        )
        return { parts: yield* spec.makeResponse(result, { ...prepared, idGenerator, method }), idGenerator }
      })
    // spans without a stack trace: capturing one on every request costs more than the span
    const generateText = (providerOptions: LanguageModel.ProviderOptions) =>
      spec.prepare(providerOptions).pipe(
        Effect.flatMap((prepared) => generate(prepared, "generateText")),
        Effect.map(({ parts }) => parts),
        Effect.withSpan(`${spec.module}.generateText`, { captureStackTrace: false })
      )
    const streamText = (
      providerOptions: LanguageModel.ProviderOptions
    ): Stream.Stream<Response.StreamPartEncoded, AiError.AiError, IdGenerator.IdGenerator> =>
      Stream.unwrap(Effect.gen(function*() {
        const prepared = yield* spec.prepare(providerOptions)
        if (!prepared.stream) {
          return Stream.fromIterableEffect(
            Effect.flatMap(generate(prepared, "streamText"), ({ idGenerator, parts }) =>
              toStreamParts(parts, idGenerator))
          )
        }
        const converter = spec.makeStreamConverter(prepared.tools, yield* IdGenerator.IdGenerator)
        return client.stream(
          { module: spec.module, method: "streamText", path: spec.path },
          (sdk, signal) =>
            spec.stream(sdk, prepared.body, signal)
        ).pipe(
          Stream.mapEffect(converter.onChunk),
          Stream.concat(Stream.fromEffect(converter.onEnd)),
          Stream.flattenIterables
        )
      })).pipe(Stream.withSpan(`${spec.module}.streamText`, { captureStackTrace: false }))
    return yield* InternalLanguageModel.make({ generateText, streamText })
  })
