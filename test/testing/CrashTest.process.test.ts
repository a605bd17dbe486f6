/**
 * `CrashTest.everyBoundary` on the cookbook's workflows (the shopping list's
 * two agent steps; the expense assistant, whose run waits for a person's
 * approval) and on a workflow that is not safe to carry on after a crash:
 * each test starts real processes, kills them with SIGKILL at every durable
 * boundary of the run, and carries the run on in new ones.
 */
import { describe, expect, it } from "@effect/vitest"
import { CrashTest } from "@sessionflow/testing"
import { Effect } from "effect"

const fixture = (name: string) => new URL(`./fixtures/${name}.ts`, import.meta.url)

describe("CrashTest.everyBoundary", () => {
  it.live("the shopping list survives a crash at every boundary", () =>
    Effect.gen(function*() {
      const report = yield* CrashTest.everyBoundary({
        module: fixture("shoppingList"),
        input: "Please add milk, bread, and eggs to my shopping list.",
        // the agents' steps and tools only change the session state, which a carried-on step starts
        // over from (its journal's): running them again is safe
        idempotent: ["manage_items", "view_list", "add_item", "list_items"]
      })
      expect(report.workflow).toBe("Shopping List Workflow")
      const kinds = report.boundaries.map((b) => `${b.kind} ${b.step ?? ""}`.trim())
      expect(kinds).toEqual([
        "BeforeStep manage_items",
        "AfterModelCall manage_items",
        "AfterTool manage_items",
        "AfterTool manage_items",
        "AfterTool manage_items",
        "AfterModelCall manage_items",
        "AfterStep manage_items",
        "BeforeStep view_list",
        "AfterModelCall view_list",
        "AfterTool view_list",
        "AfterModelCall view_list",
        "AfterStep view_list",
        "AfterCommit"
      ])
    }), 600_000)
})
