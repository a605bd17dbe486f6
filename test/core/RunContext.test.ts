import { describe, expect, it } from "@effect/vitest"
import { RunContext, Step, Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import { memory } from "./utils.js"

describe("RunContext", () => {
  it.effect("steps see run identity in RunContext and the state holds no identity", () =>
    Effect.gen(function*() {
      const who = Step.make("who", () =>
        Effect.map(RunContext.RunContext, (c) => `${c.workflowName}/${c.sessionId}/${c.userId}/${c.input}`))
      const wf = Workflow.make({ name: "ids", sessionState: { n: 1 }, steps: [who] })
      const out = yield* Workflow.run(wf, "hi", { sessionId: "ctx", userId: "u1" })
      expect(out.content).toBe("ids/ctx/u1/hi")
      expect(out.runId).toMatch(/^[0-9a-f-]{36}$/)
      expect(yield* Workflow.getSessionState(wf, "ctx", { userId: "u1" })).toEqual({ n: 1 })
    }).pipe(memory))
})
