/**
 * The shopping list's state and tools (scenario 1): `add_item`,
 * `remove_item`, `list_items` and `remove_all_items`, with one handler layer
 * for them all, whichever agent calls.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { SessionState } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

export class ShoppingList extends SessionState.Tag("@sessionflow/examples/ShoppingList")<ShoppingList>()({
  shopping_list: Schema.Array(Schema.String)
}) {}

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
  remove_all_items: () =>
    ShoppingList.modify(() => ["Removed all items from the shopping list.", { shopping_list: [] }])
})
