import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow } from "@sessionflow/core"
import { GreetingCondition } from "@sessionflow/examples"
import { Effect, Layer } from "effect"
import { captured, events, logLines, tempDb } from "./utils.js"

const { USER_ID, greetingWorkflow, inputs, offlineModel } = GreetingCondition
const ids = { sessionId: USER_ID, userId: USER_ID }

describe("GreetingCondition (state_in_condition)", () => {
  it.effect("greets on the first run only; the count stays 1", () =>
    Effect.gen(function*() {
      const first = { value: yield* events(greetingWorkflow, inputs[0], ids) }
      const second = { value: yield* events(greetingWorkflow, inputs[1], ids) }

      const evaluated = [...first.value, ...second.value].flatMap((e) =>
        e._tag === "ConditionEvaluated" ? [[e.stepName, e.result, e.branch]] : []
      )
      expect(evaluated).toEqual([["Check If New User", true, "steps"], ["Check If New User", false, "none"]])

      const completed = (evs: typeof first.value) =>
        evs.flatMap((e) => (e._tag === "StepCompleted" ? [e.stepName] : []))
      expect(completed(first.value)).toEqual(["Greet User", "Mark as Greeted", "Check If New User", "Handle Query"])
      expect(completed(second.value)).toEqual(["Check If New User", "Handle Query"])
      const marked = first.value.find((e) => e._tag === "StepCompleted" && e.stepName === "Mark as Greeted")
      expect(marked?._tag === "StepCompleted" && marked.content).toBe("User has been greeted. Total greetings: 1")

      // the evaluator logs the user and session from the run context, and the flag, into the event stream,
      // right before the condition's result
      expect(logLines(first.value)).toEqual(["[condition] user user-123, session user-123, has been greeted: false"])
      expect(logLines(second.value)).toEqual(["[condition] user user-123, session user-123, has been greeted: true"])
      const order = first.value.map((e) => e._tag)
      expect(order.indexOf("Log")).toBe(order.indexOf("ConditionEvaluated") - 1)

      expect(yield* Workflow.getSessionState(greetingWorkflow, USER_ID, ids)).toEqual({
        has_been_greeted: true,
        greeting_count: 1
      })
      // the query step answers the query itself, not the greeting
      const answer = second.value.find((e) => e._tag === "StepCompleted" && e.stepName === "Handle Query")
      expect(answer?._tag === "StepCompleted" && String(answer.content)).toMatch(/^Here's one for you: /)
    }).pipe(Effect.provide(Layer.merge(offlineModel, SessionStore.layerMemory))))

  it.scoped("a second process run on the same file does not greet again", () =>
    Effect.gen(function*() {
      const db = yield* tempDb()
      yield* captured(GreetingCondition.main({ db, model: offlineModel }))
      const again = yield* captured(GreetingCondition.main({ db, model: offlineModel }))
      expect(again.stdout).toContain("user-123 was already greeted in an earlier run")
      expect(again.stdout).not.toContain("▶ Greet User")
      expect(again.stdout.match(/◆ Workflow session state: (.*)/g)).toEqual([
        `◆ Workflow session state: {"has_been_greeted":true,"greeting_count":1}`,
        `◆ Workflow session state: {"has_been_greeted":true,"greeting_count":1}`
      ])
    }))
})
