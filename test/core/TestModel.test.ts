import { AiError, LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import { Agent, TestModel } from "@sessionflow/core"
import { Cause, Chunk, Effect, Exit, Option, Schema, Stream } from "effect"

const Add = Tool.make("add", { parameters: { a: Schema.Number, b: Schema.Number }, success: Schema.Number })
const Mul = Tool.make("mul", { parameters: { a: Schema.Number, b: Schema.Number }, success: Schema.Number })
const MathTools = Toolkit.make(Add, Mul)
const MathToolsLive = MathTools.toLayer({
  add: ({ a, b }) => Effect.succeed(a + b),
  mul: ({ a, b }) => Effect.succeed(a * b)
})

describe("TestModel", () => {
  it.effect("replies from a list, in order, and records every request", () =>
    Effect.gen(function*() {
      const first = yield* LanguageModel.generateText({ prompt: "one" })
      const second = yield* LanguageModel.generateText({
        prompt: [{ role: "system", content: "Be terse." }, { role: "user", content: "two" }]
      })
      expect([first.text, second.text]).toEqual(["first", "second"])
      expect(first.finishReason).toBe("stop")
      const requests = yield* TestModel.requests
      expect(requests.map((r) => [r.index, r.method, r.lastUserMessage, r.system, r.agent, r.runInput])).toEqual([
        [0, "generateText", "one", "", undefined, undefined],
        [1, "generateText", "two", "Be terse.", undefined, undefined]
      ])
      const prompts = yield* TestModel.prompts
      expect(prompts.map(TestModel.render)).toEqual(["user: one", "system: Be terse.\nuser: two"])
    }).pipe(Effect.provide(TestModel.layer([TestModel.text("first"), TestModel.text("second")]))))

  it.effect("streams text one word at a time, or in the given deltas", () =>
    Effect.gen(function*() {
      const deltas = (prompt: string) =>
        LanguageModel.streamText({ prompt }).pipe(
          Stream.filterMap((part) => (part.type === "text-delta" ? Option.some(part.delta) : Option.none())),
          Stream.runCollect,
          Effect.map(Chunk.toArray)
        )
      expect(yield* deltas("a")).toEqual(["Hello ", "streaming ", "world."])
      expect(yield* deltas("b")).toEqual(["Hel", "lo"])
      const parts = yield* LanguageModel.streamText({ prompt: "c" }).pipe(Stream.runCollect, Effect.map(Chunk.toArray))
      expect(parts.map((p) => p.type)).toEqual(["text-start", "text-delta", "text-end", "finish"])
      expect((yield* TestModel.requests).map((r) => r.method)).toEqual(["streamText", "streamText", "streamText"])
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.text("Hello streaming world."),
      TestModel.text(["Hel", "lo"]),
      TestModel.text("Hi")
    ]))))

  it.effect("replies with several tool calls at once", () =>
    Effect.gen(function*() {
      const toolkit = yield* MathTools
      const response = yield* LanguageModel.generateText({
        prompt: "compute",
        toolkit,
        disableToolCallResolution: true
      })
      expect(response.toolCalls.map((c) => [c.id, c.name, c.params])).toEqual([
        ["call_0_0", "add", { a: 1, b: 2 }],
        ["call_0_1", "mul", { a: 3, b: 4 }]
      ])
      expect(response.text).toBe("Let me compute.")
      expect(response.finishReason).toBe("tool-calls")
      const [request] = yield* TestModel.requests
      expect(request!.tools).toEqual(["add", "mul"])
      expect(request!.toolChoice).toBe("auto")
    }).pipe(
      Effect.provide(TestModel.layer([
        TestModel.textAndToolCalls("Let me compute.", ["add", { a: 1, b: 2 }], ["mul", { a: 3, b: 4 }])
      ])),
      Effect.provide(MathToolsLive)
    ))

  it.effect("replies with structured output", () =>
    Effect.gen(function*() {
      const response = yield* LanguageModel.generateObject({
        prompt: "extract",
        schema: Schema.Struct({ name: Schema.String, age: Schema.Number }),
        objectName: "person"
      })
      expect(response.value).toEqual({ name: "Ada", age: 36 })
      const [request] = yield* TestModel.requests
      expect(request!.structured).toBe(true)
      expect(request!.objectName).toBe("person")
    }).pipe(Effect.provide(TestModel.layer([TestModel.object({ name: "Ada", age: 36 })]))))

  it.effect("fails a call with the given error", () =>
    Effect.gen(function*() {
      const first = yield* Effect.flip(LanguageModel.generateText({ prompt: "x" }))
      assert(first._tag === "UnknownError")
      expect(first.description).toBe("overloaded")
      const second = yield* Effect.flip(Stream.runDrain(LanguageModel.streamText({ prompt: "y" })))
      assert(second._tag === "MalformedOutput")
      expect(second.description).toBe("garbage")
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.fail("overloaded"),
      TestModel.fail(new AiError.MalformedOutput({ module: "Provider", method: "stream", description: "garbage" }))
    ]))))

  it.effect("replies with raw provider parts", () =>
    Effect.gen(function*() {
      const response = yield* LanguageModel.generateText({ prompt: "x" })
      expect(response.reasoningText).toBe("thinking")
      expect(response.text).toBe("answer")
      expect(response.finishReason).toBe("length")
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.parts([
        { type: "reasoning", text: "thinking" },
        { type: "text", text: "answer" },
        { type: "finish", reason: "length", usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } }
      ])
    ]))))

  it.effect("fails clearly when the script runs out", () =>
    Effect.gen(function*() {
      yield* LanguageModel.generateText({ prompt: "one" })
      const exit = yield* Effect.exit(LanguageModel.generateText({ prompt: "two" }))
      assert(Exit.isFailure(exit))
      assert(Cause.isDie(exit.cause))
      expect(Cause.pretty(exit.cause)).toContain(
        "TestModel: the script has no reply for model call #2 (it has 1 reply); latest user message: \"two\""
      )
    }).pipe(Effect.provide(TestModel.layer([TestModel.text("only")]))))

  it.effect("lets a function pick replies from the latest message, tool results, turn and agent", () =>
    Effect.gen(function*() {
      const calculator = Agent.make({ name: "Calculator", instructions: "Compute.", tools: MathTools })
      const result = yield* Agent.run(calculator, "What is (1 + 2) * 4?")
      expect(result.content).toBe("The answer is 12.")
      const requests = yield* TestModel.requests
      expect(requests.map((r) => [r.agent, r.turn, r.toolResults.map((t) => t.result)])).toEqual([
        ["Calculator", 0, []],
        ["Calculator", 1, [3]],
        ["Calculator", 2, [12]]
      ])
      expect(requests.every((r) => r.lastUserMessage === "What is (1 + 2) * 4?" && r.system === "Compute.")).toBe(true)
    }).pipe(
      Effect.provide(TestModel.layer((request) => {
        const last = request.toolResults[0]
        if (last === undefined) return TestModel.toolCalls(["add", { a: 1, b: 2 }])
        if (last.name === "add") return Effect.succeed(TestModel.toolCalls(["mul", { a: last.result, b: 4 }]))
        return TestModel.text(`The answer is ${last.result}.`)
      })),
      Effect.provide(MathToolsLive)
    ))

  it.effect("accepts responders as list entries", () =>
    Effect.gen(function*() {
      const a = yield* LanguageModel.generateText({ prompt: "ping" })
      const b = yield* LanguageModel.generateText({ prompt: "pong" })
      expect([a.text, b.text]).toEqual(["fixed", "echo: pong (call 1)"])
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.text("fixed"),
      (request) => TestModel.text(`echo: ${request.lastUserMessage} (call ${request.index})`)
    ]))))

  it("renders prompts with tool calls and results", () => {
    const prompt = Prompt.make([
      { role: "system", content: "sys" },
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: [{ type: "text", text: "calling" }, { type: "tool-call", id: "1", name: "add", params: { a: 1 } }]
      },
      {
        role: "tool",
        content: [{
          type: "tool-result",
          id: "1",
          name: "add",
          result: "bad",
          isFailure: true,
          providerExecuted: false
        }]
      }
    ])
    expect(TestModel.render(prompt)).toBe(
      ["system: sys", "user: hi", "assistant: calling", "assistant: call add({\"a\":1})", "tool: add failed: bad"].join(
        "\n"
      )
    )
  })
})
