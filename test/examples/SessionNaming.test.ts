import { describe, expect, it } from "@effect/vitest"
import { SessionNamer, SessionStore, TestModel, Workflow } from "@sessionflow/core"
import { SessionNaming } from "@sessionflow/examples"
import { Effect, Layer, Option } from "effect"

const { articleWorkflow, input, offlineModel } = SessionNaming

describe("SessionNaming (rename_session)", () => {
  it.effect("names the session after its run, from the first input, and stores the name", () =>
    Effect.gen(function*() {
      const run = yield* Workflow.run(articleWorkflow, input, { sessionId: "a" })
      expect(run.stepOutputs.map((o) => o.stepName)).toEqual(["research", "writing", "article_creation"])
      const name = yield* Workflow.setSessionName(articleWorkflow, "a", { autogenerate: true })
      expect(name).toBe("The Benefits of Renewable Energy")
      expect(yield* Workflow.getSessionName(articleWorkflow, "a")).toEqual(Option.some(name))
      // the namer was asked with the session's first input
      const namer = (yield* TestModel.requests).find((r) => r.agent === undefined)!
      expect(namer.lastUserMessage).toContain(`First input:\n${input}`)
    }).pipe(
      Effect.provide(
        Layer.mergeAll(SessionNamer.layerLanguageModel(), SessionStore.layerMemory).pipe(
          Layer.provideMerge(offlineModel)
        )
      )
    ))
})
