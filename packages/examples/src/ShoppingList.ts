/**
 * Scenario 1 — a shopping list kept in the session state and written by two
 * agents' tools (agno's `state_with_agent`).
 *
 * The "Shopping Assistant" adds, removes and lists items; the "List Manager"
 * shows the list and can clear it. Both reach the same typed state through
 * their tool handlers.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, SessionState, Step, TestModel, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Offline from "./Offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

/**
 * @since 0.1.0
 * @category state
 */
export class ShoppingList extends SessionState.Tag("@sessionflow/examples/ShoppingList")<ShoppingList>()({
  shopping_list: Schema.Array(Schema.String)
}) {}

/**
 * @since 0.1.0
 * @category tools
 */
export const AddItem = Tool.make("add_item", {
  description: "Add an item to the shopping list (duplicates are ignored, case-insensitively).",
  parameters: { item: Schema.String.annotations({ description: "The item to add, e.g. 'milk'" }) },
  success: Schema.String,
  dependencies: [ShoppingList]
})

/**
 * @since 0.1.0
 * @category tools
 */
export const RemoveItem = Tool.make("remove_item", {
  description: "Remove an item from the shopping list (case-insensitive match).",
  parameters: { item: Schema.String.annotations({ description: "The item to remove" }) },
  success: Schema.String,
  dependencies: [ShoppingList]
})

/**
 * @since 0.1.0
 * @category tools
 */
export const ListItems = Tool.make("list_items", {
  description: "List every item on the shopping list.",
  success: Schema.String,
  dependencies: [ShoppingList]
})

/**
 * @since 0.1.0
 * @category tools
 */
export const RemoveAllItems = Tool.make("remove_all_items", {
  description: "Remove every item from the shopping list.",
  success: Schema.String,
  dependencies: [ShoppingList]
})

/**
 * The Shopping Assistant's tools.
 *
 * @since 0.1.0
 * @category tools
 */
export const AssistantTools = Toolkit.make(AddItem, RemoveItem, ListItems)

/**
 * The List Manager's tools.
 *
 * @since 0.1.0
 * @category tools
 */
export const ManagerTools = Toolkit.make(ListItems, RemoveAllItems)

/**
 * Every tool of the scenario, for one handler layer.
 *
 * @since 0.1.0
 * @category tools
 */
export const ShoppingTools = Toolkit.make(AddItem, RemoveItem, ListItems, RemoveAllItems)

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/**
 * Renders the list the way `list_items` replies.
 *
 * @since 0.1.0
 * @category tools
 */
export const renderList = (items: ReadonlyArray<string>): string =>
  items.length === 0 ? "Shopping list is empty." : `Shopping list:\n${items.map((i) => `- ${i}`).join("\n")}`

/**
 * The tool handlers: pure, atomic updates of the shared state.
 *
 * @since 0.1.0
 * @category tools
 */
export const ShoppingToolsLive = ShoppingTools.toLayer({
  add_item: ({ item }) =>
    ShoppingList.modify((s) =>
      s.shopping_list.some((existing) => same(existing, item))
        ? [`'${item}' is already in the shopping list.`, s]
        : [`Added '${item}' to the shopping list.`, { ...s, shopping_list: [...s.shopping_list, item] }]
    ),
  remove_item: ({ item }) =>
    ShoppingList.modify((s) => {
      if (s.shopping_list.length === 0) return [`Shopping list is empty. Cannot remove '${item}'.`, s]
      const index = s.shopping_list.findIndex((existing) => same(existing, item))
      if (index === -1) return [`'${item}' not found in the shopping list.`, s]
      return [
        `Removed '${s.shopping_list[index]}' from the shopping list.`,
        { ...s, shopping_list: s.shopping_list.filter((_, i) => i !== index) }
      ]
    }),
  list_items: () => ShoppingList.modify((s) => [renderList(s.shopping_list), s]),
  remove_all_items: () =>
    ShoppingList.modify((s) => ["Removed all items from the shopping list.", { ...s, shopping_list: [] }])
})

// -----------------------------------------------------------------------------
// agents and workflow
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category agents
 */
export const shoppingAssistant = Agent.make({
  name: "Shopping Assistant",
  instructions: [
    "You are a helpful shopping assistant.",
    "You can help users manage their shopping list by adding, removing, and listing items.",
    "Always use the provided tools to interact with the shopping list.",
    "Be friendly and helpful in your responses."
  ],
  tools: AssistantTools
})

/**
 * @since 0.1.0
 * @category agents
 */
export const listManager = Agent.make({
  name: "List Manager",
  instructions: [
    "You are a list management specialist.",
    "You can view the current shopping list and clear it when needed.",
    "Always show the current list when asked.",
    "Confirm actions clearly to the user."
  ],
  tools: ManagerTools
})

/**
 * @since 0.1.0
 * @category workflows
 */
export const shoppingWorkflow = Workflow.make({
  name: "Shopping List Workflow",
  state: ShoppingList,
  sessionState: { shopping_list: [] },
  steps: [
    Step.agent("manage_items", shoppingAssistant, { description: "Help manage shopping list items (add/remove)" }),
    Step.agent("view_list", listManager, { description: "View and manage the complete shopping list" })
  ]
})

/**
 * The four requests, in order.
 *
 * @since 0.1.0
 * @category inputs
 */
export const inputs = [
  "Please add milk, bread, and eggs to my shopping list.",
  "Add apples and bananas to the list, then show me the complete list.",
  "Remove bread from the list and show me what's left.",
  "Clear the entire shopping list and confirm it's empty."
] as const

// -----------------------------------------------------------------------------
// the offline model
// -----------------------------------------------------------------------------

const wantsList = (text: string) =>
  /\b(show|display|view|see|what'?s left|what'?s on)\b|\b(complete|full|whole) list\b|\blist (it|them|everything|all)\b/i.test(text)
const wantsClear = (text: string) => /\b(clear|empty|remove all|remove everything|delete all)\b/i.test(text)

/**
 * The items a request asks to add ("add milk, bread, and eggs to …").
 *
 * @since 0.1.0
 * @category offline
 */
export const itemsToAdd = (text: string): ReadonlyArray<string> => {
  const match = /\badd\s+(.+?)(?:\s+to\s+(?:my|the|our)\b|[,;]?\s*then\b|[.!?]|$)/i.exec(text)
  return match === null ? [] : Offline.splitList(match[1]!)
}

/**
 * The items a request asks to remove ("remove bread from …").
 *
 * @since 0.1.0
 * @category offline
 */
export const itemsToRemove = (text: string): ReadonlyArray<string> => {
  const match = /\bremove\s+(?!all\b|everything\b)(.+?)(?:\s+from\b|[,;]|\s+and\s+(?:show|list|tell)\b|[.!?]|$)/i.exec(text)
  return match === null ? [] : Offline.splitList(match[1]!)
}

const assistantTurn = (request: TestModel.Request): TestModel.Reply => {
  const text = Offline.userRequest(request)
  if (request.turn === 0) {
    const calls: Array<readonly [string, unknown]> = [
      ...itemsToAdd(text).map((item) => ["add_item", { item }] as const),
      ...itemsToRemove(text).map((item) => ["remove_item", { item }] as const)
    ]
    if (calls.length > 0) {
      if (wantsList(text)) calls.push(["list_items", {}])
      return TestModel.toolCalls(...calls)
    }
    if (wantsClear(text)) {
      return TestModel.text("Clearing the whole list is the List Manager's job, so I'm handing this over to them.")
    }
    return TestModel.toolCalls(["list_items", {}])
  }
  const results = Offline.resultLines(request)
  const added = results.flatMap((r) => /^Added '(.+)' to/.exec(r)?.slice(1) ?? [])
  const removed = results.flatMap((r) => /^Removed '(.+)' from/.exec(r)?.slice(1) ?? [])
  const list = results.find((r) => r.startsWith("Shopping list"))
  const other = results.filter((r) => !/^(Added|Removed) '/.test(r) && !r.startsWith("Shopping list"))
  const lines = [
    added.length > 0 ? `I've added ${Offline.joinAnd(added)} to your list.` : undefined,
    removed.length > 0 ? `I've removed ${Offline.joinAnd(removed)}.` : undefined,
    ...other,
    list === undefined ? undefined : `Here's the complete list now:\n${list}`
  ].filter((l) => l !== undefined)
  return TestModel.text(lines.join("\n"))
}

const managerTurn = (request: TestModel.Request): TestModel.Reply => {
  const text = Offline.userRequest(request)
  if (request.turn === 0) {
    return wantsClear(text)
      ? TestModel.toolCalls(["remove_all_items", {}], ["list_items", {}])
      : TestModel.toolCalls(["list_items", {}])
  }
  const results = Offline.resultLines(request)
  const list = results[results.length - 1] ?? ""
  return TestModel.text(
    wantsClear(text)
      ? `All cleared: ${results[0] ?? ""} Confirmed — ${list.charAt(0).toLowerCase()}${list.slice(1)}`
      : `Here is your current list.\n${list}`
  )
}

/**
 * The scripted model: the assistant adds/removes what the request names (and
 * lists when asked), the manager lists, or clears and lists.
 *
 * @since 0.1.0
 * @category offline
 */
export const offlineModel = TestModel.layer((request) =>
  request.agent === "List Manager" ? managerTurn(request) : assistantTurn(request)
)

// -----------------------------------------------------------------------------
// main
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category main
 */
export interface Options extends Scenario.Options {
  /** explain what happens between runs (the `npm start` demo) */
  readonly guided?: boolean | undefined
}

const titles = ["Adding Items", "Adding More Items", "Removing Items", "Clearing List"]
const guide = [
  "Two agents share one typed session state. Watch the tool calls (🔧) change it (Δ).",
  "A new run on the same session: the state was loaded from SQLite, so milk, bread and eggs are still there.",
  "remove_item matches case-insensitively and reports the stored spelling.",
  "Only the List Manager has remove_all_items: the assistant hands over, the manager clears."
]

/**
 * Runs the four requests on a new session, printing each run and the state
 * after it.
 *
 * @since 0.1.0
 * @category main
 */
export const main = (options: Options = {}): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const db = options.db ?? Scenario.defaultDb("shopping-list")
    const model = yield* Scenario.chooseModel(offlineModel, options)
    if (options.guided === true) {
      yield* Output.say(
        [
          "",
          "sessionflow — stateful multi-step AI workflows on Effect",
          "",
          "This demo ports agno's state_with_agent cookbook: a workflow of two agent steps",
          "(manage_items → view_list) whose tools read and write one shopping list kept in the",
          `session state. Four runs on one session, persisted to ${db}.`
        ].join("\n")
      )
    }
    const sessionId = `shopping-${crypto.randomUUID().slice(0, 8)}`
    yield* Effect.forEach(inputs, (input, i) =>
      Effect.gen(function*() {
        yield* Output.heading(`Example ${i + 1}: ${titles[i]}`)
        if (options.guided === true) yield* Output.note(guide[i]!)
        yield* Scenario.runShown(shoppingWorkflow, input, { sessionId })
        yield* Output.state("Workflow session state", yield* Workflow.getSessionState(shoppingWorkflow, sessionId))
      }), { discard: true }).pipe(
        Effect.provide(Layer.mergeAll(model, ShoppingToolsLive, Scenario.storeLayer(options, db)))
      )
    yield* Output.say()
    yield* Output.note(`Stored as session ${sessionId} in ${db}. Inspect it with:`)
    yield* Output.note(`  npm start -- sessions show --db ${db} ${sessionId}`)
    if (options.guided === true) {
      yield* Output.note("More: npm start -- list   (seven scenarios)   ·   npm start -- help")
    }
  }).pipe(Output.withConsole)

/**
 * @since 0.1.0
 * @category scenario
 */
export const scenario: Scenario.Scenario = {
  name: "shopping-list",
  aliases: ["shopping", "shopping_list", "agent"],
  cookbook: "state_with_agent",
  description: "Two agents' tools add, remove, list and clear a shopping list in the session state",
  main
}
