import { LanguageModel, Prompt } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import { OpenAIChat } from "@sessionflow/openai"
import { Effect, Schema, Stream } from "effect"
import type {
  ChatCompletionCreateParams,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam
} from "openai/resources/chat/completions"
import { type InspectedTool, makeToolsLayer, type ProviderKit, providerSuite, Tools } from "./ProviderSuite.js"
import * as TestServer from "./TestServer.js"

const chatBody = (body: TestServer.RecordedRequest["body"]) => body as unknown as ChatCompletionCreateParams

const messageText = (message: ChatCompletionMessageParam): string =>
  typeof message.content === "string"
    ? message.content
    : (message.content ?? []).map((part) => ("text" in part ? part.text : "")).join("")

const kit: ProviderKit = {
  name: "OpenAIChat",
  api: "chat",
  model: (model) => OpenAIChat.model(model),
  modelWithClient: (model, client) => OpenAIChat.modelWithClient(model, client),
  inspect: {
    messages: (body) => chatBody(body).messages.map((m) => ({ role: m.role, text: messageText(m) })),
    tools: (body) =>
      (chatBody(body).tools ?? []).map((tool): InspectedTool => {
        const fn = (tool as ChatCompletionFunctionTool).function
        return {
          name: fn.name,
          description: fn.description,
          strict: fn.strict ?? undefined,
          parameters: fn.parameters ?? {}
        }
      }),
    responseFormat: (body) => {
      const format = chatBody(body).response_format
      if (format?.type !== "json_schema") return undefined
      return {
        name: format.json_schema.name,
        strict: format.json_schema.strict ?? undefined,
        schema: format.json_schema.schema ?? {}
      }
    }
  }
}

providerSuite(kit)

describe("OpenAIChat (Chat Completions wire format)", () => {
  const run = <A, E, R>(
    server: TestServer.Service,
    effect: Effect.Effect<A, E, R>,
    config?: OpenAIChat.Config.Service
  ) => effect.pipe(Effect.provide(OpenAIChat.modelWithClient("gpt-test", server.clientLayer(), config)))

  it.scoped("converts a multi-turn prompt with tool calls and tool results", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({ replies: [TestServer.text("done")] })
      const prompt = Prompt.make([
        { role: "system", content: "You add numbers." },
        { role: "user", content: "What is 2 + 40?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Let me add." },
            { type: "tool-call", id: "call_1", name: "Add", params: { a: 2, b: 40 } }
          ]
        },
        {
          role: "tool",
          content: [{
            type: "tool-result",
            id: "call_1",
            name: "Add",
            result: 42,
            isFailure: false,
            providerExecuted: false
          }]
        }
      ])
      yield* run(server, LanguageModel.generateText({ prompt }))
      const [request] = yield* server.requests
      expect(chatBody(request!.body).messages).toEqual([
        { role: "system", content: "You add numbers." },
        { role: "user", content: "What is 2 + 40?" },
        {
          role: "assistant",
          content: "Let me add.",
          tool_calls: [{ id: "call_1", type: "function", function: { name: "Add", arguments: "{\"a\":2,\"b\":40}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "42" }
      ])
    }))

  it.scoped("user images become image_url parts; unsupported files are MalformedInput", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({ replies: [TestServer.text("a cat")] })
      yield* run(
        server,
        LanguageModel.generateText({
          prompt: [{
            role: "user",
            content: [
              { type: "text", text: "What is this?" },
              { type: "file", mediaType: "image/png", data: new Uint8Array([1, 2, 3]) },
              { type: "file", mediaType: "image/jpeg", data: new URL("https://example.com/cat.jpg") }
            ]
          }]
        })
      )
      const [request] = yield* server.requests
      expect(chatBody(request!.body).messages).toEqual([{
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AQID" } },
          { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } }
        ]
      }])
      const error = yield* run(
        server,
        LanguageModel.generateText({
          prompt: [{ role: "user", content: [{ type: "file", mediaType: "audio/wav", data: new Uint8Array([1]) }] }]
        })
      ).pipe(Effect.flip)
      assert(error._tag === "MalformedInput", `got ${error._tag}`)
      expect(yield* server.requests).toHaveLength(1)
    }))

  it.scoped("sends tool_choice, stream_options and model-level config", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({
        replies: [TestServer.text("a"), TestServer.text("b"), TestServer.text("c")]
      })
      yield* run(
        server,
        LanguageModel.generateText({ prompt: "x", toolkit: Tools, toolChoice: { tool: "Add" } }),
        { temperature: 0.25 }
      ).pipe(Effect.provide(makeToolsLayer([])))
      yield* run(server, LanguageModel.streamText({ prompt: "x" }).pipe(Stream.runDrain))
      yield* run(
        server,
        LanguageModel.generateText({ prompt: "x", toolkit: Tools }).pipe(
          OpenAIChat.withConfigOverride({ max_completion_tokens: 7 })
        )
      ).pipe(Effect.provide(makeToolsLayer([])))
      const [first, second, third] = (yield* server.requests).map((r) => chatBody(r.body))
      expect(first!.tool_choice).toEqual({ type: "function", function: { name: "Add" } })
      expect(first!.temperature).toBe(0.25)
      expect(second!.stream).toBe(true)
      expect((second as { stream_options?: unknown }).stream_options).toEqual({ include_usage: true })
      expect(third!.tool_choice).toBe("auto")
      expect(third!.max_completion_tokens).toBe(7)
    }))

  it.scoped("strictJsonSchema: false sends non-strict tools and formats", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({ replies: [TestServer.json({ n: 1 })] })
      const response = yield* run(
        server,
        LanguageModel.generateObject({ prompt: "x", schema: Schema.Struct({ n: Schema.Number }) }),
        { strictJsonSchema: false }
      )
      expect(response.value).toEqual({ n: 1 })
      const [request] = yield* server.requests
      const format = chatBody(request!.body).response_format
      assert(format?.type === "json_schema")
      expect(format.json_schema.strict).toBe(false)
    }))

  it.scoped("a schema strict mode cannot express (a record) is sent with strict: false", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({ replies: [TestServer.json({ scores: { a: 1 } })] })
      const response = yield* run(
        server,
        LanguageModel.generateObject({
          prompt: "x",
          schema: Schema.Struct({ scores: Schema.Record({ key: Schema.String, value: Schema.Number }) })
        })
      )
      expect(response.value).toEqual({ scores: { a: 1 } })
      const [request] = yield* server.requests
      const format = chatBody(request!.body).response_format
      assert(format?.type === "json_schema")
      expect(format.json_schema.strict).toBe(false)
      expect(format.json_schema.schema).toMatchObject({
        properties: { scores: { additionalProperties: { type: "number" } } }
      })
    }))

  it.scoped("an error inside a 200 stream is a typed error", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({
        replies: [
          TestServer.sse([
            {
              data: {
                id: "x",
                object: "chat.completion.chunk",
                created: 1,
                model: "m",
                choices: [{ index: 0, delta: { content: "par" }, finish_reason: null }]
              }
            },
            { data: { error: { message: "The model is overloaded", type: "server_error" } } }
          ])
        ]
      })
      const error = yield* run(server, LanguageModel.streamText({ prompt: "x" }).pipe(Stream.runDrain)).pipe(
        Effect.flip
      )
      assert(error._tag === "UnknownError", `got ${error._tag}`)
      expect(error.description).toContain("The model is overloaded")
    }))

  it.scoped("a stream without finish_reason or usage still yields the assembled tool call and a finish part", () =>
    Effect.gen(function*() {
      const chunk = (delta: Record<string, unknown>) => ({
        data: {
          id: "x",
          object: "chat.completion.chunk",
          created: 1,
          model: "m",
          choices: [{ index: 0, delta, finish_reason: null }]
        }
      })
      const server = yield* TestServer.make({
        replies: [
          TestServer.sse([
            chunk({ tool_calls: [{ index: 0, id: "t1", type: "function", function: { name: "GetWeather" } }] }),
            chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"city\":" } }] }),
            chunk({ tool_calls: [{ index: 0, function: { arguments: "\"Lima\"}" } }] }),
            { data: "[DONE]" }
          ])
        ]
      })
      const parts = yield* run(
        server,
        LanguageModel.streamText({ prompt: "x", toolkit: Tools, disableToolCallResolution: true }).pipe(
          Stream.runCollect
        )
      ).pipe(Effect.provide(makeToolsLayer([])), Effect.map((c) => [...c]))
      const call = parts.find((part) => part.type === "tool-call")
      assert(call?.type === "tool-call")
      expect([call.id, call.name, call.params]).toEqual(["t1", "GetWeather", { city: "Lima" }])
      const finish = parts[parts.length - 1]
      assert(finish?.type === "finish")
      expect(finish.reason).toBe("tool-calls")
    }))

  it.scoped("invalid tool call arguments are a MalformedOutput error", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({
        replies: [TestServer.toolCalls([{ name: "GetWeather", arguments: "{\"city\": oops" }])]
      })
      const error = yield* run(
        server,
        LanguageModel.generateText({ prompt: "x", toolkit: Tools })
      ).pipe(Effect.provide(makeToolsLayer([])), Effect.flip)
      assert(error._tag === "MalformedOutput", `got ${error._tag}`)
      expect(error.description).toContain("GetWeather")
    }))
})
