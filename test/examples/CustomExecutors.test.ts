import { describe, expect, it } from "@effect/vitest"
import { SessionStore, TestModel, Workflow } from "@sessionflow/core"
import { CustomExecutors } from "@sessionflow/examples"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Layer } from "effect"
import { events, tempDb } from "./utils.js"

const { contentSummaryStep, contentWorkflow, inputs, offlineModel, streamingContentWorkflow } = CustomExecutors

const twice = (
  wf: typeof contentWorkflow | typeof streamingContentWorkflow,
  sessionId: string
) =>
  Effect.gen(function*() {
    for (const input of inputs) yield* Workflow.run(wf, input, { sessionId })
    return yield* Workflow.getSessionState(wf, sessionId)
  })

const expectTwoPlans = (state: typeof CustomExecutors.ContentPlans.schema.Type) => {
  expect(state.plan_counter).toBe(2)
  expect(state.content_plans.map((p) => [p.id, p.topic, p.has_research])).toEqual([
    [1, "AI trends in 2024", true],
    [2, "Machine Learning automation tools", true]
  ])
  expect(state.content_plans[1]!.content).toContain("Machine Learning automation tools")
  expect(state.total_plans_summarized).toBe(2)
  expect(state.session_summarized).toBe(true)
}

describe("CustomExecutors (state_in_function)", () => {
  it.scoped(
    "both workflows end with plan_counter 2, two plans, total_plans_summarized 2 (SQLite, table workflow_session)",
    () =>
      Effect.gen(function*() {
        const db = yield* tempDb()
        const store = SqliteSessionStore.layer({ filename: db, table: CustomExecutors.TABLE })
        const [plain, streaming] = yield* Effect.all([
          twice(contentWorkflow, "plain"),
          twice(streamingContentWorkflow, "streaming")
        ]).pipe(Effect.provide(Layer.merge(offlineModel, store)))
        expectTwoPlans(plain)
        expectTwoPlans(streaming)
        // the sessions live in the configured table
        const other = yield* Effect.flatMap(SessionStore.SessionStore, (s) => Effect.map(s.list({}), (l) => l.sessions))
          .pipe(
            Effect.provide(SqliteSessionStore.layer({ filename: db }))
          )
        expect(other).toEqual([])
      })
  )

  it.effect("the planning step gets the research and stores the plan the planner wrote", () =>
    Effect.gen(function*() {
      const run = yield* Workflow.run(contentWorkflow, "Quantum sensors", { sessionId: "q" })
      const research = run.stepOutputs.find((o) => o.stepName === "Research Step")!
      expect(String(research.content)).toContain("Research brief: Quantum sensors")
      const planning = run.stepOutputs.find((o) => o.stepName === "Content Planning Step")!
      expect(planning.success).toBe(true)
      expect(String(planning.content)).toContain("## Strategic Content Plan #1")
      const requests = yield* TestModel.requests
      const plannerPrompt = requests.find((r) => r.agent === "Content Planner")!.lastUserMessage!
      expect(plannerPrompt).toContain("Core Topic: Quantum sensors")
      expect(plannerPrompt).toContain(`Research Results: ${String(research.content).slice(0, 500)}`)
      expect(plannerPrompt).not.toContain(String(research.content).slice(0, 501))
      expect(run.state.content_plans[0]!.content).toMatch(/^4-week content plan #1 for "Quantum sensors"/)
    }).pipe(Effect.provide(Layer.mergeAll(offlineModel, SessionStore.layerMemory))))

  it.effect("the summary step reports an unsuccessful output when there are no plans", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "summary only",
        state: CustomExecutors.ContentPlans,
        sessionState: { content_plans: [], plan_counter: 0 },
        steps: [contentSummaryStep]
      })
      const run = yield* Workflow.run(wf, "x")
      expect(run.stepOutputs[0]).toMatchObject({ content: "No content plans found in session state.", success: false })
      expect(run.state.session_summarized).toBeUndefined()
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("a failing planner becomes an unsuccessful planning output; the counter still counts", () =>
    Effect.gen(function*() {
      const run = yield* Workflow.run(contentWorkflow, "Topic", { sessionId: "f" })
      const planning = run.stepOutputs.find((o) => o.stepName === "Content Planning Step")!
      expect(planning.success).toBe(false)
      expect(String(planning.content)).toMatch(/^Custom content planning failed: /)
      expect(run.state.plan_counter).toBe(1)
      expect(run.state.content_plans).toEqual([])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer((request) =>
        request.agent === "Content Planner"
          ? TestModel.fail("the planner is down")
          : request.agent === undefined || request.agent === "Research Team"
          ? TestModel.text("no research today")
          : TestModel.text("member reply")
      ),
      SessionStore.layerMemory
    ))))

  it.effect(
    "streaming variant: the planner's deltas arrive as the step's TextDelta events before its StepCompleted",
    () =>
      Effect.gen(function*() {
        const evs = yield* events(streamingContentWorkflow, "AI trends in 2024", { sessionId: "st" })
        const inPlanning = (path: ReadonlyArray<string>) => path.length === 1 && path[0] === "Content Planning Step"
        const deltas = evs.filter((e) => e._tag === "TextDelta" && inPlanning(e.path))
        const completedAt = evs.findIndex((e) => e._tag === "StepCompleted" && e.stepName === "Content Planning Step")
        const startedAt = evs.findIndex((e) => e._tag === "StepStarted" && e.stepName === "Content Planning Step")
        expect(deltas.length).toBeGreaterThan(5)
        expect(completedAt).toBeGreaterThan(startedAt)
        for (const d of deltas) {
          const at = evs.indexOf(d)
          expect(at).toBeGreaterThan(startedAt)
          expect(at).toBeLessThan(completedAt)
        }
        const text = deltas.map((d) => (d._tag === "TextDelta" ? d.delta : "")).join("")
        const state = yield* Workflow.getSessionState(streamingContentWorkflow, "st")
        expect(state.content_plans[0]!.content).toBe(text)
        const completed = evs[completedAt]!
        expect(completed._tag === "StepCompleted" && String(completed.content)).toContain(
          "## Strategic Content Plan #1"
        )
      }).pipe(Effect.provide(Layer.mergeAll(offlineModel, SessionStore.layerMemory)))
  )
})
