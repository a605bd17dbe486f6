import { assert, describe, expect, it } from "@effect/vitest"
import { Router, Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import { append, itemsWorkflow, memory } from "./utils.js"

describe("Router", () => {
  it.effect("a router runs the chosen step, several steps, or a step by name", () =>
    Effect.gen(function*() {
      const a = append("a")
      const b = append("b")
      const router = (pick: Router.Selection<[typeof a, typeof b]>) =>
        Router.make({ name: "r", choices: [a, b], selector: () => Effect.succeed(pick) })
      expect((yield* Workflow.run(itemsWorkflow([router(a)]), "x")).state.items).toEqual(["a"])
      expect((yield* Workflow.run(itemsWorkflow([router("b")]), "x")).state.items).toEqual(["b"])
      expect((yield* Workflow.run(itemsWorkflow([router([b, "a"])]), "x")).state.items).toEqual(["b", "a"])
    }).pipe(memory))

  it.effect(
    "a router choosing an unknown name or a step outside its choices fails with RouterChoiceError, committing nothing",
    () =>
      Effect.gen(function*() {
        const a = append("a")
        const stranger = append("stranger")
        const unknown = Router.make({ name: "r", choices: [a], selector: () => Effect.succeed("nope") })
        const e1 = yield* Effect.flip(Workflow.run(itemsWorkflow([a, unknown]), "x", { sessionId: "r1" }))
        assert(e1._tag === "RouterChoiceError")
        expect(e1.reason).toBe("unknown-name")
        expect(e1.message).toBe("Router 'r' selected unknown step name 'nope' (choices: 'a')")
        const outside = Router.make({ name: "r", choices: [a], selector: () => Effect.succeed(stranger) })
        const e2 = yield* Effect.flip(Workflow.run(itemsWorkflow([outside]), "x"))
        assert(e2._tag === "RouterChoiceError")
        expect(e2.reason).toBe("outside-choices")
        expect((yield* Workflow.getSessionState(itemsWorkflow([]), "r1")).items).toEqual([])
      }).pipe(memory)
  )

  it.effect("a selector may return its choice as a plain value: a step, a name or several", () =>
    Effect.gen(function*() {
      const a = append("a")
      const b = append("b")
      const plain = Router.make({
        name: "r",
        choices: [a, b],
        selector: (input) => (`${input.input}` === "both" ? [b, a] : "a")
      })
      expect((yield* Workflow.run(itemsWorkflow([plain]), "one")).state.items).toEqual(["a"])
      expect((yield* Workflow.run(itemsWorkflow([plain]), "both")).state.items).toEqual(["b", "a"])
      const byStep = Router.make({ name: "r", choices: [a, b], selector: (_input, choices) => choices[1] })
      expect((yield* Workflow.run(itemsWorkflow([byStep]), "x")).state.items).toEqual(["b"])
      const unknown = Router.make({ name: "r", choices: [a], selector: () => "nope" })
      const error = yield* Effect.flip(Workflow.run(itemsWorkflow([unknown]), "x"))
      assert(error._tag === "RouterChoiceError")
      expect(error.reason).toBe("unknown-name")
    }).pipe(memory))
})
