import { assert, describe, expect, it } from "@effect/vitest"
import { SessionState, Step, Workflow } from "@sessionflow/core"
import { Chunk, Effect, Stream } from "effect"
import { append, itemsWorkflow, memory } from "./utils.js"

describe("SessionState", () => {
  it.effect("the typed and the untyped view are one state", () =>
    Effect.gen(function*() {
      const viaUntyped = Step.make("untyped", () =>
        SessionState.update((s) => ({ ...s, items: [...(s.items as Array<string>), "u"] })))
      const wf = itemsWorkflow([append("t"), viaUntyped, append("t2")])
      const out = yield* Workflow.run(wf, "x", { sessionId: "views" })
      expect(out.state.items).toEqual(["t", "u", "t2"])
    }).pipe(memory))

  it.effect("state changes describe sets, deletes and nested paths", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "changes",
        sessionState: { a: 1, gone: true, nested: { list: [1, 2], deep: { x: 1 } } },
        steps: [
          Step.make("edit", () =>
            SessionState.update(() => ({ a: 2, nested: { list: [1, 3], deep: { x: 1, y: 2 } }, fresh: "new" })))
        ]
      })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(Workflow.stream(wf, "x")))
      const changed = events.find((e) =>
        e._tag === "StateChanged"
      )
      assert(changed?._tag === "StateChanged")
      expect(changed.changes).toEqual([
        { op: "set", path: ["a"], value: 2, previous: 1 },
        { op: "set", path: ["nested", "list", 1], value: 3, previous: 2 },
        { op: "set", path: ["nested", "deep", "y"], value: 2 },
        { op: "set", path: ["fresh"], value: "new" },
        { op: "delete", path: ["gone"], previous: true }
      ])
    }).pipe(memory))
})
