/**
 * The conformance suite every OpenAI `LanguageModel` layer must pass, run
 * against the local `TestServer` (see `OpenAIChat.test.ts` and
 * `OpenAIResponses.test.ts`).
 */
import { AiError, LanguageModel, Tool, Toolkit } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import type { OpenAIClient } from "@sessionflow/openai"
import {
  Cause,
  ConfigError,
  ConfigProvider,
  Deferred,
  Effect,
  Exit,
  Fiber,
  type Layer,
  Option,
  Random,
  Schema,
  Stream
} from "effect"
import * as TestServer from "./TestServer.js"

/** What the suite needs to know about one provider. */
export interface ProviderKit {
  readonly name: string
  readonly api: TestServer.Api
  /** `X.model(modelId)`: the client built from `OPENAI_*` config. */
  readonly model: (model: string) => Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError>
  /** `X.modelWithClient(modelId, client)`. */
  readonly modelWithClient: (
    model: string,
    client: Layer.Layer<OpenAIClient.OpenAIClient>
  ) => Layer.Layer<LanguageModel.LanguageModel>
  /** Reads API-specific request bodies in a neutral shape. */
  readonly inspect: {
    /** system / user / assistant text messages, in order. */
    readonly messages: (body: TestServer.RecordedRequest["body"]) => ReadonlyArray<{ role: string; text: string }>
    readonly tools: (body: TestServer.RecordedRequest["body"]) => ReadonlyArray<InspectedTool>
    readonly responseFormat: (body: TestServer.RecordedRequest["body"]) => InspectedFormat | undefined
  }
}

export interface InspectedTool {
  readonly name: string
  readonly description: string | undefined
  readonly strict: boolean | undefined
  readonly parameters: JsonObject
}

interface InspectedFormat {
  readonly name: string
  readonly strict: boolean | undefined
  readonly schema: JsonObject
}

export type JsonObject = { readonly [key: string]: unknown }

// ---- fixtures ----------------------------------------------------------------

const GetWeather = Tool.make("GetWeather", {
  description: "Current weather for a city",
  parameters: { city: Schema.String },
  success: Schema.String
})

const Add = Tool.make("Add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.optional(Schema.Number) },
  success: Schema.Number
})

export const Tools = Toolkit.make(GetWeather, Add)

/** Handlers that record what they were called with. */
export const makeToolsLayer = (calls: Array<unknown>) =>
  Tools.toLayer({
    GetWeather: ({ city }) => Effect.sync(() => (calls.push({ tool: "GetWeather", city }), `Sunny in ${city}`)),
    Add: ({ a, b }) => Effect.sync(() => (calls.push({ tool: "Add", a, b }), a + (b ?? 0)))
  })

const Person = Schema.Struct({
  name: Schema.String,
  age: Schema.Number,
  nickname: Schema.optional(Schema.String)
})

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert(Exit.isFailure(exit), "expected a failure")
  const failure = Cause.failureOption(exit.cause)
  assert(Option.isSome(failure), `expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return failure.value
}

const asRecord = (u: unknown): JsonObject => {
  assert(typeof u === "object" && u !== null && !Array.isArray(u), `expected an object, got ${JSON.stringify(u)}`)
  return u as JsonObject
}

// ---- the suite ---------------------------------------------------------------

export const providerSuite = (kit: ProviderKit) =>
  describe(`${kit.name} (provider suite)`, () => {
    const provide = <A, E, R>(
      server: TestServer.Service,
      effect: Effect.Effect<A, E, R>,
      extra?: Readonly<Record<string, string>>,
      model = "gpt-test"
    ) =>
      effect.pipe(
        Effect.provide(kit.model(model)),
        Effect.withConfigProvider(server.config(extra))
      )

    it.scoped("plain text: response, usage, finish reason and the request sent", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [TestServer.text("Hello there, friend", { usage: { inputTokens: 12, outputTokens: 4 } })]
        })
        const response = yield* provide(
          server,
          LanguageModel.generateText({
            prompt: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }]
          })
        )
        expect(response.text).toBe("Hello there, friend")
        expect(response.finishReason).toBe("stop")
        expect(response.usage.inputTokens).toBe(12)
        expect(response.usage.outputTokens).toBe(4)
        expect(response.usage.totalTokens).toBe(16)

        const requests = yield* server.requests
        expect(requests).toHaveLength(1)
        const request = requests[0]!
        expect(request.api).toBe(kit.api)
        expect(request.stream).toBe(false)
        expect(request.body.model).toBe("gpt-test")
        expect(request.headers["authorization"]).toBe("Bearer sk-test")
        expect(kit.inspect.messages(request.body)).toEqual([
          { role: "system", text: "Be brief." },
          { role: "user", text: "Hi" }
        ])
        expect(request.body.tools).toBeUndefined()
        expect(request.body.tool_choice).toBeUndefined()
      }))

    it.scoped("streaming: text deltas arrive in order, framed by text-start/text-end, finish last", () =>
      Effect.gen(function*() {
        const deltas = ["Hel", "lo, ", "wor", "ld!"]
        const server = yield* TestServer.make({ replies: [TestServer.text(deltas)] })
        const parts = yield* provide(
          server,
          LanguageModel.streamText({ prompt: "Say hello" }).pipe(Stream.runCollect)
        ).pipe(Effect.map((chunk) => [...chunk]))

        const types = parts.map((part) => part.type)
        const received = parts.flatMap((part) => (part.type === "text-delta" ? [part.delta] : []))
        expect(received).toEqual(deltas)
        const start = types.indexOf("text-start")
        const firstDelta = types.indexOf("text-delta")
        const lastDelta = types.lastIndexOf("text-delta")
        const end = types.indexOf("text-end")
        expect(start).toBeGreaterThanOrEqual(0)
        expect(start).toBeLessThan(firstDelta)
        expect(end).toBeGreaterThan(lastDelta)
        const finish = parts[parts.length - 1]!
        assert(finish.type === "finish")
        expect(finish.reason).toBe("stop")
        expect(finish.usage.outputTokens).toBe(5)

        const [request] = yield* server.requests
        expect(request!.stream).toBe(true)
      }))

    it.scoped("streaming: several tool calls in one turn, argument deltas assembled per call", () =>
      Effect.gen(function*() {
        const scripted = [
          { id: "call_w1", name: "GetWeather", arguments: { city: "Paris" } },
          { id: "call_a", name: "Add", arguments: { a: 2, b: 40 } },
          { id: "call_w2", name: "GetWeather", arguments: { city: "Oslo" } }
        ]
        const server = yield* TestServer.make({
          replies: [TestServer.toolCalls(scripted, { interleaveToolCalls: true, argumentChunkSize: 3 })]
        })
        const calls: Array<unknown> = []
        const parts = yield* provide(
          server,
          LanguageModel.streamText({ prompt: "Weather and sum", toolkit: Tools }).pipe(
            Stream.runCollect,
            Effect.provide(makeToolsLayer(calls))
          )
        ).pipe(Effect.map((chunk) => [...chunk]))

        const toolCalls = parts.filter((part) => part.type === "tool-call")
        expect(toolCalls.map((call) => [call.id, call.name, call.params])).toEqual([
          ["call_w1", "GetWeather", { city: "Paris" }],
          ["call_a", "Add", { a: 2, b: 40 }],
          ["call_w2", "GetWeather", { city: "Oslo" }]
        ])
        for (const call of scripted) {
          const streamed = parts.flatMap((part) =>
            part.type === "tool-params-delta" && part.id === call.id ? [part.delta] : []
          )
          expect(streamed.length).toBeGreaterThan(1)
          expect(streamed.join("")).toBe(JSON.stringify(call.arguments))
          const started = parts.findIndex((part) => part.type === "tool-params-start" && part.id === call.id)
          const ended = parts.findIndex((part) => part.type === "tool-params-end" && part.id === call.id)
          expect(started).toBeGreaterThanOrEqual(0)
          expect(ended).toBeGreaterThan(started)
        }
        const results = parts.filter((part) => part.type === "tool-result")
        expect(results.map((result) => [result.id, result.result])).toEqual([
          ["call_w1", "Sunny in Paris"],
          ["call_a", 42],
          ["call_w2", "Sunny in Oslo"]
        ])
        expect(calls).toHaveLength(3)
        const finish = parts.find((part) => part.type === "finish")
        expect(finish?.type === "finish" && finish.reason).toBe("tool-calls")

        const [request] = yield* server.requests
        const tools = kit.inspect.tools(request!.body)
        expect(tools.map((tool) => tool.name)).toEqual(["GetWeather", "Add"])
        expect(tools.map((tool) => tool.description)).toEqual(["Current weather for a city", "Adds two numbers"])
        for (const tool of tools) {
          expect(tool.strict).toBe(true)
          expect(tool.parameters.additionalProperties).toBe(false)
          expect(tool.parameters.required).toEqual(Object.keys(asRecord(tool.parameters.properties)))
        }
        // the optional `b` of Add is required-but-nullable in strict mode
        const addProperties = asRecord(tools[1]!.parameters.properties)
        expect(addProperties.b).toEqual({ anyOf: [{ type: "number" }, { type: "null" }] })
      }))

    it.scoped("non-streaming: several tool calls in one turn are resolved; strict nulls are removed", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [
            TestServer.toolCalls([
              { id: "c1", name: "GetWeather", arguments: { city: "Rome" } },
              { id: "c2", name: "Add", arguments: { a: 1, b: null } }
            ])
          ]
        })
        const calls: Array<unknown> = []
        const response = yield* provide(
          server,
          LanguageModel.generateText({ prompt: "go", toolkit: Tools }).pipe(Effect.provide(makeToolsLayer(calls)))
        )
        expect(response.toolCalls.map((call) => [call.id, call.name, call.params])).toEqual([
          ["c1", "GetWeather", { city: "Rome" }],
          ["c2", "Add", { a: 1 }]
        ])
        expect(response.toolResults.map((result) => result.result)).toEqual(["Sunny in Rome", 1])
        expect(calls).toEqual([{ tool: "GetWeather", city: "Rome" }, { tool: "Add", a: 1, b: undefined }])
        expect(response.finishReason).toBe("tool-calls")
      }))

    it.scoped("structured output: strict json_schema in the request, decoded with Schema", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [TestServer.json({ name: "Ada", age: 36, nickname: null })]
        })
        const response = yield* provide(
          server,
          LanguageModel.generateObject({ prompt: "Who?", schema: Person, objectName: "person record" })
        )
        expect(response.value).toEqual({ name: "Ada", age: 36 })
        expect("nickname" in response.value).toBe(false)

        const [request] = yield* server.requests
        const format = kit.inspect.responseFormat(request!.body)
        assert(format !== undefined, "the request carries a json_schema response format")
        expect(format.name).toBe("person_record")
        expect(format.strict).toBe(true)
        expect(format.schema.type).toBe("object")
        expect(format.schema.additionalProperties).toBe(false)
        expect(format.schema.required).toEqual(["name", "age", "nickname"])
        expect(asRecord(format.schema.properties).nickname).toEqual({ anyOf: [{ type: "string" }, { type: "null" }] })
      }))

    it.scoped("structured output: a union (non-object root) is wrapped as { value } and unwrapped", () =>
      Effect.gen(function*() {
        const Shape = Schema.Union(
          Schema.Struct({ kind: Schema.Literal("circle"), radius: Schema.Number }),
          Schema.Struct({ kind: Schema.Literal("square"), side: Schema.Number, label: Schema.optional(Schema.String) })
        )
        const server = yield* TestServer.make({
          replies: [TestServer.json({ value: { kind: "square", side: 2, label: null } })]
        })
        const response = yield* provide(server, LanguageModel.generateObject({ prompt: "Shape", schema: Shape }))
        expect(response.value).toEqual({ kind: "square", side: 2 })
        const [request] = yield* server.requests
        const format = kit.inspect.responseFormat(request!.body)
        expect(format?.strict).toBe(true)
        expect(format?.schema.required).toEqual(["value"])
        const value = asRecord(asRecord(format?.schema.properties).value)
        expect(Array.isArray(value.anyOf)).toBe(true)
        expect((value.anyOf as ReadonlyArray<JsonObject>).map((branch) => branch.required)).toEqual([
          ["kind", "radius"],
          ["kind", "side", "label"]
        ])
      }))

    it.scoped("structured output that fails the schema is a MalformedOutput error", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({ replies: [TestServer.json({ name: "Ada" })] })
        const error = yield* provide(
          server,
          LanguageModel.generateObject({ prompt: "Who?", schema: Person })
        ).pipe(Effect.flip)
        assert(AiError.isAiError(error))
        expect(error._tag).toBe("MalformedOutput")
      }))

    it.scoped("429 is retried after Retry-After (seconds), then succeeds", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [TestServer.error(429, "Rate limit reached", { retryAfter: 2 }), TestServer.text("ok")]
        })
        const { delays, exit } = yield* TestServer.driveTestClock(
          provide(server, LanguageModel.generateText({ prompt: "hi" }), { OPENAI_MAX_RETRIES: "2" })
        )
        assert(Exit.isSuccess(exit), "succeeds after the retry")
        expect(exit.value.text).toBe("ok")
        expect(delays).toEqual([2000])
        expect(yield* server.requests).toHaveLength(2)
      }))

    it.scoped("a streaming request is retried (429) before the stream starts", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [TestServer.error(429, "Rate limit reached", { retryAfter: 1 }), TestServer.text(["o", "k"])]
        })
        const { delays, exit } = yield* TestServer.driveTestClock(
          provide(server, LanguageModel.streamText({ prompt: "hi" }).pipe(Stream.runCollect))
        )
        assert(Exit.isSuccess(exit), "succeeds after the retry")
        expect([...exit.value].flatMap((part) => (part.type === "text-delta" ? [part.delta] : []))).toEqual(["o", "k"])
        expect(delays).toEqual([1000])
        expect((yield* server.requests).map((r) => r.stream)).toEqual([true, true])
      }))

    it.scoped("Retry-After as an HTTP date is honoured; a long Retry-After is capped", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [
            // the TestClock starts at the epoch
            TestServer.error(429, "slow down", { retryAfter: new Date(3000).toUTCString() }),
            TestServer.error(503, "overloaded", { retryAfter: 3600 }),
            TestServer.text("finally")
          ]
        })
        const { delays, exit } = yield* TestServer.driveTestClock(
          provide(server, LanguageModel.generateText({ prompt: "hi" }), {
            OPENAI_MAX_RETRIES: "2",
            OPENAI_RETRY_MAX_DELAY: "10 seconds"
          })
        )
        assert(Exit.isSuccess(exit))
        expect(exit.value.text).toBe("finally")
        expect(delays).toEqual([3000, 10_000])
        expect(yield* server.requests).toHaveLength(3)
      }))

    it.scoped("500 is retried with jittered exponential backoff, then fails with a typed error", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          handler: () => TestServer.error(500, "The server had an error")
        })
        const { delays, exit } = yield* TestServer.driveTestClock(
          provide(server, LanguageModel.generateText({ prompt: "hi" }), {
            OPENAI_MAX_RETRIES: "3",
            OPENAI_RETRY_BASE_DELAY: "100 millis"
          }).pipe(Effect.withRandom(Random.fixed([0.8, 0, 0.4])))
        )
        const error = failureOf(exit)
        assert(error._tag === "HttpResponseError", `got ${error._tag}`)
        expect(error.response.status).toBe(500)
        expect(error.description).toBe("The server had an error")
        // 100, 200, 400 ms, each less a random share of up to 25%: (1 - 0.25 * random)
        expect(delays).toEqual([80, 200, 360])
        expect(yield* server.requests).toHaveLength(4)
      }))

    it.scoped("backoff jitter comes from the Random service: two clients that fail together retry apart", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({ handler: () => TestServer.error(503, "overloaded") })
        const retry = (seed: string) =>
          TestServer.driveTestClock(
            provide(server, LanguageModel.generateText({ prompt: "hi" }), {
              OPENAI_MAX_RETRIES: "4",
              OPENAI_RETRY_BASE_DELAY: "1 second"
            }).pipe(Effect.withRandom(Random.make(seed)))
          )
        const a = (yield* retry("client a")).delays
        const b = (yield* retry("client b")).delays
        expect(a).toHaveLength(4)
        expect(a).not.toEqual(b)
        for (const delays of [a, b]) {
          delays.forEach((delay, retry) => {
            expect(delay).toBeGreaterThan(1000 * 2 ** retry * 0.75)
            expect(delay).toBeLessThanOrEqual(1000 * 2 ** retry)
          })
        }
      }))

    it.scoped("401 is a typed error with the API's message and status, not retried", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [TestServer.error(401, "Incorrect API key provided: sk-wrong.", { code: "invalid_api_key" })]
        })
        const { delays, exit } = yield* TestServer.driveTestClock(
          provide(server, LanguageModel.generateText({ prompt: "hi" }), { OPENAI_MAX_RETRIES: "3" })
        )
        const error = failureOf(exit)
        assert(error._tag === "HttpResponseError", `got ${error._tag}`)
        expect(error.response.status).toBe(401)
        expect(error.description).toBe("Incorrect API key provided: sk-wrong.")
        expect(error.message).toContain("Incorrect API key provided: sk-wrong.")
        expect(error.message).toContain("401")
        expect(JSON.parse(error.body ?? "{}")).toMatchObject({ error: { code: "invalid_api_key" } })
        expect(delays).toEqual([])
        expect(yield* server.requests).toHaveLength(1)
      }))

    it.scoped("400, 403 and 404 are typed errors, not retried", () =>
      Effect.gen(function*() {
        for (const status of [400, 403, 404]) {
          const server = yield* TestServer.make({ replies: [TestServer.error(status, `failure ${status}`)] })
          const error = yield* provide(server, LanguageModel.generateText({ prompt: "hi" }), {
            OPENAI_MAX_RETRIES: "3"
          }).pipe(Effect.flip)
          assert(error._tag === "HttpResponseError", `got ${error._tag}`)
          expect(error.response.status).toBe(status)
          expect(error.description).toBe(`failure ${status}`)
          expect(yield* server.requests).toHaveLength(1)
        }
      }))

    it.scoped("a non-OpenAI error body keeps its message in the typed error", () =>
      Effect.gen(function*() {
        const path = kit.api === "chat" ? "/v1/chat/completions" : "/v1/responses"
        const bodies = [
          // Express and similar servers
          [{ error: "Not Found", message: `Cannot POST ${path}` }, `Not Found: Cannot POST ${path}`],
          // FastAPI
          [{ detail: "Model 'gpt-test' not found" }, "Model 'gpt-test' not found"],
          [{ error: "model is required" }, "model is required"]
        ] as const
        for (const [body, description] of bodies) {
          const server = yield* TestServer.make({ replies: [TestServer.raw(JSON.stringify(body), { status: 404 })] })
          const error = yield* provide(server, LanguageModel.generateText({ prompt: "hi" })).pipe(Effect.flip)
          assert(error._tag === "HttpResponseError", `got ${error._tag}`)
          expect(error.response.status).toBe(404)
          expect(error.description).toBe(description)
          expect(error.message).toContain(description)
          expect(JSON.parse(error.body ?? "null")).toEqual(body)
        }
      }))

    it.scoped("missing OPENAI_API_KEY is a ConfigError naming the variable", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make()
        const error = yield* LanguageModel.generateText({ prompt: "hi" }).pipe(
          Effect.provide(kit.model("gpt-test")),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["OPENAI_BASE_URL", server.url]]))),
          Effect.flip
        )
        assert(ConfigError.isConfigError(error), "a ConfigError")
        expect(ConfigError.isMissingDataOnly(error)).toBe(true)
        expect(String(error)).toContain("OPENAI_API_KEY")
        expect(yield* server.requests).toHaveLength(0)
      }))

    it.scoped("each effect can use its own model id", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({ handler: (request) => TestServer.text(String(request.body.model)) })
        const ask = LanguageModel.generateText({ prompt: "which model?" }).pipe(Effect.map((r) => r.text))
        const client = server.clientLayer()
        const [a, b] = yield* Effect.all([
          ask.pipe(Effect.provide(kit.modelWithClient("model-a", client))),
          ask.pipe(Effect.provide(kit.modelWithClient("model-b", client)))
        ])
        expect([a, b]).toEqual(["model-a", "model-b"])
        expect((yield* server.requests).map((r) => r.body.model)).toEqual(["model-a", "model-b"])
      }))

    it.scopedLive("interrupting a streaming request aborts the HTTP request", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({ replies: [TestServer.text(["first ", "second"], { holdOpen: true })] })
        const firstDelta = yield* Deferred.make<string>()
        const fiber = yield* provide(
          server,
          LanguageModel.streamText({ prompt: "slow" }).pipe(
            Stream.runForEach((part) =>
              part.type === "text-delta" ? Deferred.succeed(firstDelta, part.delta) : Effect.void
            )
          )
        ).pipe(Effect.fork)
        expect(yield* Deferred.await(firstDelta)).toBe("first ")
        const [before] = yield* server.requests
        expect(before!.aborted).toBe(false)
        yield* Fiber.interrupt(fiber)
        const aborted = yield* server.awaitAborted(0).pipe(Effect.timeout("5 seconds"))
        expect(aborted.aborted).toBe(true)
      }))

    it.scopedLive("interrupting a pending non-streaming request aborts the HTTP request", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({ replies: [TestServer.hang()] })
        const fiber = yield* provide(server, LanguageModel.generateText({ prompt: "slow" })).pipe(Effect.fork)
        yield* server.awaitRequests(1).pipe(Effect.timeout("5 seconds"))
        yield* Fiber.interrupt(fiber)
        const aborted = yield* server.awaitAborted(0).pipe(Effect.timeout("5 seconds"))
        expect(aborted.aborted).toBe(true)
      }))

    it.scopedLive("a request that exceeds OPENAI_TIMEOUT is a typed transport error", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({ replies: [TestServer.hang()] })
        const error = yield* provide(server, LanguageModel.generateText({ prompt: "slow" }), {
          OPENAI_TIMEOUT: "200 millis",
          OPENAI_MAX_RETRIES: "0"
        }).pipe(Effect.flip, Effect.timeout("5 seconds"))
        assert(error._tag === "HttpRequestError", `got ${error._tag}`)
        expect(error.reason).toBe("Transport")
        expect(error.description).toMatch(/timed out/i)
        expect((yield* server.awaitAborted(0).pipe(Effect.timeout("5 seconds"))).aborted).toBe(true)
      }))
  })
