/**
 * Scenario 1 — a shopping list kept in the session state and written by two
 * agents' tools (agno's `state_with_agent`). The "Shopping Assistant" adds,
 * removes and lists items; the "List Manager" shows the list and can clear
 * it. Both reach the same typed state through their tool handlers
 * (`ShoppingList.tools.ts`); the scripted replies are in
 * `ShoppingList.offline.ts`.
 *
 * @since 0.1.0
 */
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, Step, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"
import { offlineModel } from "./ShoppingList.offline.js"
import {
  AddItem,
  ListItems,
  RemoveAllItems,
  RemoveItem,
  ShoppingList,
  ShoppingToolsLive
} from "./ShoppingList.tools.js"

export { itemsToAdd, itemsToRemove, offlineModel } from "./ShoppingList.offline.js"
export * from "./ShoppingList.tools.js"

// -- agents: each holds some of the tools --------------------------------------

export const shoppingAssistant = Agent.make({
  name: "Shopping Assistant",
  instructions: `You are a helpful shopping assistant.
You can help users manage their shopping list by adding, removing, and listing items.
Always use the provided tools to interact with the shopping list.
Be friendly and helpful in your responses.`,
  tools: Toolkit.make(AddItem, RemoveItem, ListItems)
})

export const listManager = Agent.make({
  name: "List Manager",
  instructions: `You are a list management specialist.
You can view the current shopping list and clear it when needed.
Always show the current list when asked.
Confirm actions clearly to the user.`,
  tools: Toolkit.make(ListItems, RemoveAllItems)
})

// -- workflow: the state and two agent steps ------------------------------------

export const shoppingWorkflow = Workflow.make({
  name: "Shopping List Workflow",
  state: ShoppingList,
  sessionState: { shopping_list: [] },
  steps: [
    Step.agent("manage_items", shoppingAssistant, { description: "Help manage shopping list items (add/remove)" }),
    Step.agent("view_list", listManager, { description: "View and manage the complete shopping list" })
  ]
})

// -- main: four requests on one session, the state after each -----------------

export const inputs = [
  "Please add milk, bread, and eggs to my shopping list.",
  "Add apples and bananas to the list, then show me the complete list.",
  "Remove bread from the list and show me what's left.",
  "Clear the entire shopping list and confirm it's empty."
] as const

const titles = ["Adding Items", "Adding More Items", "Removing Items", "Clearing List"]

export const scenario = Scenario.make({
  name: "shopping-list",
  cookbook: "state_with_agent",
  aliases: ["shopping", "shopping_list", "agent"],
  description: "Two agents' tools add, remove, list and clear a shopping list in the session state",
  workflows: [shoppingWorkflow],
  offlineModel,
  layer: ShoppingToolsLive
}, ({ db, dbOption, guide }) =>
  Effect.gen(function*() {
    const sessionId = Scenario.newSessionId("shopping")
    for (const [i, input] of inputs.entries()) {
      yield* Output.heading(`Example ${i + 1}: ${titles[i]}`, guide?.notes[i])
      yield* Workflow.stream(shoppingWorkflow, input, { sessionId }).pipe(Output.print)
      yield* Output.state("Workflow session state", yield* Workflow.getSessionState(shoppingWorkflow, sessionId))
    }
    yield* Output.say()
    yield* Output.note(`Stored as session ${sessionId} in ${db}. Inspect it with:`)
    yield* Output.note(`  npm start -- sessions show ${dbOption} ${sessionId}`)
  }))

export const main = scenario.main
