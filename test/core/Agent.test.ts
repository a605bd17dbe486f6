import { LanguageModel, Tool, Toolkit } from "@effect/ai"
import { assert, describe, expect, it } from "@effect/vitest"
import {
  Agent,
  SessionNamer,
  SessionState,
  SessionStore,
  Step,
  TestModel,
  Workflow,
  type WorkflowEvent
} from "@sessionflow/core"
import { Cause, Chunk, Effect, Exit, Layer, Option, Schema, Stream } from "effect"

// -- fixtures: the shopping list of scenario 1 ---------------------------------

class ShoppingList extends SessionState.Tag("test/ShoppingList")<ShoppingList>()({
  shopping_list: Schema.Array(Schema.String)
}) {}

const AddItem = Tool.make("add_item", {
  description: "Add an item to the shopping list",
  parameters: { item: Schema.String },
  success: Schema.String,
  dependencies: [ShoppingList]
})
const ListItems = Tool.make("list_items", {
  description: "List the shopping list",
  success: Schema.String,
  dependencies: [ShoppingList]
})
class OutOfStock extends Schema.TaggedError<OutOfStock>()("OutOfStock", { item: Schema.String }) {
  override get message() {
    return `'${this.item}' is out of stock`
  }
}
const OrderItem = Tool.make("order_item", {
  description: "Order an item from the shop",
  parameters: { item: Schema.String },
  success: Schema.String,
  failure: OutOfStock
})
const ShoppingTools = Toolkit.make(AddItem, ListItems, OrderItem)

const ShoppingToolsLive = ShoppingTools.toLayer({
  add_item: ({ item }) =>
    ShoppingList.modify((s) =>
      s.shopping_list.some((i) => i.toLowerCase() === item.toLowerCase())
        ? [`'${item}' is already in the shopping list.`, s] as const
        : [`Added '${item}' to the shopping list.`, { shopping_list: [...s.shopping_list, item] }] as const
    ),
  list_items: () =>
    Effect.map(ShoppingList.get, (s) =>
      s.shopping_list.length === 0
        ? "Shopping list is empty."
        : ["Shopping list:", ...s.shopping_list.map((i) => `- ${i}`)].join("\n")),
  order_item: ({ item }) => Effect.fail(new OutOfStock({ item }))
})

const assistant = Agent.make({
  name: "Shopping Assistant",
  instructions: ["You are a helpful shopping assistant.", "Always use the provided tools."],
  tools: ShoppingTools
})

const shopping = (steps: ReadonlyArray<Step.Any>) =>
  Workflow.make({
    name: "Shopping List Workflow",
    state: ShoppingList,
    sessionState: { shopping_list: [] },
    steps
  })

const shoppingWorkflow = Workflow.make({
  name: "Shopping List Workflow",
  state: ShoppingList,
  sessionState: { shopping_list: [] },
  steps: [Step.agent("manage_items", assistant)]
})

const env = (script: TestModel.Script) =>
  Layer.mergeAll(ShoppingToolsLive, SessionStore.layerMemory, TestModel.layer(script))

// -- a structured output agent (scenario 2) -------------------------------------

const JobApplication = Schema.Struct({
  company: Schema.String,
  role: Schema.String,
  url: Schema.optional(Schema.String),
  status: Schema.optionalWith(Schema.String, { default: () => "Applied" })
}).annotations({ identifier: "JobApplication" })

const extractor = Agent.make({
  name: "Application Extractor",
  instructions: "Extract the job application.",
  outputSchema: JobApplication
})

describe("Agent", () => {
  it.effect("runs a tool loop whose tools write the session state", () =>
    Effect.gen(function*() {
      const out = yield* Workflow.run(shoppingWorkflow, "Please add milk to my list.", { sessionId: "s" })
      expect(out.content).toBe("Added milk.")
      expect(out.state.shopping_list).toEqual(["milk"])
      const stored = yield* Workflow.getSessionState(shoppingWorkflow, "s")
      expect(stored.shopping_list).toEqual(["milk"])

      const requests = yield* TestModel.requests
      expect(requests).toHaveLength(2)
      expect(requests[0]!.agent).toBe("Shopping Assistant")
      expect(requests[0]!.system).toBe("You are a helpful shopping assistant.\nAlways use the provided tools.")
      expect(requests[0]!.lastUserMessage).toBe("Please add milk to my list.")
      expect(requests[0]!.tools).toEqual(["add_item", "list_items", "order_item"])
      expect(requests[1]!.toolResults).toEqual([
        { id: "call_0_0", name: "add_item", result: "Added 'milk' to the shopping list.", isFailure: false }
      ])
    }).pipe(Effect.provide(env([
      TestModel.toolCalls(["add_item", { item: "milk" }]),
      TestModel.text("Added milk.")
    ]))))

  it.effect("applies every tool call of one turn, in order", () =>
    Effect.gen(function*() {
      const out = yield* Workflow.run(shoppingWorkflow, "Please add milk, bread, and eggs.")
      expect(out.state.shopping_list).toEqual(["milk", "bread", "eggs"])
      const [, second] = yield* TestModel.requests
      expect(second!.toolResults.map((r) => r.result)).toEqual([
        "Added 'milk' to the shopping list.",
        "Added 'bread' to the shopping list.",
        "'Bread' is already in the shopping list.",
        "Added 'eggs' to the shopping list."
      ])
      expect(second!.turn).toBe(1)
    }).pipe(Effect.provide(env([
      TestModel.toolCalls(
        ["add_item", { item: "milk" }],
        ["add_item", { item: "bread" }],
        ["add_item", { item: "Bread" }],
        ["add_item", { item: "eggs" }]
      ),
      TestModel.text("Added milk, bread and eggs.")
    ]))))

  it.effect("returns bad tool arguments to the model as an error result and recovers", () =>
    Effect.gen(function*() {
      const out = yield* Workflow.run(shoppingWorkflow, "add milk")
      expect(out.state.shopping_list).toEqual(["milk"])
      const requests = yield* TestModel.requests
      const [error] = requests[1]!.toolResults
      expect(error!.isFailure).toBe(true)
      expect(error!.result).toContain("Invalid arguments for tool 'add_item'")
      expect(error!.result).toContain("[\"item\"]")
      expect(error!.result).toContain("is missing")
      // the error is in the conversation the model saw
      expect(TestModel.render(requests[1]!.prompt)).toContain(
        "tool: add_item failed: Invalid arguments for tool 'add_item'"
      )
      expect(requests[2]!.toolResults[0]).toMatchObject({
        isFailure: false,
        result: "Added 'milk' to the shopping list."
      })
    }).pipe(Effect.provide(env([
      TestModel.toolCalls(["add_item", { name: "milk" }]),
      TestModel.toolCalls(["add_item", { item: "milk" }]),
      TestModel.text("Added milk.")
    ]))))

  it.effect("answers a call of an unknown tool with an error result", () =>
    Effect.gen(function*() {
      const out = yield* Workflow.run(shoppingWorkflow, "buy milk")
      expect(out.content).toBe("I can only add items.")
      expect(out.state.shopping_list).toEqual(["milk"])
      const requests = yield* TestModel.requests
      expect(requests[1]!.toolResults).toEqual([
        {
          id: "call_0_0",
          name: "buy_item",
          isFailure: true,
          result: "Unknown tool 'buy_item'. Available tools: add_item, list_items, order_item."
        },
        { id: "call_0_1", name: "add_item", isFailure: false, result: "Added 'milk' to the shopping list." }
      ])
    }).pipe(Effect.provide(env([
      TestModel.toolCalls(["buy_item", { item: "milk" }], ["add_item", { item: "milk" }]),
      TestModel.text("I can only add items.")
    ]))))

  it.effect("answers an unknown tool while streaming, too", () =>
    Effect.gen(function*() {
      const events = yield* Workflow.stream(shoppingWorkflow, "buy milk").pipe(
        Stream.runCollect,
        Effect.map(Chunk.toArray)
      )
      const completed = events.filter((e) => e._tag === "ToolCallCompleted")
      expect(completed.map((e) => [e.toolName, e.isError])).toEqual([["buy_item", true], ["add_item", false]])
      const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.delta] : [])).join("")
      expect(text).toBe("I can only add items.")
    }).pipe(Effect.provide(env([
      TestModel.toolCalls(["buy_item", { item: "milk" }], ["add_item", { item: "milk" }]),
      TestModel.text("I can only add items.")
    ]))))

  it.effect("returns a failing handler's error to the model", () =>
    Effect.gen(function*() {
      const out = yield* Workflow.run(shoppingWorkflow, "order milk")
      expect(out.content).toBe("Milk is out of stock.")
      const requests = yield* TestModel.requests
      expect(requests[1]!.toolResults[0]).toMatchObject({
        isFailure: true,
        result: "Tool 'order_item' failed: 'milk' is out of stock"
      })
    }).pipe(Effect.provide(env([
      TestModel.toolCalls(["order_item", { item: "milk" }]),
      TestModel.text("Milk is out of stock.")
    ]))))

  it.effect("fails with MaxTurnsExceeded and commits no state change", () =>
    Effect.gen(function*() {
      const limited = Agent.make({ name: "Eager Adder", tools: ShoppingTools, maxTurns: 2 })
      const wf = shopping([Step.agent("manage_items", limited)])
      yield* Workflow.run(wf, "add tea", { sessionId: "limited" })
      const exit = yield* Effect.exit(Workflow.run(wf, "add milk and bread", { sessionId: "limited" }))
      assert(Exit.isFailure(exit))
      const error = Cause.failureOption(exit.cause).pipe(Option.getOrThrow)
      assert(error._tag === "MaxTurnsExceeded")
      expect(error.agent).toBe("Eager Adder")
      expect(error.message).toBe("Agent 'Eager Adder' exceeded its limit of 2 model turns and still asked for tools")
      // milk was added during the failed run, but nothing of it was committed
      const state = yield* Workflow.getSessionState(wf, "limited")
      expect(state.shopping_list).toEqual(["tea"])
      const history = yield* Workflow.getRunHistory(wf, "limited")
      expect(history.map((r) => r.status)).toEqual(["completed", "error"])
      // the last turn's calls were not executed
      expect(yield* TestModel.requests).toHaveLength(4)
    }).pipe(Effect.provide(env([
      TestModel.toolCalls(["add_item", { item: "tea" }]),
      TestModel.text("Added tea."),
      TestModel.toolCalls(["add_item", { item: "milk" }]),
      TestModel.toolCalls(["add_item", { item: "bread" }]),
      TestModel.text("never reached")
    ]))))

  it.effect("decodes structured output", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run(extractor, "Backend Engineer at Acme Robotics")
      expect(result.content).toEqual({ company: "Acme Robotics", role: "Backend Engineer", status: "Applied" })
      expect(result.turns).toBe(1)
      const [request] = yield* TestModel.requests
      expect(request!.structured).toBe(true)
      expect(request!.objectName).toBe("JobApplication")
      expect(request!.method).toBe("generateText")
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.object({ company: "Acme Robotics", role: "Backend Engineer" })
    ]))))

  it.effect("repairs a structured output once, telling the model the decode error", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run(extractor, "Backend Engineer at Acme Robotics")
      expect(result.content).toEqual({ company: "Acme Robotics", role: "Backend Engineer", status: "Applied" })
      expect(result.turns).toBe(2)
      const requests = yield* TestModel.requests
      expect(requests).toHaveLength(2)
      const repair = requests[1]!
      expect(repair.structured).toBe(true)
      expect(repair.lastUserMessage).toContain("could not be decoded")
      expect(repair.lastUserMessage).toContain("[\"role\"]")
      expect(repair.lastUserMessage).toContain("is missing")
      // the bad reply is part of the conversation
      expect(TestModel.render(repair.prompt)).toContain("assistant: {\"company\":\"Acme Robotics\"}")
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.object({ company: "Acme Robotics" }),
      TestModel.object({ company: "Acme Robotics", role: "Backend Engineer" })
    ]))))

  it.effect("fails with StructuredOutputError when the repair fails too", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Agent.run(extractor, "Backend Engineer at Acme Robotics"))
      assert(error._tag === "StructuredOutputError")
      expect(error.agent).toBe("Application Extractor")
      expect(error.text).toBe("{\"company\":42,\"role\":\"x\"}")
      expect(error.description).toContain("[\"company\"]")
      expect(error.message).toContain("Agent 'Application Extractor' did not produce a valid structured output")
      const requests = yield* TestModel.requests
      expect(requests).toHaveLength(2)
      expect(requests[1]!.lastUserMessage).toContain("The reply is not valid JSON")
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.text("Sure! Here it is."),
      TestModel.object({ company: 42, role: "x" })
    ]))))

  it.effect("gives a next agent step the structured object as JSON text, and the run input as context", () =>
    Effect.gen(function*() {
      const saver = Agent.make({ name: "Saver", instructions: "Save the application." })
      const wf = Workflow.make({
        name: "jobs",
        steps: [Step.agent("extract_application", extractor), Step.agent("save_application", saver)]
      })
      const out = yield* Workflow.run(wf, "Backend Engineer at Acme Robotics")
      expect(out.stepOutputs[0]!.content).toEqual({
        company: "Acme Robotics",
        role: "Backend Engineer",
        status: "Applied"
      })
      expect(out.content).toBe("Saved.")
      const requests = yield* TestModel.requests
      expect(requests[1]!.agent).toBe("Saver")
      expect(requests[1]!.lastUserMessage).toBe(
        JSON.stringify({ company: "Acme Robotics", role: "Backend Engineer", status: "Applied" })
      )
      expect(requests[1]!.system).toContain("Save the application.")
      expect(requests[1]!.system).toContain("Backend Engineer at Acme Robotics")
      expect(requests.map((r) => r.runInput)).toEqual([
        "Backend Engineer at Acme Robotics",
        "Backend Engineer at Acme Robotics"
      ])
      // the first step's message is the run input itself: no extra context
      expect(requests[0]!.system).toBe("Extract the job application.")
    }).pipe(Effect.provide(Layer.merge(
      SessionStore.layerMemory,
      TestModel.layer([
        TestModel.object({ company: "Acme Robotics", role: "Backend Engineer" }),
        TestModel.text("Saved.")
      ])
    ))))

  it.effect("accepts a JSON final reply of a tool loop as the structured output", () =>
    Effect.gen(function*() {
      const summarizer = Agent.make({
        name: "Summarizer",
        tools: ShoppingTools,
        outputSchema: Schema.Struct({ count: Schema.Number })
      })
      const wf = shopping([Step.agent("summary", summarizer)])
      const out = yield* Workflow.run(wf, "how many items?", { sessionState: { shopping_list: ["a", "b"] } })
      expect(out.content).toEqual({ count: 2 })
      expect((yield* TestModel.requests).map((r) => r.structured)).toEqual([false, false])
    }).pipe(Effect.provide(env([TestModel.toolCalls(["list_items", {}]), TestModel.object({ count: 2 })]))))

  it.effect("asks for structured output after a tool loop that ended in prose", () =>
    Effect.gen(function*() {
      const summarizer = Agent.make({
        name: "Summarizer",
        tools: ShoppingTools,
        outputSchema: Schema.Struct({ count: Schema.Number })
      })
      const result = yield* Agent.run(summarizer, "how many items?").pipe(
        Effect.provideServiceEffect(
          ShoppingList,
          SessionState.make<Schema.Schema.Type<typeof ShoppingList.schema>>({ shopping_list: ["a"] })
        )
      )
      expect(result.content).toEqual({ count: 1 })
      const requests = yield* TestModel.requests
      expect(requests.map((r) => r.structured)).toEqual([false, false, true])
      expect(requests[2]!.toolChoice).toBe("none")
    }).pipe(Effect.provide(Layer.merge(
      ShoppingToolsLive,
      TestModel.layer([
        TestModel.toolCalls(["list_items", {}]),
        TestModel.text("There is one item."),
        TestModel.object({ count: 1 })
      ])
    ))))

  it.effect("streams an agent step's events in order", () =>
    Effect.gen(function*() {
      const events = yield* Workflow.stream(shoppingWorkflow, "add milk").pipe(
        Stream.runCollect,
        Effect.map(Chunk.toArray)
      )
      const inner = events.filter((e) => !e._tag.startsWith("Run"))
      expect(inner.map((e) => e._tag)).toEqual([
        "StepStarted",
        "ToolCallStarted",
        "StateChanged",
        "ToolCallCompleted",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "StepCompleted"
      ])
      for (const e of inner) expect(e.path).toEqual(["manage_items"])
      const [started, call, changed, done] = inner as [
        WorkflowEvent.StepStarted,
        WorkflowEvent.ToolCallStarted,
        WorkflowEvent.StateChanged,
        WorkflowEvent.ToolCallCompleted
      ]
      expect(started.kind).toBe("agent")
      expect(call).toMatchObject({ toolName: "add_item", arguments: { item: "milk" } })
      expect(changed.changes).toEqual([{ op: "append", path: ["shopping_list"], items: ["milk"] }])
      expect(done).toMatchObject({ toolName: "add_item", result: "Added 'milk' to the shopping list.", isError: false })
      expect(inner.slice(4, 7).map((e) => (e as WorkflowEvent.TextDelta).delta)).toEqual([
        "Added ",
        "milk ",
        "for you."
      ])
      expect(inner[7]).toMatchObject({ _tag: "StepCompleted", content: "Added milk for you." })
      expect((yield* TestModel.requests).map((r) => r.method)).toEqual(["streamText", "streamText"])
    }).pipe(Effect.provide(env([
      TestModel.toolCalls(["add_item", { item: "milk" }]),
      TestModel.text(["Added ", "milk ", "for you."])
    ]))))

  it.effect("names a session through the model", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "article_creation",
        description: "Automated article creation from research to writing",
        steps: [Step.agent("write", Agent.make({ name: "Writer" }))]
      })
      yield* Workflow.run(wf, "Write an article about the benefits of renewable energy", { sessionId: "named" })
      const name = yield* Workflow.setSessionName(wf, "named", { autogenerate: true })
      expect(name).toBe("Renewable Energy Benefits Explained Clearly Today")
      expect(yield* Workflow.getSessionName(wf, "named")).toEqual(Option.some(name))
      const [, request] = yield* TestModel.requests
      expect(request!.system).toContain("at most 6 words")
      expect(request!.lastUserMessage).toContain("Write an article about the benefits of renewable energy")
      expect(request!.lastUserMessage).toContain("An article about renewables.")
      expect(request!.lastUserMessage).toContain("Automated article creation from research to writing")
    }).pipe(
      Effect.provide(SessionNamer.layerLanguageModel()),
      Effect.provide(Layer.merge(
        SessionStore.layerMemory,
        TestModel.layer([
          TestModel.text("An article about renewables."),
          TestModel.text("Title: \"Renewable Energy Benefits Explained Clearly Today For Everyone.\"")
        ])
      ))
    ))

  it.effect("uses an agent's own model instead of the one in context", () =>
    Effect.gen(function*() {
      const special = Agent.make({
        name: "Special",
        model: TestModel.layer([TestModel.text("from the agent's model")])
      })
      const plain = Agent.make({ name: "Plain" })
      const wf = Workflow.make({ name: "models", steps: [Step.agent("special", special), Step.agent("plain", plain)] })
      const out = yield* Workflow.run(wf, "hi")
      expect(out.stepOutputs.map((o) => o.content)).toEqual(["from the agent's model", "from the default model"])
      const requests = yield* TestModel.requests
      expect(requests.map((r) => r.agent)).toEqual(["Plain"])
    }).pipe(Effect.provide(Layer.merge(
      SessionStore.layerMemory,
      TestModel.layer([TestModel.text("from the default model")])
    ))))

  it.effect("runs outside of workflows and streams its own events", () =>
    Effect.gen(function*() {
      const Clock = Tool.make("get_time", { success: Schema.String })
      const ClockTools = Toolkit.make(Clock)
      const timeAgent = Agent.make({ name: "Clock", tools: ClockTools })
      const events = yield* Agent.stream(timeAgent, "what time is it?").pipe(
        Stream.runCollect,
        Effect.map(Chunk.toArray),
        Effect.provide(ClockTools.toLayer({ get_time: () => Effect.succeed("12:00") }))
      )
      expect(events.map((e) => e._tag)).toEqual([
        "ToolCallStarted",
        "ToolCallCompleted",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "Completed"
      ])
      expect(events.flatMap((e) => (e._tag === "TextDelta" ? [e.delta] : []))).toEqual(["It ", "is ", "12:00."])
      const last = events[5]!
      assert(last._tag === "Completed")
      expect(last.result.content).toBe("It is 12:00.")
      expect(last.result.turns).toBe(2)
      expect(TestModel.render(last.result.prompt)).toBe([
        "user: what time is it?",
        "assistant: call get_time({})",
        "tool: get_time returned: 12:00",
        "assistant: It is 12:00."
      ].join("\n"))
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.toolCalls(["get_time", {}]),
      TestModel.text("It is 12:00.")
    ]))))

  it.effect("sends the tools' own JSON schemas and descriptions to the provider", () =>
    Effect.gen(function*() {
      const seen: Array<ReadonlyArray<Tool.Any>> = []
      const model = yield* LanguageModel.make({
        generateText: (options) => {
          seen.push(options.tools)
          return Effect.succeed([{ type: "text", text: "ok" }])
        },
        streamText: () => Stream.empty
      })
      yield* Agent.run(assistant, "hi").pipe(
        Effect.provideService(LanguageModel.LanguageModel, model),
        Effect.provideServiceEffect(
          ShoppingList,
          SessionState.make<Schema.Schema.Type<typeof ShoppingList.schema>>({ shopping_list: [] })
        )
      )
      const sent = seen[0]!
      expect(sent.map((t) => t.name)).toEqual(["add_item", "list_items", "order_item"])
      expect(sent.map((t) => Tool.getJsonSchemaFromSchemaAst(t.parametersSchema.ast))).toEqual(
        [AddItem, ListItems, OrderItem].map((t) => Tool.getJsonSchemaFromSchemaAst(t.parametersSchema.ast))
      )
      expect(sent.map((t) => t.description)).toEqual([AddItem, ListItems, OrderItem].map((t) => t.description))
    }).pipe(Effect.provide(ShoppingToolsLive)))

  it.effect("sends an agent's model the same toolkit on every request of every run, with the current handlers", () =>
    Effect.gen(function*() {
      const toolkits: Array<unknown> = []
      const stock = yield* LanguageModel.make({
        generateText: (options) =>
          Effect.succeed(
            options.prompt.content.some((message) => message.role === "tool")
              ? [{ type: "text", text: "done" }]
              : [{ type: "tool-call", id: `c${toolkits.length}`, name: "list_items", params: {} }]
          ),
        streamText: () => Stream.empty
      })
      // a model that sees what the agent passes (providers may keep what they derive from a toolkit)
      const model: LanguageModel.Service = {
        ...stock,
        generateText: ((options: LanguageModel.GenerateTextOptions<{}>) => {
          toolkits.push(options.toolkit)
          return stock.generateText(options)
        }) as LanguageModel.Service["generateText"]
      }
      const listed = (
        items: ReadonlyArray<string>,
        handlers: Layer.Layer<Tool.HandlersFor<Toolkit.Tools<typeof ShoppingTools>>>
      ) =>
        Agent.run(assistant, "what is on the list?").pipe(
          Effect.map((result) =>
            result.prompt.content.flatMap((message) =>
              message.role === "tool" ? message.content.map((part) => part.result) : []
            )
          ),
          Effect.provide(handlers),
          Effect.provideService(LanguageModel.LanguageModel, model),
          Effect.provideServiceEffect(
            ShoppingList,
            SessionState.make<Schema.Schema.Type<typeof ShoppingList.schema>>({ shopping_list: items })
          )
        )
      expect(yield* listed(["milk"], ShoppingToolsLive)).toEqual(["Shopping list:\n- milk"])
      const otherHandlers = ShoppingTools.toLayer({
        add_item: () => Effect.succeed("no"),
        list_items: () => Effect.succeed("the other handler"),
        order_item: () => Effect.succeed("no")
      })
      // another run, with other handlers: they are the ones called
      expect(yield* listed([], otherHandlers)).toEqual(["the other handler"])
      expect(toolkits).toHaveLength(4)
      expect(toolkits[0]).toBeDefined()
      for (const toolkit of toolkits) expect(toolkit).toBe(toolkits[0])
    }))

  it.effect("propagates model errors as typed AiErrors", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Workflow.run(shoppingWorkflow, "add milk"))
      assert(error._tag === "UnknownError")
      expect(error.message).toContain("rate limited")
    }).pipe(Effect.provide(env([TestModel.fail("rate limited")]))))
})

// -- type-level checks (tsc -b) ------------------------------------------------

// the agent's requirements reach the workflow: the model, the toolkit's handlers
export const needs: Effect.Effect<
  unknown,
  unknown,
  LanguageModel.LanguageModel | Tool.HandlersFor<Toolkit.Tools<typeof ShoppingTools>> | SessionStore.SessionStore
> = Workflow.run(shoppingWorkflow, "x")

// @ts-expect-error the tool handlers (ShoppingToolsLive) are not provided
export const missingHandlers: Effect.Effect<unknown, unknown, never> = Workflow.run(shoppingWorkflow, "x").pipe(
  Effect.provide(Layer.merge(SessionStore.layerMemory, TestModel.layer([])))
)

export const provided: Effect.Effect<unknown, unknown, never> = Workflow.run(shoppingWorkflow, "x").pipe(
  Effect.provide(Layer.mergeAll(ShoppingToolsLive, SessionStore.layerMemory, TestModel.layer([])))
)

// an agent with its own model does not need a LanguageModel from the context
export const ownModel: Effect.Effect<unknown, unknown, never> = Agent.run(
  Agent.make({ name: "x", model: TestModel.layer([]) }),
  "hi"
)

// @ts-expect-error a tool's dependency (the state tag) must be provided outside of a workflow
export const missingState: Effect.Effect<unknown, unknown, LanguageModel.LanguageModel> = Agent.run(assistant, "x")
  .pipe(
    Effect.provide(ShoppingToolsLive)
  )

// errors: MaxTurnsExceeded always, StructuredOutputError only with an output schema
export const catchable = Agent.run(extractor, "x").pipe(
  Effect.catchTags({ StructuredOutputError: () => Effect.void, MaxTurnsExceeded: () => Effect.void })
)
// @ts-expect-error an agent without an output schema cannot fail with StructuredOutputError
export const notCatchable = Agent.run(assistant, "x").pipe(Effect.catchTag("StructuredOutputError", () => Effect.void))
