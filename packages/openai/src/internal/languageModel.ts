/**
 * `LanguageModel.make`, with the Schema that decodes a reply's parts built
 * once per set of tools instead of once per request.
 *
 * `@effect/ai`'s `LanguageModel.make` builds `Response.Part(toolkit)` (or
 * `Response.StreamPart(toolkit)`) on every `generateText` / `streamText`
 * call, and so compiles a new parser for it every time: a Union of a dozen
 * Structs plus two per tool, which costs more CPU and allocations than the
 * rest of the call. The Schema depends only on the tools, so here it is kept
 * per toolkit (its `tools` record, checked against the tools it was built
 * from).
 *
 * The requests taken over are those `LanguageModel.make` answers with the
 * decoded reply as it is: no toolkit, or tool calls left to the caller
 * (`disableToolCallResolution: true`, as agents do). For them this does what
 * `LanguageModel.make` does (same span and attributes, same provider options,
 * same span transformer, same errors); every other request (tool calls
 * resolved by the toolkit's handlers) and `generateObject` go to the service
 * `LanguageModel.make` built.
 *
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import * as IdGenerator from "@effect/ai/IdGenerator"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Response from "@effect/ai/Response"
import * as Telemetry from "@effect/ai/Telemetry"
import type * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import type * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

type Tools = Readonly<Record<string, Tool.Any>>

type DecodeParts = (u: unknown) => Effect.Effect<Array<Response.Part<Tools>>, ParseResult.ParseError>

type DecodeStreamParts = (
  chunk: Chunk.Chunk<Response.StreamPartEncoded>
) => Effect.Effect<Chunk.Chunk<Response.StreamPart<Tools>>, ParseResult.ParseError>

interface Decoders {
  readonly parts: DecodeParts
  readonly streamParts: DecodeStreamParts
}

const makeDecoders = (toolkit: Toolkit.Any | Toolkit.WithHandler<Tools>): Decoders => ({
  parts: Schema.decodeUnknown(Schema.mutable(Schema.Array(Response.Part(toolkit)))) as unknown as DecodeParts,
  streamParts: Schema.decode(Schema.ChunkFromSelf(Response.StreamPart(toolkit))) as unknown as DecodeStreamParts
})

/** The decoders of replies to requests without tools. */
const noTools: Decoders = makeDecoders(Toolkit.empty)

const cache = new WeakMap<Tools, { readonly tools: ReadonlyArray<Tool.Any>; readonly decoders: Decoders }>()

/**
 * The decoders for a toolkit's tools, built the first time and kept as long
 * as its `tools` record lives (rebuilt if the record no longer holds the
 * same tools).
 *
 * @internal
 */
export const decodersFor = (toolkit: Toolkit.WithHandler<Tools>): Decoders => {
  const tools = Object.values(toolkit.tools)
  if (tools.length === 0) return noTools
  const cached = cache.get(toolkit.tools)
  if (cached !== undefined && sameTools(cached.tools, tools)) return cached.decoders
  const decoders = makeDecoders(toolkit)
  cache.set(toolkit.tools, { tools, decoders })
  return decoders
}

const sameTools = (a: ReadonlyArray<Tool.Any>, b: ReadonlyArray<Tool.Any>): boolean =>
  a.length === b.length && a.every((tool, i) => tool === b[i])

type Options = LanguageModel.GenerateTextOptions<Tools>

/** Whether `LanguageModel.make` would return the decoded reply as it is. */
const takenOver = (options: Options): boolean =>
  options.toolkit === undefined || options.disableToolCallResolution === true

type MutableProviderOptions = { -readonly [K in keyof LanguageModel.ProviderOptions]: LanguageModel.ProviderOptions[K] }

/**
 * The provider options of a request, and the decoders of its reply: its
 * tools (all of them, or those of a `oneOf` tool choice) with its tool
 * choice, as `LanguageModel.make` sets them.
 */
const prepare = (options: Options, span: LanguageModel.ProviderOptions["span"]) =>
  Effect.gen(function*() {
    const providerOptions: MutableProviderOptions = {
      prompt: Prompt.make(options.prompt),
      tools: [],
      toolChoice: "none",
      responseFormat: { type: "text" },
      span
    }
    if (options.toolkit === undefined) return { providerOptions, decoders: noTools }
    const toolkit = Effect.isEffect(options.toolkit) ? yield* options.toolkit : options.toolkit
    const decoders = decodersFor(toolkit)
    if (decoders === noTools) return { providerOptions, decoders }
    const toolChoice = options.toolChoice ?? "auto"
    const tools = Object.values(toolkit.tools)
    providerOptions.tools = typeof toolChoice === "object" && "oneOf" in toolChoice
      ? tools.filter((tool) => toolChoice.oneOf.includes(tool.name))
      : tools
    providerOptions.toolChoice = toolChoice
    return { providerOptions, decoders }
  })

/**
 * `LanguageModel.make` with the reply's Schema cached per toolkit (see the
 * module documentation).
 *
 * @internal
 */
export const make = (params: LanguageModel.ConstructorParams): Effect.Effect<LanguageModel.Service> =>
  Effect.gen(function*() {
    const service = yield* LanguageModel.make(params)
    const parentSpanTransformer = yield* Effect.serviceOption(Telemetry.CurrentSpanTransformer)
    const getSpanTransformer = Effect.map(
      Effect.serviceOption(Telemetry.CurrentSpanTransformer),
      Option.orElse(() => parentSpanTransformer)
    )
    const idGenerator = Option.getOrElse(
      yield* Effect.serviceOption(IdGenerator.IdGenerator),
      () => IdGenerator.defaultIdGenerator
    )

    const generateText = (options: Options) =>
      Effect.useSpan(
        "LanguageModel.generateText",
        {
          captureStackTrace: false,
          attributes: { concurrency: options.concurrency, toolChoice: options.toolChoice }
        },
        (span) =>
          Effect.gen(function*() {
            const spanTransformer = yield* getSpanTransformer
            const { decoders, providerOptions } = yield* prepare(options, span)
            const content = yield* decoders.parts(yield* params.generateText(providerOptions))
            if (Option.isSome(spanTransformer)) spanTransformer.value({ ...providerOptions, response: content })
            return new LanguageModel.GenerateTextResponse(content)
          }).pipe(
            Effect.catchTag(
              "ParseError",
              (error) =>
                AiError.MalformedOutput.fromParseError({ module: "LanguageModel", method: "generateText", error })
            ),
            Effect.withParentSpan(span),
            Effect.provideService(IdGenerator.IdGenerator, idGenerator)
          )
      )

    const streamText = (options: Options) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const span = yield* Effect.makeSpanScoped("LanguageModel.streamText", {
          captureStackTrace: false,
          attributes: { concurrency: options.concurrency, toolChoice: options.toolChoice }
        })
        const { decoders, providerOptions } = yield* prepare(options, span)
        const stream = Stream.mapChunksEffect(params.streamText(providerOptions), decoders.streamParts)
        const spanTransformer = yield* getSpanTransformer
        if (Option.isNone(spanTransformer)) return stream
        // the transformer sees the whole reply when the stream ends
        let content: Array<Response.StreamPart<Tools>> = []
        return stream.pipe(
          Stream.mapChunks((chunk) => {
            content = [...content, ...chunk]
            return chunk
          }),
          Stream.ensuring(Effect.sync(() => spanTransformer.value({ ...providerOptions, response: content })))
        )
      })).pipe(
        Stream.mapError((error) =>
          ParseResult.isParseError(error)
            ? AiError.MalformedOutput.fromParseError({ module: "LanguageModel", method: "streamText", error })
            : error
        ),
        Stream.provideService(IdGenerator.IdGenerator, idGenerator)
      )

    return {
      ...service,
      generateText: ((options: Options) =>
        takenOver(options) ? generateText(options) : service.generateText(options)) as LanguageModel.Service[
          "generateText"
        ],
      streamText: ((options: Options) =>
        takenOver(options) ? streamText(options) : service.streamText(options)) as LanguageModel.Service["streamText"]
    }
  })
