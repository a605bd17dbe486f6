import { LanguageModel, Prompt } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import { OpenAIResponses } from "@sessionflow/openai"
import { Effect, Stream } from "effect"
import type { ResponseCreateParams, ResponseInputItem } from "openai/resources/responses/responses"
import { makeToolsLayer, type ProviderKit, providerSuite, Tools } from "./ProviderSuite.js"
import * as TestServer from "./TestServer.js"

const responsesBody = (body: TestServer.RecordedRequest["body"]) => body as unknown as ResponseCreateParams

const inputText = (item: ResponseInputItem): ReadonlyArray<{ role: string; text: string }> => {
  if (!("role" in item) || !("content" in item)) return []
  const content: unknown = item.content
  const text = typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((part: { readonly text?: unknown }) => (typeof part.text === "string" ? part.text : "")).join("")
    : ""
  return [{ role: item.role, text }]
}

const kit: ProviderKit = {
  name: "OpenAIResponses",
  api: "responses",
  model: (model) => OpenAIResponses.model(model),
  modelWithClient: (model, client) => OpenAIResponses.modelWithClient(model, client),
  inspect: {
    messages: (body) => {
      const input = responsesBody(body).input
      const items = typeof input === "string" ? [] : input ?? []
      return items.flatMap(inputText)
    },
    tools: (body) =>
      (responsesBody(body).tools ?? []).flatMap((tool) =>
        tool.type === "function"
          ? [{
            name: tool.name,
            description: tool.description ?? undefined,
            strict: tool.strict ?? undefined,
            parameters: tool.parameters ?? {}
          }]
          : []
      ),
    responseFormat: (body) => {
      const format = responsesBody(body).text?.format
      if (format?.type !== "json_schema") return undefined
      return { name: format.name, strict: format.strict ?? undefined, schema: format.schema }
    }
  }
}

providerSuite(kit)

describe("OpenAIResponses (Responses API wire format)", () => {
  const run = <A, E, R>(
    server: TestServer.Service,
    effect: Effect.Effect<A, E, R>,
    config?: OpenAIResponses.Config.Service
  ) => effect.pipe(Effect.provide(OpenAIResponses.modelWithClient("gpt-test", server.clientLayer(), config)))

  it.scoped("converts a multi-turn prompt with tool calls and tool results to input items", () =>
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
      expect(request!.path).toBe("/v1/responses")
      expect(responsesBody(request!.body).input).toEqual([
        { role: "system", content: "You add numbers." },
        { role: "user", content: [{ type: "input_text", text: "What is 2 + 40?" }] },
        { role: "assistant", content: "Let me add." },
        { type: "function_call", call_id: "call_1", name: "Add", arguments: "{\"a\":2,\"b\":40}" },
        { type: "function_call_output", call_id: "call_1", output: "42" }
      ])
    }))

  it.scoped("user images and PDFs become input_image / input_file parts", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({ replies: [TestServer.text("ok")] })
      yield* run(
        server,
        LanguageModel.generateText({
          prompt: [{
            role: "user",
            content: [
              { type: "file", mediaType: "image/png", data: new Uint8Array([1, 2, 3]) },
              { type: "file", mediaType: "application/pdf", fileName: "a.pdf", data: new Uint8Array([4]) }
            ]
          }]
        })
      )
      const [request] = yield* server.requests
      expect(responsesBody(request!.body).input).toEqual([{
        role: "user",
        content: [
          { type: "input_image", image_url: "data:image/png;base64,AQID", detail: "auto" },
          { type: "input_file", filename: "a.pdf", file_data: "data:application/pdf;base64,BA==" }
        ]
      }])
    }))

  it.scoped("sends tool_choice and model-level config; text.verbosity is kept next to the format", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({ replies: [TestServer.text("a"), TestServer.text("b")] })
      yield* run(
        server,
        LanguageModel.generateText({ prompt: "x", toolkit: Tools, toolChoice: { tool: "GetWeather" } }),
        { max_output_tokens: 64, text: { verbosity: "low" } }
      ).pipe(Effect.provide(makeToolsLayer([])))
      yield* run(
        server,
        LanguageModel.generateText({ prompt: "x" }).pipe(OpenAIResponses.withConfigOverride({ temperature: 0 }))
      )
      const [first, second] = (yield* server.requests).map((r) => responsesBody(r.body))
      expect(first!.tool_choice).toEqual({ type: "function", name: "GetWeather" })
      expect(first!.max_output_tokens).toBe(64)
      expect(first!.text).toEqual({ verbosity: "low" })
      expect(second!.temperature).toBe(0)
      expect(second!.tools).toBeUndefined()
    }))

  it.scoped("an incomplete response maps to finish reason length", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({
        replies: [
          TestServer.text("trunc", { finishReason: "length" }),
          TestServer.text("trunc", { finishReason: "length" })
        ]
      })
      const response = yield* run(server, LanguageModel.generateText({ prompt: "x" }))
      expect(response.finishReason).toBe("length")
      const parts = yield* run(server, LanguageModel.streamText({ prompt: "x" }).pipe(Stream.runCollect))
      const finish = [...parts].find((part) => part.type === "finish")
      assert(finish?.type === "finish")
      expect(finish.reason).toBe("length")
    }))

  it.scoped("an error event in the stream is a typed error", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({
        replies: [
          TestServer.sse([
            {
              event: "error",
              data: { type: "error", code: "server_error", message: "Something broke", param: null, sequence_number: 0 }
            }
          ])
        ]
      })
      const error = yield* run(server, LanguageModel.streamText({ prompt: "x" }).pipe(Stream.runDrain)).pipe(
        Effect.flip
      )
      assert(error._tag === "UnknownError", `got ${error._tag}`)
      expect(error.description).toContain("Something broke")
    }))

  it.scoped("refusals are returned as text with refusal metadata", () =>
    Effect.gen(function*() {
      const server = yield* TestServer.make({ replies: [TestServer.message({ refusal: "I can't help with that." })] })
      const response = yield* run(server, LanguageModel.generateText({ prompt: "x" }))
      expect(response.text).toBe("I can't help with that.")
      const part = response.content.find((p) => p.type === "text")
      expect(part?.metadata).toEqual({ openai: { refusal: "I can't help with that." } })
    }))
})
