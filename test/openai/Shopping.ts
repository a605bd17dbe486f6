/**
 * The shopping-list agent workflow the OpenAI tests run against the local
 * TestServer: one agent step whose `add_item` tool appends to a typed state.
 */
import { Tool, Toolkit } from "@effect/ai"
import { Agent, SessionState, Step, Workflow } from "@sessionflow/core"
import { Schema } from "effect"

class Cart extends SessionState.Tag("test/openai/Cart")<Cart>()({
  items: Schema.Array(Schema.String)
}) {}

const AddItem = Tool.make("add_item", {
  description: "Add an item to the shopping list",
  parameters: { item: Schema.String },
  success: Schema.String,
  dependencies: [Cart]
})

const CartTools = Toolkit.make(AddItem)

export const CartToolsLive = CartTools.toLayer({
  add_item: ({ item }) =>
    Cart.modify((s) => [`Added '${item}' to the shopping list.`, { items: [...s.items, item] }] as const)
})

const shopper = Agent.make({
  name: "Shopping Assistant",
  instructions: "You are a helpful shopping assistant. Always use the provided tools.",
  tools: CartTools
})

export const shoppingWorkflow = Workflow.make({
  name: "shopping",
  state: Cart,
  sessionState: { items: [] },
  steps: [Step.agent("manage_items", shopper)]
})
