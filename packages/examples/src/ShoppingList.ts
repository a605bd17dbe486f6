/**
 * Scenario 1 — a shopping list kept in the session state and written by two
 * agents' tools (agno's `state_with_agent`). The "Shopping Assistant" adds,
 * removes and lists items; the "List Manager" shows the list and can clear
 * it. Both reach the same typed state through their tool handlers.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, SessionState, Step, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"
import { offlineModel } from "./ShoppingList.offline.js"

export { itemsToAdd, itemsToRemove, offlineModel } from "./ShoppingList.offline.js"

// -- state -------------------------------------------------------------------

export class ShoppingList extends SessionState.Tag("@sessionflow/examples/ShoppingList")<ShoppingList>()({
  shopping_list: Schema.Array(Schema.String)
}) {}

// -- tools -------------------------------------------------------------------

export const AddItem = Tool.make("add_item", {
  description: "Add an item to the shopping list (duplicates are ignored, case-insensitively).",
  parameters: { item: Schema.String.annotations({ description: "The item to add, e.g. 'milk'" }) },
  success: Schema.String,
  dependencies: [ShoppingList]
})
export const RemoveItem = Tool.make("remove_item", {
  description: "Remove an item from the shopping list (case-insensitive match).",
  parameters: { item: Schema.String.annotations({ description: "The item to remove" }) },
  success: Schema.String,
  dependencies: [ShoppingList]
})
export const ListItems = Tool.make("list_items", {
  description: "List every item on the shopping list.",
  success: Schema.String,
  dependencies: [ShoppingList]
})
export const RemoveAllItems = Tool.make("remove_all_items", {
  description: "Remove every item from the shopping list.",
  success: Schema.String,
  dependencies: [ShoppingList]
})

// one handler layer for the tools of both agents
export const ShoppingTools = Toolkit.make(AddItem, RemoveItem, ListItems, RemoveAllItems)

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

export const renderList = (items: ReadonlyArray<string>): string =>
  items.length === 0 ? "Shopping list is empty." : `Shopping list:\n${items.map((i) => `- ${i}`).join("\n")}`

export const ShoppingToolsLive = ShoppingTools.toLayer({
  add_item: ({ item }) =>
    ShoppingList.modify((s) =>
      s.shopping_list.some((existing) => same(existing, item))
        ? [`'${item}' is already in the shopping list.`, s]
        : [`Added '${item}' to the shopping list.`, { shopping_list: [...s.shopping_list, item] }]
    ),
  remove_item: ({ item }) =>
    ShoppingList.modify((s) => {
      if (s.shopping_list.length === 0) return [`Shopping list is empty. Cannot remove '${item}'.`, s]
      const index = s.shopping_list.findIndex((existing) => same(existing, item))
      if (index === -1) return [`'${item}' not found in the shopping list.`, s]
      const shopping_list = s.shopping_list.filter((_, i) => i !== index)
      return [`Removed '${s.shopping_list[index]}' from the shopping list.`, { shopping_list }]
    }),
  list_items: () => Effect.map(ShoppingList.get, (s) => renderList(s.shopping_list)),
  remove_all_items: () => ShoppingList.modify(() => ["Removed all items from the shopping list.", { shopping_list: [] }])
})

// -- agents ------------------------------------------------------------------

export const shoppingAssistant = Agent.make({
  name: "Shopping Assistant",
  instructions: [
    "You are a helpful shopping assistant.",
    "You can help users manage their shopping list by adding, removing, and listing items.",
    "Always use the provided tools to interact with the shopping list.",
    "Be friendly and helpful in your responses."
  ],
  tools: Toolkit.make(AddItem, RemoveItem, ListItems)
})

export const listManager = Agent.make({
  name: "List Manager",
  instructions: [
    "You are a list management specialist.",
    "You can view the current shopping list and clear it when needed.",
    "Always show the current list when asked.",
    "Confirm actions clearly to the user."
  ],
  tools: Toolkit.make(ListItems, RemoveAllItems)
})

// -- workflow ----------------------------------------------------------------

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
  name: "shopping-list", cookbook: "state_with_agent", aliases: ["shopping", "shopping_list", "agent"],
  description: "Two agents' tools add, remove, list and clear a shopping list in the session state",
  workflows: [shoppingWorkflow], offlineModel, layer: ShoppingToolsLive
}, ({ db, dbOption, guide }) =>
  Effect.gen(function*() {
    if (guide !== undefined) yield* Output.say(guide.intro(db))
    const sessionId = Scenario.newSessionId("shopping")
    for (const [i, input] of inputs.entries()) {
      const heading = `Example ${i + 1}: ${titles[i]}`
      const state = yield* Scenario.showRun(shoppingWorkflow, input, { heading, note: guide?.notes[i], sessionId })
      yield* Output.state("Workflow session state", state)
    }
    yield* Output.say()
    yield* Output.note(`Stored as session ${sessionId} in ${db}. Inspect it with:`)
    yield* Output.note(`  npm start -- sessions show ${dbOption} ${sessionId}`)
    if (guide !== undefined) yield* Output.note(guide.outro)
  }))

export const main = scenario.main
