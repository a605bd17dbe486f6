/**
 * Replies that third-party OpenAI-compatible servers send and OpenAI does not:
 * each is a typed `AiError` (never a defect), and tool arguments the agent
 * cannot use go back to the model as a tool error it can recover from. Both
 * APIs, streamed and not, over real HTTP against the local TestServer.
 */
import { AiError, LanguageModel, Tool, Toolkit } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow, type WorkflowEvent } from "@sessionflow/core"
import { OpenAIChat, type OpenAIClient, OpenAIResponses } from "@sessionflow/openai"
import { Cause, Chunk, Effect, Exit, type Layer, Option, Schema, Stream } from "effect"
import { makeToolsLayer, Tools } from "./ProviderSuite.js"
import { CartToolsLive, shoppingWorkflow } from "./Shopping.js"
import * as TestServer from "./TestServer.js"

interface Kit {
  readonly name: "OpenAIChat" | "OpenAIResponses"
  readonly modelWithClient: (
    client: Layer.Layer<OpenAIClient.OpenAIClient>
  ) => Layer.Layer<LanguageModel.LanguageModel>
}

const kits: ReadonlyArray<Kit> = [
  { name: "OpenAIChat", modelWithClient: (client) => OpenAIChat.modelWithClient("gpt-test", client) },
  { name: "OpenAIResponses", modelWithClient: (client) => OpenAIResponses.modelWithClient("gpt-test", client) }
]

/** The typed failure of an exit; fails the test on success, defects and interruptions. */
const typedFailure = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert(Exit.isFailure(exit), "expected a failure")
  const failure = Cause.failureOption(exit.cause)
  assert(Option.isSome(failure), `expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return failure.value
}

const malformed = <A, E>(exit: Exit.Exit<A, E>): AiError.MalformedOutput => {
  const error = typedFailure(exit)
  assert(AiError.isAiError(error), `expected an AiError, got ${String(error)}`)
  assert(error._tag === "MalformedOutput", `expected MalformedOutput, got ${error._tag}: ${error.message}`)
  return error
}

/** Replaces a Chat Completions body's choices with one choice carrying `message`. */
const chatChoice = (message: object | undefined, finishReason: string) => (body: Record<string, unknown>) => ({
  ...body,
  choices: [{ index: 0, finish_reason: finishReason, ...(message === undefined ? {} : { message }) }]
})

const Now = Tool.make("Now", { description: "The current time", success: Schema.String })
const Clock = Toolkit.make(Now)
const ClockLive = Clock.toLayer({ Now: () => Effect.succeed("noon") })

/** A streamed (`streamText`) or single (`generateText`) call, collected to its tool calls and results. */
type Mode = "generate" | "stream"
const modes: ReadonlyArray<Mode> = ["generate", "stream"]

const ask = <Tools extends Record<string, Tool.Any>>(mode: Mode, toolkit: Toolkit.Toolkit<Tools>) => {
  if (mode === "generate") {
    return Effect.map(LanguageModel.generateText({ prompt: "go", toolkit }), (response) => ({
      calls: response.toolCalls.map((call) => ({ name: call.name, params: call.params as unknown })),
      results: response.toolResults.map((result) => result.result as unknown)
    }))
  }
  return Effect.map(Stream.runCollect(LanguageModel.streamText({ prompt: "go", toolkit })), (chunk) => {
    const parts = Chunk.toReadonlyArray(chunk)
    return {
      calls: parts.flatMap((part) =>
        part.type === "tool-call" ? [{ name: part.name, params: part.params as unknown }] : []
      ),
      results: parts.flatMap((part) => (part.type === "tool-result" ? [part.result as unknown] : []))
    }
  })
}

for (const kit of kits) {
  describe(`${kit.name}: malformed replies`, () => {
    const provide = <A, E, R>(server: TestServer.Service, effect: Effect.Effect<A, E, R>) =>
      effect.pipe(Effect.provide(kit.modelWithClient(server.clientLayer({ maxRetries: 0 }))))

    for (const mode of modes) {
      it.scoped(`${mode}: tool arguments sent as a JSON object are the arguments`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.toolCalls([{
                id: "c1",
                name: "GetWeather",
                arguments: { city: "Paris" },
                argumentsAsObject: true
              }])
            ]
          })
          const calls: Array<unknown> = []
          const result = yield* provide(server, ask(mode, Tools).pipe(Effect.provide(makeToolsLayer(calls))))
          expect(result.calls).toEqual([{ name: "GetWeather", params: { city: "Paris" } }])
          expect(result.results).toEqual(["Sunny in Paris"])
          expect(calls).toEqual([{ tool: "GetWeather", city: "Paris" }])
        }))

      it.scoped(`${mode}: a call without arguments (left out or null) of a tool without parameters runs`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.toolCalls([{ name: "Now" }]),
              TestServer.toolCalls([{ name: "Now", arguments: null }])
            ]
          })
          for (let i = 0; i < 2; i++) {
            const result = yield* provide(server, ask(mode, Clock).pipe(Effect.provide(ClockLive)))
            expect(result.calls).toEqual([{ name: "Now", params: {} }])
            expect(result.results).toEqual(["noon"])
          }
        }))

      it.scoped(`${mode}: missing or null arguments of a tool that needs some are MalformedOutput, not a defect`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.toolCalls([{ name: "GetWeather" }]),
              TestServer.toolCalls([{ name: "GetWeather", arguments: null }]),
              TestServer.toolCalls([{ name: "GetWeather", arguments: [1, 2], argumentsAsObject: true }])
            ]
          })
          for (let i = 0; i < 3; i++) {
            const exit = yield* provide(server, ask(mode, Tools).pipe(Effect.provide(makeToolsLayer([])), Effect.exit))
            malformed(exit)
          }
        }))
    }

    if (kit.name === "OpenAIChat") {
      it.scoped("generate: a choice without `message` is MalformedOutput naming what is missing", () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.text("hi", { rewrite: chatChoice(undefined, "stop") })
            ]
          })
          const error = malformed(yield* provide(server, Effect.exit(LanguageModel.generateText({ prompt: "x" }))))
          expect(error.module).toBe("OpenAIChat")
          expect(error.description).toContain("choices[0].message")
          expect(error.message).toContain("choices[0].message")
        }))

      it.scoped("generate: a tool call without a function name is MalformedOutput", () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.text("x", {
                rewrite: chatChoice(
                  { role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: {} }] },
                  "tool_calls"
                )
              })
            ]
          })
          const error = malformed(
            yield* provide(server, LanguageModel.generateText({ prompt: "x", toolkit: Tools })).pipe(
              Effect.provide(makeToolsLayer([])),
              Effect.exit
            )
          )
          expect(error.description).toContain("name")
        }))

      it.scoped("generate: content sent as an array of text parts is the text", () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.text("x", {
                rewrite: chatChoice(
                  { role: "assistant", content: [{ type: "text", text: "Hel" }, { type: "text", text: "lo" }] },
                  "stop"
                )
              })
            ]
          })
          const response = yield* provide(server, LanguageModel.generateText({ prompt: "x" }))
          expect(response.text).toBe("Hello")
        }))

      it.scoped("stream: a streamed tool call that never gets a name is MalformedOutput", () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.toolCalls([{ name: "GetWeather", arguments: { city: "Lima" } }], {
                rewrite: (data) => {
                  const choices = data.choices as Array<{ delta?: { tool_calls?: Array<{ function?: object }> } }>
                  for (const choice of choices ?? []) {
                    for (const call of choice.delta?.tool_calls ?? []) {
                      if (call.function !== undefined) {
                        const { name: _name, ...rest } = call.function as { name?: string }
                        call.function = rest
                      }
                    }
                  }
                  return data
                }
              })
            ]
          })
          const exit = yield* provide(
            server,
            LanguageModel.streamText({ prompt: "x", toolkit: Tools }).pipe(Stream.runDrain)
          ).pipe(Effect.provide(makeToolsLayer([])), Effect.exit)
          expect(malformed(exit).description).toContain("name")
        }))

      it.scoped(
        "stream: a reply that finishes with tool_calls but streamed none is MalformedOutput pointing at stream: false",
        () =>
          Effect.gen(function*() {
            const server = yield* TestServer.make({
              replies: [
                TestServer.toolCalls([{ name: "GetWeather", arguments: { city: "Lima" } }], {
                  streamToolCalls: false,
                  finishReason: "tool_calls"
                })
              ]
            })
            const exit = yield* provide(
              server,
              LanguageModel.streamText({ prompt: "x", toolkit: Tools }).pipe(Stream.runDrain)
            ).pipe(Effect.provide(makeToolsLayer([])), Effect.exit)
            expect(malformed(exit).description).toContain("stream: false")
          })
      )
    } else {
      it.scoped("generate: a response without `output` is MalformedOutput, not an UnknownError from the SDK", () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [TestServer.text("hi", { rewrite: ({ output: _output, ...body }) => body })]
          })
          const error = malformed(yield* provide(server, Effect.exit(LanguageModel.generateText({ prompt: "x" }))))
          expect(error.module).toBe("OpenAIResponses")
          expect(error.description).toContain("output")
        }))

      it.scoped("generate: a message item without `content` is MalformedOutput", () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.text("hi", {
                rewrite: (body) => ({
                  ...body,
                  output: [{ id: "m", type: "message", role: "assistant", status: "completed" }]
                })
              })
            ]
          })
          const error = malformed(yield* provide(server, Effect.exit(LanguageModel.generateText({ prompt: "x" }))))
          expect(error.description).toContain("output[0].content")
        }))

      it.scoped("stream: an output item event without its item is MalformedOutput", () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.text("hi", {
                rewrite: ({ item: _item, ...data }) => data
              })
            ]
          })
          const exit = yield* provide(
            server,
            LanguageModel.streamText({ prompt: "x" }).pipe(Stream.runDrain, Effect.exit)
          )
          expect(malformed(exit).description).toContain("item")
        }))

      it.scoped("stream: function calls listed in the completed response but never streamed are still returned", () =>
        Effect.gen(function*() {
          // a server that streams text events only, but reports the calls in `response.completed`
          const server = yield* TestServer.make({
            replies: [
              TestServer.toolCalls([{ id: "c1", name: "GetWeather", arguments: { city: "Lima" } }], {
                rewrite: (data) => {
                  const item = data.item as { readonly type?: unknown } | undefined
                  const type = String(data.type)
                  return type.startsWith("response.function_call") || item?.type === "function_call"
                    ? { type: "response.in_progress", response: {} }
                    : data
                }
              })
            ]
          })
          const calls: Array<unknown> = []
          const result = yield* provide(server, ask("stream", Tools).pipe(Effect.provide(makeToolsLayer(calls))))
          expect(result.calls).toEqual([{ name: "GetWeather", params: { city: "Lima" } }])
          expect(calls).toEqual([{ tool: "GetWeather", city: "Lima" }])
        }))

      it.scoped("generate and stream: a function call without a name is MalformedOutput", () =>
        Effect.gen(function*() {
          const dropName = (value: unknown): unknown => {
            if (Array.isArray(value)) return value.map(dropName)
            if (typeof value !== "object" || value === null) return value
            const record = value as Record<string, unknown>
            const out = Object.fromEntries(Object.entries(record).map(([k, v]) => [k, dropName(v)]))
            if (record.type === "function_call") delete out.name
            return out
          }
          const reply = TestServer.toolCalls([{ name: "GetWeather", arguments: { city: "Lima" } }], {
            rewrite: (payload) => dropName(payload)
          })
          const server = yield* TestServer.make({ replies: [reply, reply] })
          const generated = yield* provide(server, LanguageModel.generateText({ prompt: "x", toolkit: Tools })).pipe(
            Effect.provide(makeToolsLayer([])),
            Effect.exit
          )
          expect(malformed(generated).description).toContain("name")
          const streamed = yield* provide(
            server,
            LanguageModel.streamText({ prompt: "x", toolkit: Tools }).pipe(Stream.runDrain)
          ).pipe(Effect.provide(makeToolsLayer([])), Effect.exit)
          expect(malformed(streamed).description).toContain("name")
        }))
    }
  })
}

// ---- in agents: bad arguments go back to the model ------------------------------

/** `Workflow.run` (the model is not streamed) or `Workflow.stream` (it is). */
const runOrStream = (mode: Mode, input: string, sessionId: string) =>
  mode === "generate"
    ? Effect.as(Workflow.run(shoppingWorkflow, input, { sessionId }), [] as ReadonlyArray<WorkflowEvent.WorkflowEvent>)
    : Effect.map(Stream.runCollect(Workflow.stream(shoppingWorkflow, input, { sessionId })), Chunk.toReadonlyArray)

const badArguments: ReadonlyArray<readonly [string, TestServer.ToolCallScript]> = [
  ["left out", { name: "add_item" }],
  ["null", { name: "add_item", arguments: null }],
  ["an object that fails the schema", { name: "add_item", arguments: { thing: "oats" }, argumentsAsObject: true }],
  ["a JSON array", { name: "add_item", arguments: [], argumentsAsObject: true }]
]

for (const kit of kits) {
  describe(`${kit.name}: malformed replies in agents`, () => {
    const provide = <A, E, R>(server: TestServer.Service, effect: Effect.Effect<A, E, R>) =>
      effect.pipe(
        Effect.provide(CartToolsLive),
        Effect.provide(kit.modelWithClient(server.clientLayer({ maxRetries: 0 }))),
        Effect.provide(SessionStore.layerMemory)
      )

    for (const mode of modes) {
      for (const [label, call] of badArguments) {
        it.scoped(`${mode}: arguments ${label} go back to the model as a tool error, and the loop recovers`, () =>
          Effect.gen(function*() {
            const server = yield* TestServer.make({
              replies: [
                TestServer.toolCalls([call]),
                TestServer.toolCalls([{ name: "add_item", arguments: { item: "oats" } }]),
                TestServer.text("Added oats.")
              ]
            })
            const state = yield* provide(
              server,
              Effect.zipRight(runOrStream(mode, "add oats", "s"), Workflow.getSessionState(shoppingWorkflow, "s"))
            )
            expect(state.items).toEqual(["oats"])
            const requests = yield* server.requests
            expect(requests.map((r) => r.stream)).toEqual(
              mode === "stream" ? [true, true, true] : [false, false, false]
            )
            expect(requests[1]!.rawBody).toContain("Invalid arguments for tool 'add_item'")
          }))
      }

      it.scoped(`${mode}: arguments sent as a valid JSON object are used as they are`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer.make({
            replies: [
              TestServer.toolCalls([{ name: "add_item", arguments: { item: "rye" }, argumentsAsObject: true }]),
              TestServer.text("Added rye.")
            ]
          })
          const state = yield* provide(
            server,
            Effect.zipRight(runOrStream(mode, "add rye", "s"), Workflow.getSessionState(shoppingWorkflow, "s"))
          )
          expect(state.items).toEqual(["rye"])
          expect(yield* server.requests).toHaveLength(2)
        }))

      it.scoped(
        `${mode}: an unusable reply fails the run with MalformedOutput, rendered readably in the record and events`,
        () =>
          Effect.gen(function*() {
            // Chat: a choice without `message` / a chunk that is not an object;
            // Responses: a response without `output` / an event without its item
            const rewrite = kit.name === "OpenAIChat"
              ? (mode === "generate"
                ? chatChoice(undefined, "stop")
                : (data: Record<string, unknown>) => ({ ...data, choices: [{ index: 0, delta: { content: 42 } }] }))
              : (mode === "generate"
                ? ({ output: _output, ...body }: Record<string, unknown>) => body
                : ({ item: _item, ...data }: Record<string, unknown>) => data)
            const server = yield* TestServer.make({ replies: [TestServer.text("hello", { rewrite })] })
            const result = yield* provide(
              server,
              Effect.gen(function*() {
                const events: Array<WorkflowEvent.WorkflowEvent> = []
                const exit = yield* Effect.exit(
                  mode === "generate"
                    ? Effect.asVoid(Workflow.run(shoppingWorkflow, "hello", { sessionId: "m" }))
                    : Stream.runForEach(
                      Workflow.stream(shoppingWorkflow, "hello", { sessionId: "m" }),
                      (event) => Effect.sync(() => events.push(event))
                    )
                )
                const history = yield* Workflow.getRunHistory(shoppingWorkflow, "m")
                return { exit, history, events }
              })
            )
            const error = malformed(result.exit)
            expect(error.module).toBe(kit.name)
            const expected = `MalformedOutput: ${kit.name}.${mode === "generate" ? "generateText" : "streamText"}: `
            expect(result.history.map((r) => r.status)).toEqual(["error"])
            const recorded = result.history[0]!.error!
            expect(recorded.startsWith(expected), recorded).toBe(true)
            expect(recorded).not.toContain("\"module\"")
            expect(recorded).not.toContain("\"cause\"")
            if (mode === "stream") {
              const failures = result.events.flatMap((e) =>
                e._tag === "RunFailed" || e._tag === "StepFailed" ? [e.error] : []
              )
              expect(failures).toHaveLength(2)
              for (const text of failures) expect(text).toBe(recorded)
            }
          })
      )
    }
  })
}
