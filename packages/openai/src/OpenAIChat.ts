/**
 * `LanguageModel` on OpenAI's Chat Completions API (`POST /chat/completions`),
 * the API most OpenAI-compatible servers implement.
 *
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { OpenAIChat } from "@sessionflow/openai"
 * import { Effect } from "effect"
 *
 * const program = LanguageModel.generateText({ prompt: "Hello" }).pipe(
 *   Effect.provide(OpenAIChat.model("gpt-4o-mini"))
 * )
 * ```
 *
 * Supports text, streaming, tool calls (several per turn, streamed argument
 * deltas assembled per tool call index), structured output
 * (`response_format: json_schema`, strict when the schema allows it), usage
 * and finish reason.
 *
 * @since 0.1.0
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming
} from "openai/resources/chat/completions"
import * as InternalChat from "./internal/chat.js"
import * as Shared from "./internal/shared.js"
import type * as OpenAIClient from "./OpenAIClient.js"

const MODULE = "OpenAIChat"
const PATH = "/chat/completions"

/**
 * Request parameters merged into every request (model-level, overridable per
 * effect with `withConfigOverride`).
 *
 * @since 0.1.0
 * @category Context
 */
export class Config extends Context.Tag("@sessionflow/openai/OpenAIChat/Config")<Config, Config.Service>() {}

/**
 * @since 0.1.0
 */
export declare namespace Config {
  /**
   * Any Chat Completions request parameter except those the provider owns
   * (`model`, `messages`, `tools`, `tool_choice`, `response_format`,
   * `stream`, `stream_options`, the legacy `functions`/`function_call`), plus:
   *
   * - `strictJsonSchema` (default `true`): send tools and structured output
   *   with `strict: true` (schemas are rewritten for strict mode; schemas that
   *   strict mode cannot express are sent with `strict: false`). Set to
   *   `false` for servers that reject `strict`.
   * - `stream` (default `true`): `false` makes `streamText` send one
   *   non-streaming request and emit the complete reply as stream parts
   *   (each text as a single delta). For servers that cannot stream tool
   *   calls: agents in a streamed workflow (`Workflow.stream`) stream the
   *   model, and such a server drops the calls.
   *
   * @since 0.1.0
   * @category Models
   */
  export interface Service extends
    Partial<
      Omit<
        ChatCompletionCreateParamsNonStreaming,
        | "model"
        | "messages"
        | "tools"
        | "tool_choice"
        | "response_format"
        | "stream"
        | "stream_options"
        | "functions"
        | "function_call"
      >
    >
  {
    readonly strictJsonSchema?: boolean | undefined
    readonly stream?: boolean | undefined
  }
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  readonly model: string
  readonly config?: Config.Service | undefined
}

/**
 * Builds the `LanguageModel` service on the `OpenAIClient` in context.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: (options: Options) => Effect.Effect<LanguageModel.Service, never, OpenAIClient.OpenAIClient> = Effect
  .fn("OpenAIChat.make")(function*(options: Options) {
    const prepare = Effect.fnUntraced(function*(providerOptions: LanguageModel.ProviderOptions) {
      const override = yield* Effect.serviceOption(Config)
      const { stream, strictJsonSchema, ...params } = { ...options.config, ...Option.getOrUndefined(override) }
      const strict = strictJsonSchema ?? true
      const messages = yield* InternalChat.prepareMessages(providerOptions.prompt)
      const tools = yield* Shared.prepareTools(providerOptions, strict, MODULE)
      const format = Shared.prepareResponseFormat(providerOptions, strict)
      const body: ChatCompletionCreateParamsNonStreaming = {
        ...params,
        model: options.model,
        messages,
        ...(tools.length > 0
          ? {
            tools: InternalChat.prepareTools(tools),
            tool_choice: InternalChat.prepareToolChoice(providerOptions.toolChoice)
          }
          : {}),
        ...(format !== undefined
          ? {
            response_format: {
              type: "json_schema",
              json_schema: {
                name: format.name,
                ...(format.description !== undefined ? { description: format.description } : {}),
                schema: format.schema as Record<string, unknown>,
                strict: format.strict
              }
            }
          }
          : {})
      }
      return { body, tools, format, stream: stream ?? true } as const
    })

    return yield* Shared.makeLanguageModel({
      module: MODULE,
      path: PATH,
      prepare,
      generate: (sdk, body, signal) => sdk.chat.completions.create(body, { signal }),
      makeResponse: InternalChat.makeResponse,
      stream: (sdk, body, signal) => {
        const streaming: ChatCompletionCreateParamsStreaming = {
          ...body,
          stream: true,
          stream_options: { include_usage: true }
        }
        return sdk.chat.completions.create(streaming, { signal })
      },
      makeStreamConverter: InternalChat.makeStreamConverter
    })
  })

/**
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<LanguageModel.LanguageModel, never, OpenAIClient.OpenAIClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))

const api = Shared.makeModelApi(layer, Config)

/**
 * The model `model` with a client configured from the `OPENAI_*` variables
 * (`OpenAIClient.layerFromConfig`). Provide it to a single agent's effect to
 * give that agent its own model.
 *
 * @since 0.1.0
 * @category Layers
 */
export const model: (
  model: string,
  config?: Config.Service
) => Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError> = api.model

/**
 * The model `model` on an explicit client layer (e.g. `OpenAIClient.layer({...})`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const modelWithClient: <E, R>(
  model: string,
  client: Layer.Layer<OpenAIClient.OpenAIClient, E, R>,
  config?: Config.Service
) => Layer.Layer<LanguageModel.LanguageModel, E, R> = api.modelWithClient

/**
 * Overrides request parameters for the requests made inside `self`.
 *
 * @since 0.1.0
 * @category Configuration
 */
export const withConfigOverride: {
  (overrides: Config.Service): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: Config.Service): Effect.Effect<A, E, R>
} = api.withConfigOverride
