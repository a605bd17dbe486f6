import { describe, expect, it } from "@effect/vitest"
import { Loop, Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import { append, Items, itemsWorkflow, memory } from "./utils.js"

describe("Loop", () => {
  it.effect("a loop stops at its end condition (which may read state) or at maxIterations", () =>
    Effect.gen(function*() {
      const untilThree = Loop.make({
        name: "until-3",
        steps: [append("tick")],
        maxIterations: 10,
        endCondition: () => Items.get.pipe(Effect.map((s) => s.items.length >= 3))
      })
      expect((yield* Workflow.run(itemsWorkflow([untilThree]), "x")).state.items).toHaveLength(3)
      const capped = Loop.make({ name: "capped", steps: [append("tick")], maxIterations: 2 })
      expect((yield* Workflow.run(itemsWorkflow([capped]), "x")).state.items).toHaveLength(2)
    }).pipe(memory))
})
