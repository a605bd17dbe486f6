import { describe, expect, it } from "@effect/vitest"
import { Parallel, Step, Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import { Items, itemsWorkflow, memory } from "./utils.js"

describe("Parallel", () => {
  it.effect("ten parallel branches each appending to one list: all ten appends survive", () =>
    Effect.gen(function*() {
      const branches = Array.from({ length: 10 }, (_, i) =>
        Step.make(`b${i}`, () =>
          Effect.gen(function*() {
            yield* Effect.yieldNow()
            yield* Items.update((s) => ({ items: [...s.items, `p${i}`] }))
            return i
          })))
      const wf = itemsWorkflow([Parallel.make("fan-out", branches)])
      const out = yield* Workflow.run(wf, "go", { sessionId: "par" })
      expect([...out.state.items].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `p${i}`).sort())
      expect(out.content).toEqual(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`b${i}`, i])))
      expect((yield* Workflow.getSessionState(wf, "par")).items).toHaveLength(10)
    }).pipe(memory))
})
