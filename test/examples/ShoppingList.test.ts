import { describe, expect, it } from "@effect/vitest"
import { Replay, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { Cli, ShoppingList } from "@sessionflow/examples"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { captured, tempDb, withState } from "./utils.js"

const { ShoppingTools, ShoppingToolsLive, inputs, offlineModel, shoppingWorkflow } = ShoppingList

const call = (name: "add_item" | "remove_item" | "list_items" | "remove_all_items", params: object) =>
  Effect.flatMap(ShoppingTools, (tk) => tk.handle(name, params as never)).pipe(
    Effect.map((r) => r.result),
    Effect.provide(ShoppingToolsLive)
  )

describe("ShoppingList (state_with_agent)", () => {
  it.effect("tools reply exactly as the scenario says", () =>
    Effect.gen(function*() {
      const added = yield* withState(
        ShoppingList.ShoppingList,
        { shopping_list: ["milk"] },
        call("add_item", { item: "Milk" })
      )
      expect(added).toEqual({ value: "'Milk' is already in the shopping list.", state: { shopping_list: ["milk"] } })

      const fresh = yield* withState(
        ShoppingList.ShoppingList,
        { shopping_list: [] },
        call("add_item", { item: "eggs" })
      )
      expect(fresh).toEqual({ value: "Added 'eggs' to the shopping list.", state: { shopping_list: ["eggs"] } })

      const emptyRemove = yield* withState(
        ShoppingList.ShoppingList,
        { shopping_list: [] },
        call("remove_item", { item: "tea" })
      )
      expect(emptyRemove.value).toBe("Shopping list is empty. Cannot remove 'tea'.")

      const removed = yield* withState(
        ShoppingList.ShoppingList,
        { shopping_list: ["Bread", "milk", "bread"] },
        call("remove_item", { item: "BREAD" })
      )
      expect(removed).toEqual({
        value: "Removed 'Bread' from the shopping list.",
        state: { shopping_list: ["milk", "bread"] }
      })

      const missing = yield* withState(
        ShoppingList.ShoppingList,
        { shopping_list: ["milk"] },
        call("remove_item", { item: "tea" })
      )
      expect(missing.value).toBe("'tea' not found in the shopping list.")

      const list = yield* withState(
        ShoppingList.ShoppingList,
        { shopping_list: ["milk", "eggs"] },
        call("list_items", {})
      )
      expect(list.value).toBe("Shopping list:\n- milk\n- eggs")
      const emptyList = yield* withState(ShoppingList.ShoppingList, { shopping_list: [] }, call("list_items", {}))
      expect(emptyList.value).toBe("Shopping list is empty.")

      const cleared = yield* withState(
        ShoppingList.ShoppingList,
        { shopping_list: ["a", "b"] },
        call("remove_all_items", {})
      )
      expect(cleared).toEqual({ value: "Removed all items from the shopping list.", state: { shopping_list: [] } })
    }))

  it.effect("the four requests leave the expected list after each run (scripted model)", () =>
    Effect.gen(function*() {
      const states: Array<ReadonlyArray<string>> = []
      for (const input of inputs) {
        yield* Workflow.run(shoppingWorkflow, input, { sessionId: "s" })
        states.push((yield* Workflow.getSessionState(shoppingWorkflow, "s")).shopping_list)
      }
      expect(states).toEqual([
        ["milk", "bread", "eggs"],
        ["milk", "bread", "eggs", "apples", "bananas"],
        ["milk", "eggs", "apples", "bananas"],
        []
      ])
    }).pipe(Effect.provide(Layer.mergeAll(offlineModel, ShoppingToolsLive, SessionStore.layerMemory))))

  it.effect("the scripted model reads any request of the kind", () =>
    Effect.gen(function*() {
      expect(ShoppingList.itemsToAdd("Add tea, coffee & sugar to my list")).toEqual(["tea", "coffee", "sugar"])
      expect(ShoppingList.itemsToRemove("Please remove the eggs and show me the list")).toEqual(["eggs"])
      yield* Workflow.run(shoppingWorkflow, "Add Tea and coffee to the list.", { sessionId: "t" })
      yield* Workflow.run(shoppingWorkflow, "Remove tea from the list.", { sessionId: "t" })
      expect(yield* Workflow.getSessionState(shoppingWorkflow, "t")).toEqual({ shopping_list: ["coffee"] })
    }).pipe(Effect.provide(Layer.mergeAll(offlineModel, ShoppingToolsLive, SessionStore.layerMemory))))

  it.effect("the four recorded runs replay against the workflow; a renamed step fails at that step", () =>
    Effect.gen(function*() {
      // recorded: the scripted model's replies and each run's start state go to the stored events
      const recorded = yield* Effect.gen(function*() {
        for (const input of inputs) {
          yield* Workflow.run(shoppingWorkflow, input, { sessionId: "recorded", events: "stored" }).pipe(Replay.record)
        }
        return yield* Replay.fromStore(shoppingWorkflow, { sessionId: "recorded" })
      }).pipe(Effect.provide(Layer.mergeAll(offlineModel, SessionStore.layerMemory)))
      expect(recorded.map((run) => run.input)).toEqual([...inputs])
      expect(recorded[2]!.state).toEqual({ shopping_list: ["milk", "bread", "eggs", "apples", "bananas"] })

      // replayed with the recorded replies (no model layer given): the same steps, outputs and state
      const replayed = yield* Replay.replayAll(shoppingWorkflow, recorded)
      expect(replayed.map((run) => run.steps)).toEqual([2, 2, 2, 2])

      // a change that is not compatible: the second step renamed
      const renamed = Workflow.make({
        name: shoppingWorkflow.name,
        state: ShoppingList.ShoppingList,
        sessionState: { shopping_list: [] },
        steps: [
          Step.agent("manage_items", ShoppingList.shoppingAssistant),
          Step.agent("show_list", ShoppingList.listManager)
        ]
      })
      const exit = yield* Effect.exit(Replay.replayAll(renamed, recorded))
      expect(exit).toMatchObject({ _tag: "Failure", cause: { _tag: "Fail" } })
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      expect(error).toBeInstanceOf(WorkflowError.ReplayMismatch)
      expect(error).toMatchObject({ runId: recorded[0]!.runId, kind: "step", at: "view_list" })
    }).pipe(Effect.provide(ShoppingToolsLive)))

  it.scoped("main announces offline mode first, prints each run and the state after it, and persists to SQLite", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      const { stdout } = yield* captured(ShoppingList.main({ db, guide: Cli.demoGuide })).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
      )
      const lines = stdout.split("\n")
      expect(lines[0]).toBe("Offline mode: no OPENAI_API_KEY set, using a scripted model.")
      expect(lines.filter((l) => l.startsWith("◆ Workflow session state:"))).toEqual([
        `◆ Workflow session state: {"shopping_list":["milk","bread","eggs"]}`,
        `◆ Workflow session state: {"shopping_list":["milk","bread","eggs","apples","bananas"]}`,
        `◆ Workflow session state: {"shopping_list":["milk","eggs","apples","bananas"]}`,
        `◆ Workflow session state: {"shopping_list":[]}`
      ])
      expect(stdout).toContain("▶ manage_items (agent)")
      expect(stdout).toContain(`🔧 add_item(item="milk")`)
      expect(stdout).toContain("→ Added 'milk' to the shopping list.")
      expect(stdout).toContain(`Δ shopping_list += ["milk"]`)
      expect(stdout).toContain("✓ run completed")
      const sessionId = /Stored as session (\S+) in/.exec(stdout)?.[1]
      expect(sessionId).toBeDefined()
      // the file really holds the session and its four runs
      const history = yield* Workflow.getRunHistory(shoppingWorkflow, sessionId!).pipe(
        Effect.provide(SqliteSessionStore.layer({ filename: db }))
      )
      expect(history.map((r) => r.input)).toEqual([...inputs])
    }))
})
