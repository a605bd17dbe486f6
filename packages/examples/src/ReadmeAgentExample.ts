import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, SessionState, SessionStore, Step, TestModel, Workflow } from "@sessionflow/core"
import { Effect, Layer, Schema } from "effect"

class Cart extends SessionState.Tag("Cart")<Cart>()({ items: Schema.Array(Schema.String) }) {}

const AddItem = Tool.make("add_item", {
  description: "Add an item to the cart",
  parameters: { item: Schema.String },
  success: Schema.String,
  dependencies: [Cart] // the handler reads and writes the session state
})
const CartTools = Toolkit.make(AddItem)
const CartToolsLive = CartTools.toLayer({
  add_item: ({ item }) => Cart.modify((s) => [`Added '${item}'.`, { items: [...s.items, item] }] as const)
})

const shopper = Agent.make({ name: "Shopper", instructions: "Use the tools.", tools: CartTools })

export const cartWorkflow = Workflow.make({
  name: "cart",
  state: Cart,
  sessionState: { items: [] },
  steps: [Step.agent("shop", shopper)]
})

// A scripted model plays the conversation: two tool calls in one turn, then a reply.
// Swap it for OpenAIChat.model("gpt-4o-mini") (from @sessionflow/openai) to use a real model.
const model = TestModel.layer([
  TestModel.toolCalls(["add_item", { item: "milk" }], ["add_item", { item: "eggs" }]),
  TestModel.text("Added milk and eggs.")
])

export const agentProgram = Effect.gen(function*() {
  const run = yield* Workflow.run(cartWorkflow, "Add milk and eggs", { sessionId: "cart-1" })
  const state = yield* Workflow.getSessionState(cartWorkflow, "cart-1")
  return { reply: run.content, items: state.items } // { reply: "Added milk and eggs.", items: ["milk", "eggs"] }
}).pipe(Effect.provide(Layer.mergeAll(CartToolsLive, model, SessionStore.layerMemory)))
