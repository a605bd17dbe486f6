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

  it.live(
    "the expense assistant survives a crash at every boundary, before and after its approval",
    () =>
      Effect.gen(function*() {
        const report = yield* CrashTest.everyBoundary({
          module: fixture("approval"),
          input: "35 EUR for the taxi and 240 EUR for the team dinner.",
          responses: [{ approved: true }],
          // record_expense and list_expenses only change the session state (see above)
          idempotent: ["record_expenses", "record_expense"]
        })
        expect(report.workflow).toBe("Expense Approval Workflow")
        const kinds = report.boundaries.map((b) => b.kind)
        // the step starts, the model asks for two expenses, the taxi is recorded, the dinner waits: the
        // run pauses; the step starts again with the approval, the dinner is recorded, the model reports
        expect(kinds).toEqual([
          "BeforeStep",
          "AfterModelCall",
          "AfterTool",
          "BeforeStep",
          "AfterTool",
          "AfterModelCall",
          "AfterStep",
          "AfterCommit"
        ])
      }),
    600_000
  )

  it.live(
    "fails, naming the boundary, the step and the tool, when a crash repeats a payment",
    () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(CrashTest.everyBoundary({
          module: fixture("payment"),
          input: 42,
          // the reservation only changes the session state; charge_card and its step are not safe to repeat
          idempotent: ["reserve"],
          recovery: false
        }))
        expect(error._tag).toBe("CrashTestFailed")
        if (error._tag !== "CrashTestFailed") return
        expect(error.workflow).toBe("payment")
        const failed = error.failures.map((f) => `${f.boundary.kind} ${f.boundary.step}`)
        // killed once the step is under way (after the model's reply, the charge, the reply after it)
        // and before its record: carried on, the step runs again, and after the charge charges again
        expect(failed).toEqual(["AfterModelCall pay", "AfterTool pay", "AfterModelCall pay", "AfterStep pay"])
        const afterCharge = error.failures[1]!
        expect(afterCharge.boundary.detail).toBe(`charge_card({"amount":42})`)
        expect(afterCharge.differences.map((d) => d.kind)).toEqual(["StepRepeated", "ToolRepeated"])
        expect(error.message).toContain(`killed at boundary 5 (after tool charge_card({"amount":42})`)
        expect(error.message).toContain(`tool charge_card({"amount":42}) in step "pay" ran 2 times (uninterrupted: 1)`)
        // a crash before the step starts, or after the commit, repeats nothing
        expect(failed).not.toContain("BeforeStep pay")
      }),
    600_000
  )
})
