/**
 * The providers' `LanguageModel` service caches the Schema of a reply's parts
 * per toolkit; everything else must be what `@effect/ai`'s `LanguageModel.make`
 * does. Both are built here on the same scripted provider functions and
 * compared request by request.
 */
import { AiError, LanguageModel, type Response, Telemetry, Tool, Toolkit } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Effect, Exit, Option, Schema, Stream } from "effect"
import * as InternalLanguageModel from "../../packages/openai/src/internal/languageModel.js"

const GetWeather = Tool.make("GetWeather", {
  parameters: { city: Schema.String },
  success: Schema.String
})
const Add = Tool.make("Add", {
  parameters: { a: Schema.Number, b: Schema.Number },
  success: Schema.Number
})
const Tools = Toolkit.make(GetWeather, Add)
const ToolsLive = Tools.toLayer({
  GetWeather: ({ city }) => Effect.succeed(`Sunny in ${city}`),
  Add: ({ a, b }) => Effect.succeed(a + b)
})

const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3 }

const reply: Array<Response.PartEncoded> = [
  { type: "response-metadata", id: "r1", modelId: "m" },
  { type: "text", text: "Let me check." },
  { type: "tool-call", id: "c1", name: "GetWeather", params: { city: "Paris" } },
  { type: "tool-call", id: "c2", name: "Add", params: { a: 1, b: 2 } },
  { type: "finish", reason: "tool-calls", usage }
]

const streamed: Array<Response.StreamPartEncoded> = [
  { type: "response-metadata", id: "r1", modelId: "m" },
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: "Let me " },
  { type: "text-delta", id: "t", delta: "check." },
  { type: "text-end", id: "t" },
  { type: "tool-params-start", id: "c1", name: "GetWeather" },
  { type: "tool-params-delta", id: "c1", delta: "{\"city\":\"Paris\"}" },
  { type: "tool-params-end", id: "c1" },
  { type: "tool-call", id: "c1", name: "GetWeather", params: { city: "Paris" } },
  { type: "finish", reason: "tool-calls", usage }
]

/** The provider options a request reached the provider with (the span left out). */
const seen = (options: LanguageModel.ProviderOptions) => ({
  prompt: options.prompt,
  tools: options.tools,
  toolChoice: options.toolChoice,
  responseFormat: options.responseFormat
})

/** The stock service and ours on the same scripted provider, recording what each provider call got. */
const both = (parts: Array<Response.PartEncoded> = reply, chunks: Array<Response.StreamPartEncoded> = streamed) =>
  Effect.gen(function*() {
    const calls: Array<ReturnType<typeof seen>> = []
    const params: LanguageModel.ConstructorParams = {
      generateText: (options) => Effect.sync(() => (calls.push(seen(options)), parts)),
      streamText: (options) => Stream.suspend(() => (calls.push(seen(options)), Stream.fromIterable(chunks)))
    }
    return {
      stock: yield* LanguageModel.make(params),
      ours: yield* InternalLanguageModel.make(params),
      calls
    }
  })

/** Runs `f` on the stock service, then on ours: both results, and the provider options of each. */
const compare = <A, E>(f: (model: LanguageModel.Service) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const { calls, ours, stock } = yield* both()
    const expected = yield* Effect.exit(f(stock))
    const actual = yield* Effect.exit(f(ours))
    return { expected, actual, calls }
  })

describe("the providers' LanguageModel service", () => {
  it.effect("no toolkit: the same parts, and the same provider options, as LanguageModel.make", () =>
    Effect.gen(function*() {
      const { actual, calls, expected } = yield* compare((model) =>
        model.generateText({ prompt: "Hello" }).pipe(Effect.map((r) => r.content))
      )
      // a tool call without a toolkit does not decode: the same MalformedOutput
      assert(Exit.isFailure(expected) && Exit.isFailure(actual))
      const [e, a] = [Cause.failureOption(expected.cause), Cause.failureOption(actual.cause)]
      assert(Option.isSome(e) && Option.isSome(a))
      assert(a.value._tag === "MalformedOutput" && e.value._tag === "MalformedOutput")
      expect([a.value.module, a.value.method]).toEqual(["LanguageModel", "generateText"])
      expect(a.value.description).toBe(e.value.description)
      expect(calls[1]).toEqual(calls[0])
      expect(calls[1]!.tools).toEqual([])
    }))

  it.effect("tool calls left to the caller: the same decoded parts and provider options", () =>
    Effect.gen(function*() {
      const { actual, calls, expected } = yield* compare((model) =>
        model.generateText({ prompt: "Weather?", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Effect.map((r) => r.content),
          Effect.provide(ToolsLive)
        )
      )
      assert(Exit.isSuccess(expected) && Exit.isSuccess(actual))
      expect(actual.value).toEqual(expected.value)
      expect(actual.value.map((part) => part.type)).toEqual([
        "response-metadata",
        "text",
        "tool-call",
        "tool-call",
        "finish"
      ])
      expect(calls[1]).toEqual(calls[0])
      expect(calls[1]!.tools.map((tool) => tool.name)).toEqual(["GetWeather", "Add"])
      expect(calls[1]!.toolChoice).toBe("auto")
    }))

  it.effect("a oneOf tool choice sends only those tools, as LanguageModel.make does", () =>
    Effect.gen(function*() {
      const { actual, calls, expected } = yield* compare((model) =>
        Effect.flatMap(Tools, (toolkit) =>
          model.generateText({
            prompt: "Weather?",
            toolkit,
            toolChoice: { oneOf: ["GetWeather"] },
            disableToolCallResolution: true
          })).pipe(Effect.map((r) => r.text), Effect.provide(ToolsLive))
      )
      assert(Exit.isSuccess(expected) && Exit.isSuccess(actual))
      expect(actual.value).toBe("Let me check.")
      expect(calls[1]).toEqual(calls[0])
      expect(calls[1]!.tools.map((tool) => tool.name)).toEqual(["GetWeather"])
    }))

  it.effect("tool calls resolved by the toolkit's handlers are still resolved", () =>
    Effect.gen(function*() {
      const { actual, expected } = yield* compare((model) =>
        model.generateText({ prompt: "Weather?", toolkit: Tools }).pipe(
          Effect.map((r) => r.toolResults.map((part) => part.result)),
          Effect.provide(ToolsLive)
        )
      )
      assert(Exit.isSuccess(expected) && Exit.isSuccess(actual))
      expect(actual.value).toEqual(["Sunny in Paris", 3])
      expect(actual.value).toEqual(expected.value)
    }))

  it.effect("a call of a tool the request did not declare is the same MalformedOutput", () =>
    Effect.gen(function*() {
      const { ours, stock } = yield* both([{ type: "tool-call", id: "c9", name: "Unknown", params: {} }])
      const run = (model: LanguageModel.Service) =>
        model.generateText({ prompt: "go", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Effect.flip,
          Effect.provide(ToolsLive)
        )
      const [expected, actual] = [yield* run(stock), yield* run(ours)]
      assert(AiError.isAiError(actual) && actual._tag === "MalformedOutput" && expected._tag === "MalformedOutput")
      expect([actual.module, actual.method, actual.description]).toEqual([
        expected.module,
        expected.method,
        expected.description
      ])
    }))

  it.effect("the span transformer sees the same request and reply", () =>
    Effect.gen(function*() {
      const seenByTransformer: Array<unknown> = []
      const transformer: Telemetry.SpanTransformer = (options) => {
        seenByTransformer.push({ ...seen(options), response: options.response })
      }
      const { actual, expected } = yield* compare((model) =>
        model.generateText({ prompt: "Weather?", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Effect.provide(ToolsLive),
          Effect.provideService(Telemetry.CurrentSpanTransformer, transformer)
        )
      )
      assert(Exit.isSuccess(expected) && Exit.isSuccess(actual))
      expect(seenByTransformer).toHaveLength(2)
      expect(seenByTransformer[1]).toEqual(seenByTransformer[0])
    }))

  it.effect("streaming with tool calls left to the caller: the same stream parts and provider options", () =>
    Effect.gen(function*() {
      const { actual, calls, expected } = yield* compare((model) =>
        model.streamText({ prompt: "Weather?", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray),
          Effect.provide(ToolsLive)
        )
      )
      assert(Exit.isSuccess(expected) && Exit.isSuccess(actual))
      expect(actual.value).toEqual(expected.value)
      expect(actual.value.filter((part) => part.type === "text-delta").map((part) => part.delta)).toEqual([
        "Let me ",
        "check."
      ])
      expect(calls[1]).toEqual(calls[0])
    }))

  it.effect("the span transformer of a stream sees the whole reply when it ends", () =>
    Effect.gen(function*() {
      const replies: Array<ReadonlyArray<string>> = []
      const transformer: Telemetry.SpanTransformer = (options) => {
        replies.push(options.response.map((part) => part.type))
      }
      const { actual, expected } = yield* compare((model) =>
        model.streamText({ prompt: "Weather?", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Stream.runDrain,
          Effect.provide(ToolsLive),
          Effect.provideService(Telemetry.CurrentSpanTransformer, transformer)
        )
      )
      assert(Exit.isSuccess(expected) && Exit.isSuccess(actual))
      expect(replies).toHaveLength(2)
      expect(replies[1]).toEqual(replies[0])
      expect(replies[1]).toEqual(streamed.map((part) => part.type))
    }))

  it("the Schema of a toolkit's replies is built once, and again for other tools", () => {
    const toolkit = (tools: Record<string, Tool.Any>): Toolkit.WithHandler<Record<string, Tool.Any>> => ({
      tools,
      handle: () => Effect.dieMessage("not called")
    })
    const record: Record<string, Tool.Any> = { GetWeather }
    const first = InternalLanguageModel.decodersFor(toolkit(record))
    expect(InternalLanguageModel.decodersFor(toolkit(record))).toBe(first)
    // another record with the same tools, and the same record holding other tools
    expect(InternalLanguageModel.decodersFor(toolkit({ GetWeather }))).not.toBe(first)
    record.Add = Add
    const changed = InternalLanguageModel.decodersFor(toolkit(record))
    expect(changed).not.toBe(first)
    expect(InternalLanguageModel.decodersFor(toolkit(record))).toBe(changed)
    // no tools: the decoders of requests without a toolkit
    expect(InternalLanguageModel.decodersFor(toolkit({}))).toBe(InternalLanguageModel.decodersFor(toolkit({})))
  })
})
