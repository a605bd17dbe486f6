import { describe, expect, it } from "@effect/vitest"
import { Condition, Step, Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import { append, Items, itemsWorkflow, memory } from "./utils.js"

describe("Condition", () => {
  it.effect("a condition reads state: runs its steps, its else steps, or passes through", () =>
    Effect.gen(function*() {
      const cond = Condition.make({
        name: "empty?",
        evaluator: () => Items.get.pipe(Effect.map((s) => s.items.length === 0)),
        steps: [append("then")],
        elseSteps: [append("else")]
      })
      const wf = itemsWorkflow([cond])
      yield* Workflow.run(wf, "1", { sessionId: "c" })
      yield* Workflow.run(wf, "2", { sessionId: "c" })
      expect((yield* Workflow.getSessionState(wf, "c")).items).toEqual(["then", "else"])

      const noElse = Condition.make({ name: "never", evaluator: () => Effect.succeed(false), steps: [append("x")] })
      const out = yield* Workflow.run(
        Workflow.make({
          name: "items",
          state: Items,
          sessionState: { items: [] },
          steps: [Step.make("hello", () => Effect.succeed("hello")), noElse]
        }),
        "x"
      )
      expect(out.content).toBe("hello")
    }).pipe(memory))
})
