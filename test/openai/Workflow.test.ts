/**
 * Real agent workflows through the official openai SDK, over real HTTP, against
 * the local OpenAI-compatible TestServer — for both provider layers.
 */
import { AiError, type LanguageModel } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import { Agent, SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { OpenAIChat, OpenAIResponses } from "@sessionflow/openai"
import { Cause, Chunk, type ConfigError, Effect, Exit, type Layer, Option, Schema, Stream } from "effect"
import { inMemoryTracing } from "../tracing.js"
import { CartToolsLive, shoppingWorkflow } from "./Shopping.js"
import * as TestServer from "./TestServer.js"

const JobApplication = Schema.Struct({
  company: Schema.String,
  role: Schema.String,
  status: Schema.optionalWith(Schema.String, { default: () => "Applied" })
})

const extractor = Agent.make({
  name: "Extractor",
  instructions: "Extract the job application.",
  outputSchema: JobApplication
})

const extractWorkflow = Workflow.make({
  name: "extract",
  steps: [
    Step.agent("extract_application", extractor),
    Step.make("save", (input) => {
      const app = input.previousStepContent as typeof JobApplication.Type
      return Effect.as(
        SessionState.update((s) => ({ ...s, saved: `${app.role} at ${app.company} (${app.status})` })),
        `saved ${app.company}`
      )
    })
  ]
})

interface Kit {
  readonly name: string
  readonly model: (
    id: string,
    config?: { readonly stream?: boolean }
  ) => Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError>
}

const kits: ReadonlyArray<Kit> = [
  { name: "OpenAIChat", model: (id, config) => OpenAIChat.model(id, config) },
  { name: "OpenAIResponses", model: (id, config) => OpenAIResponses.model(id, config) }
]

const bodyText = (request: TestServer.RecordedRequest) => request.rawBody

for (const kit of kits) {
  describe(`${kit.name} in workflows`, () => {
    const provide = <A, E, R>(
      server: TestServer.Service,
      effect: Effect.Effect<A, E, R>,
      extra?: Readonly<Record<string, string>>
    ) =>
      effect.pipe(
        Effect.provide(CartToolsLive),
        Effect.provide(kit.model("gpt-test")),
        Effect.provide(SessionStore.layerMemory),
        Effect.withConfigProvider(server.config(extra))
      )

    it.scoped("an agent's tool loop writes session state (two tool calls in one turn)", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [
            TestServer.toolCalls([
              { name: "add_item", arguments: { item: "milk" } },
              { name: "add_item", arguments: { item: "bread" } }
            ]),
            TestServer.text("I added milk and bread.")
          ]
        })
        const result = yield* provide(
          server,
          Effect.gen(function*() {
            const run = yield* Workflow.run(shoppingWorkflow, "Please add milk and bread.", { sessionId: "s" })
            const state = yield* Workflow.getSessionState(shoppingWorkflow, "s")
            return { run, state }
          })
        )
        expect(result.state.items).toEqual(["milk", "bread"])
        expect(result.run.content).toBe("I added milk and bread.")
        const requests = yield* server.requests
        expect(requests).toHaveLength(2)
        expect(bodyText(requests[0]!)).toContain("Please add milk and bread.")
        expect(bodyText(requests[0]!)).toContain("add_item")
        // the second request carries both tool results back to the model
        expect(bodyText(requests[1]!)).toContain("Added 'milk' to the shopping list.")
        expect(bodyText(requests[1]!)).toContain("Added 'bread' to the shopping list.")
      }))

    it.scoped(
      "the token usage the server reports reaches the run: summed on its output, its record and its model calls' spans",
      () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.toolCalls([{ name: "add_item", arguments: { item: "milk" } }], {
                usage: { inputTokens: 11, outputTokens: 7 }
              }),
              TestServer.text("I added milk.", { usage: { inputTokens: 21, outputTokens: 3 } })
            ]
          })
          const { exporter, layer } = inMemoryTracing()
          const result = yield* provide(
            server,
            Effect.gen(function*() {
              const run = yield* Workflow.run(shoppingWorkflow, "add milk", { sessionId: "usage" })
              return { run, history: yield* Workflow.getRunHistory(shoppingWorkflow, "usage") }
            })
          ).pipe(Effect.provide(layer))
          const usage = { inputTokens: 32, outputTokens: 10, totalTokens: 42, modelCalls: 2 }
          // (the Responses API also reports reasoning and cached tokens: 0 here)
          expect(result.run.usage).toMatchObject(usage)
          expect(result.history[0]!.usage).toEqual(result.run.usage)
          const calls = exporter.getFinishedSpans().filter((span) => span.name === "Agent.modelCall")
          expect(
            calls.map((
              call
            ) => [call.attributes["gen_ai.usage.input_tokens"], call.attributes["gen_ai.usage.output_tokens"]])
          )
            .toEqual([[11, 7], [21, 3]])
          expect(calls.map((call) => call.attributes["gen_ai.response.model"])).toEqual(["gpt-test", "gpt-test"])
        })
    )

    it.scoped("a streamed run's usage (the stream's last chunk) reaches its record", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [TestServer.text("Hello there.", { usage: { inputTokens: 9, outputTokens: 4 } })]
        })
        const history = yield* provide(
          server,
          Effect.zipRight(
            Stream.runDrain(Workflow.stream(shoppingWorkflow, "hi", { sessionId: "streamed-usage" })),
            Workflow.getRunHistory(shoppingWorkflow, "streamed-usage")
          )
        )
        expect(history[0]!.usage).toMatchObject({ inputTokens: 9, outputTokens: 4, totalTokens: 13, modelCalls: 1 })
      }))

    it.scoped("tool arguments that are not JSON go back to the model as a tool error, and the loop recovers", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [
            TestServer.toolCalls([{ name: "add_item", arguments: "{\"item\": oops" }]),
            TestServer.toolCalls([{ name: "add_item", arguments: { item: "oats" } }]),
            TestServer.text("Added oats.")
          ]
        })
        const state = yield* provide(
          server,
          Effect.zipRight(
            Workflow.run(shoppingWorkflow, "add oats", { sessionId: "bad-json" }),
            Workflow.getSessionState(shoppingWorkflow, "bad-json")
          )
        )
        expect(state.items).toEqual(["oats"])
        const requests = yield* server.requests
        expect(requests).toHaveLength(3)
        expect(bodyText(requests[1]!)).toContain("Invalid arguments for tool 'add_item'")
        expect(bodyText(requests[1]!)).not.toContain("Added 'oats'")
      }))

    it.scoped("structured output is requested as a strict json_schema, decoded, and handed to the next step", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [TestServer.json({ company: "Acme Robotics", role: "Backend Engineer", status: null })]
        })
        const result = yield* provide(
          server,
          Effect.gen(function*() {
            const run = yield* Workflow.run(extractWorkflow, "Backend Engineer at Acme Robotics", { sessionId: "x" })
            const state = yield* Workflow.getSessionState(extractWorkflow, "x")
            return { run, state }
          })
        )
        expect(result.run.content).toBe("saved Acme Robotics")
        expect(result.state).toEqual({ saved: "Backend Engineer at Acme Robotics (Applied)" })
        const [request] = yield* server.requests
        const raw = bodyText(request!)
        expect(raw).toContain("json_schema")
        expect(raw).toContain("\"strict\":true")
      }))

    it.scoped("streamed model text reaches Workflow.stream as TextDelta events, before the step completes", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({ replies: [TestServer.text(["Hel", "lo ", "there"])] })
        const events = yield* provide(
          server,
          Stream.runCollect(Workflow.stream(shoppingWorkflow, "hi", { sessionId: "st" })).pipe(
            Effect.map(Chunk.toReadonlyArray)
          )
        )
        const tags = events.map((e) => (e._tag === "TextDelta" ? `delta:${e.delta}` : e._tag))
        expect(tags.filter((t) => t.startsWith("delta:"))).toEqual(["delta:Hel", "delta:lo ", "delta:there"])
        expect(tags.indexOf("delta:there")).toBeLessThan(tags.indexOf("StepCompleted"))
        const deltas = events.filter((e) => e._tag === "TextDelta")
        expect(deltas.every((e) => e.path.join("/") === "manage_items")).toBe(true)
        const [request] = yield* server.requests
        expect(request!.stream).toBe(true)
      }))

    it.scoped(
      "a server that cannot stream tool calls: with `stream: false` on the model, Workflow.stream still runs them",
      () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.toolCalls([{ name: "add_item", arguments: { item: "milk" } }], { streamToolCalls: false }),
              TestServer.text("I added milk.", { streamToolCalls: false })
            ]
          })
          const result = yield* Effect.gen(function*() {
            const events = yield* Stream.runCollect(Workflow.stream(shoppingWorkflow, "add milk", { sessionId: "ns" }))
            const state = yield* Workflow.getSessionState(shoppingWorkflow, "ns")
            return { events: Chunk.toReadonlyArray(events), state }
          }).pipe(
            Effect.provide(CartToolsLive),
            Effect.provide(kit.model("gpt-test", { stream: false })),
            Effect.provide(SessionStore.layerMemory),
            Effect.withConfigProvider(server.config())
          )
          expect(result.state.items).toEqual(["milk"])
          const requests = yield* server.requests
          expect(requests.map((r) => r.stream)).toEqual([false, false])
          // the events a streamed run promises are still there: the tool call, then the text (as one delta)
          const tags = result.events.map((e) => e._tag)
          expect(tags.indexOf("ToolCallCompleted")).toBeGreaterThan(tags.indexOf("ToolCallStarted"))
          expect(result.events.flatMap((e) => (e._tag === "TextDelta" ? [e.delta] : []))).toEqual(["I added milk."])
          expect(tags.indexOf("TextDelta")).toBeLessThan(tags.indexOf("StepCompleted"))
          expect(tags[tags.length - 1]).toBe("RunCompleted")
        })
    )

    it.scoped("a 429 is retried after Retry-After and the run lands", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [
            TestServer.error(429, "Rate limit reached", { retryAfter: 1 }),
            TestServer.toolCalls([{ name: "add_item", arguments: { item: "eggs" } }]),
            TestServer.text("Added eggs.")
          ]
        })
        const { delays, exit } = yield* TestServer.driveTestClock(
          provide(
            server,
            Effect.zipRight(
              Workflow.run(shoppingWorkflow, "add eggs", { sessionId: "r" }),
              Workflow.getSessionState(shoppingWorkflow, "r")
            ),
            { OPENAI_MAX_RETRIES: "2" }
          )
        )
        assert(Exit.isSuccess(exit))
        expect(exit.value.items).toEqual(["eggs"])
        expect(delays).toEqual([1000])
        expect(yield* server.requests).toHaveLength(3)
      }))

    it.scoped("a 401 fails the run with a typed error carrying the API's message; nothing is committed", () =>
      Effect.gen(function*() {
        const server = yield* TestServer.make({
          replies: [TestServer.error(401, "Incorrect API key provided: sk-wrong.")]
        })
        const result = yield* provide(
          server,
          Effect.gen(function*() {
            const exit = yield* Effect.exit(Workflow.run(shoppingWorkflow, "add milk", { sessionId: "u" }))
            const history = yield* Workflow.getRunHistory(shoppingWorkflow, "u")
            const state = yield* Workflow.getSessionState(shoppingWorkflow, "u")
            return { exit, history, state }
          })
        )
        assert(Exit.isFailure(result.exit))
        const error = Cause.failureOption(result.exit.cause)
        assert(Option.isSome(error))
        assert(AiError.isAiError(error.value))
        assert(error.value._tag === "HttpResponseError")
        expect(error.value.response.status).toBe(401)
        expect(error.value.message).toContain("Incorrect API key provided")
        expect(result.state.items).toEqual([])
        expect(result.history.map((r) => r.status)).toEqual(["error"])
        expect(yield* server.requests).toHaveLength(1)
      }))
  })
}
