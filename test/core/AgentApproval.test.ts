/**
 * Tool approval in agents: a tool made with `Agent.needsApproval` pauses the
 * workflow run when the model calls it; `Workflow.continue` carries the agent
 * on from its checkpoint, without calling the model again for the turns
 * before the question. "Processes" are stores over one memory backend, each
 * with its own scripted model (whose requests are recorded).
 */
import { Tool, Toolkit } from "@effect/ai"
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import {
  Agent,
  SessionState,
  Step,
  StepOutput,
  Steps,
  Team,
  TestModel,
  Workflow,
  type WorkflowError,
  type WorkflowEvent
} from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Chunk, Effect, Exit, Layer, Ref, Schema, Stream } from "effect"
import { on, processes, type Store } from "./utils.js"

// -- fixtures: an expense assistant ---------------------------------------------

class Expenses extends SessionState.Tag("test/Expenses")<Expenses>()({
  expenses: Schema.Array(Schema.Struct({ description: Schema.String, amount: Schema.Number }))
}) {}

const RecordExpense = Agent.needsApproval(
  Tool.make("record_expense", {
    description: "Record an expense",
    parameters: { description: Schema.String, amount: Schema.Number },
    success: Schema.String,
    dependencies: [Expenses]
  }),
  ({ amount }) => amount > 100
)
const ListExpenses = Tool.make("list_expenses", { success: Schema.String, dependencies: [Expenses] })
const ExpenseTools = Toolkit.make(RecordExpense, ListExpenses)

/** The handlers, counting the calls of record_expense in `made`. */
const toolsLive = (made: Ref.Ref<ReadonlyArray<string>>) =>
  ExpenseTools.toLayer({
    record_expense: ({ amount, description }) =>
      Effect.zipRight(
        Ref.update(made, (m) => [...m, description]),
        Expenses.modify((
          s
        ) => [`Recorded ${description} (${amount})`, { expenses: [...s.expenses, { description, amount }] }])
      ),
    list_expenses: () => Effect.map(Expenses.get, (s) => s.expenses.map((e) => e.description).join(", "))
  })

const assistant = Agent.make({ name: "Expense Assistant", instructions: "Record expenses.", tools: ExpenseTools })

const expenses = Workflow.make({
  name: "expenses",
  state: Expenses,
  sessionState: { expenses: [] },
  input: Schema.String
}).pipe(
  Workflow.andThen(Step.agent("assistant", assistant)),
  Workflow.andThen("after", ({ previousStepContent }) => Effect.succeed(`after: ${previousStepContent}`))
)

const record = (description: string, amount: number) => ["record_expense", { description, amount }] as const

/** A reply for each turn of the conversation (by how many replies came before since the message). */
const byTurn = (...turns: ReadonlyArray<TestModel.Reply>): TestModel.Responder => (request) =>
  turns[request.turn] ??
    TestModel.text(`Done: ${request.toolResults.map((r) => StepOutput.contentText(r.result)).join("; ")}`)

/** Runs `self` in one "process": its store, a fresh scripted model, the tools' handlers. */
const inProcess = <A, E, R>(
  store: Store,
  script: TestModel.Script,
  made: Ref.Ref<ReadonlyArray<string>>,
  self: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(self)
    return { exit, requests: yield* TestModel.requests }
  }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(script), toolsLive(made))), on(store))

const collect = <E, R>(stream: Stream.Stream<WorkflowEvent.WorkflowEvent, E, R>) =>
  Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

const tagsOf = (events: ReadonlyArray<WorkflowEvent.WorkflowEvent>) =>
  events.filter((e) => e._tag.startsWith("ToolCall") || e._tag.startsWith("Run")).map((e) =>
    e._tag === "ToolCallStarted" || e._tag === "ToolCallCompleted" ? `${e._tag} ${e.toolName}` : e._tag
  )

const success = <A, E>(exit: Exit.Exit<A, E>): A => {
  assert(Exit.isSuccess(exit), String(exit))
  return exit.value
}

describe("Agent tool approval", () => {
  it.effect(
    "the run pauses at the call; approved in another process, " +
      "the call runs and the model is called only for the next turn",
    () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const [a, b] = [make(), make()]
        const made = yield* Ref.make<ReadonlyArray<string>>([])
        const script = byTurn(TestModel.toolCalls(record("taxi", 35), record("team dinner", 240)))

        const first = yield* inProcess(
          a,
          script,
          made,
          collect(Workflow.stream(expenses, "taxi and dinner", { sessionId: "s" }))
        )
        const paused = success(first.exit)
        expect(tagsOf(paused)).toEqual([
          "RunStarted",
          "ToolCallStarted record_expense",
          "ToolCallCompleted record_expense",
          "ToolCallStarted record_expense",
          "RunPaused"
        ])
        const last = paused.at(-1)!
        assert(last._tag === "RunPaused")
        expect(last.payload).toEqual({
          agent: "Expense Assistant",
          tool: "record_expense",
          toolCallId: "call_0_1",
          arguments: { description: "team dinner", amount: 240 }
        })
        expect(Schema.is(Agent.ApprovalRequest)(last.payload)).toBe(true)
        expect(last.stepPath).toEqual(["assistant"])
        expect(first.requests.length).toBe(1)
        expect(yield* Ref.get(made)).toEqual(["taxi"])
        // nothing committed; the question is listed with its key
        expect(yield* Effect.flip(Workflow.getSessionState(expenses, "s").pipe(on(b)))).toMatchObject({
          _tag: "SessionNotFound"
        })
        const [waiting] = yield* Workflow.pausedRuns(expenses).pipe(on(b))
        expect(waiting?.pause?.key).toBe("0:Expense Assistant#1")

        const second = yield* inProcess(
          b,
          script,
          made,
          collect(Workflow.continueStream(expenses, last.runId, { approved: true }))
        )
        const done = success(second.exit)
        expect(tagsOf(done)).toEqual(["RunResumed", "ToolCallCompleted record_expense", "RunCompleted"])
        const completed = done.find((e) => e._tag === "ToolCallCompleted")
        assert(completed?._tag === "ToolCallCompleted")
        expect(completed).toMatchObject({
          toolCallId: "call_0_1",
          isError: false,
          result: "Recorded team dinner (240)",
          path: ["assistant"]
        })
        expect(done.at(-1)).toMatchObject({
          _tag: "RunCompleted",
          content: "after: Done: Recorded taxi (35); Recorded team dinner (240)"
        })
        // one model call, for the turn after the calls; the conversation before it restored
        expect(second.requests.length).toBe(1)
        const request = second.requests[0]!
        expect(request.turn).toBe(1)
        expect(request.lastUserMessage).toBe("taxi and dinner")
        expect(request.toolResults.map((r) => [r.id, r.result, r.isFailure])).toEqual([
          ["call_0_0", "Recorded taxi (35)", false],
          ["call_0_1", "Recorded team dinner (240)", false]
        ])
        expect(TestModel.render(request.prompt)).toBe(
          TestModel.render(first.requests[0]!.prompt) + [
            "",
            "assistant: call record_expense({\"description\":\"taxi\",\"amount\":35})",
            "assistant: call record_expense({\"description\":\"team dinner\",\"amount\":240})",
            "tool: record_expense returned: Recorded taxi (35)",
            "tool: record_expense returned: Recorded team dinner (240)"
          ].join("\n")
        )
        // the taxi was recorded once, before the pause
        expect(yield* Ref.get(made)).toEqual(["taxi", "team dinner"])
        expect((yield* Workflow.getSessionState(expenses, "s").pipe(on(b))).expenses).toEqual([
          { description: "taxi", amount: 35 },
          { description: "team dinner", amount: 240 }
        ])
        expect(yield* Workflow.pausedRuns(expenses).pipe(on(b))).toEqual([])
      })
  )

  it.effect(
    "rejected: the model gets the rejection and its reason as the tool's error result; the tool does not run",
    () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const [a, b] = [make(), make()]
        const made = yield* Ref.make<ReadonlyArray<string>>([])
        const script = byTurn(TestModel.toolCalls(record("team dinner", 240), record("taxi", 35)))
        const first = yield* inProcess(a, script, made, Workflow.run(expenses, "dinner and taxi", { sessionId: "s" }))
        assert(Exit.isFailure(first.exit))
        const paused = yield* Effect.flip(first.exit)
        assert(paused._tag === "RunPaused")
        // the dinner came first: the taxi waits with it, not made yet
        expect(yield* Ref.get(made)).toEqual([])
        // a bad answer: typed, and the run still waits
        const bad = yield* inProcess(b, script, made, Workflow.continue(expenses, paused.runId, { approved: "yes" }))
        assert(Exit.isFailure(bad.exit))
        expect(yield* Effect.flip(bad.exit)).toMatchObject({ _tag: "ResponseDecodeError", runId: paused.runId })
        expect(bad.requests).toEqual([])
        expect((yield* Workflow.pausedRuns(expenses).pipe(on(b))).length).toBe(1)

        const second = yield* inProcess(
          b,
          script,
          made,
          collect(Workflow.continueStream(expenses, paused.runId, { approved: false, reason: "over the team budget" }))
        )
        const done = success(second.exit)
        expect(tagsOf(done)).toEqual([
          "RunResumed",
          "ToolCallCompleted record_expense",
          "ToolCallStarted record_expense",
          "ToolCallCompleted record_expense",
          "RunCompleted"
        ])
        expect(done.find((e) => e._tag === "ToolCallCompleted")).toMatchObject({
          isError: true,
          result: "Rejected by a person: over the team budget"
        })
        expect(second.requests.length).toBe(1)
        expect(second.requests[0]!.toolResults.map((r) => [r.result, r.isFailure])).toEqual([
          ["Rejected by a person: over the team budget", true],
          ["Recorded taxi (35)", false]
        ])
        expect(yield* Ref.get(made)).toEqual(["taxi"])
        expect((yield* Workflow.getSessionState(expenses, "s").pipe(on(b))).expenses).toEqual([{
          description: "taxi",
          amount: 35
        }])
      })
  )

  it.effect(
    "two approvals in one run (in two turns, then two in one turn): questions #1, #2, #3, each continued elsewhere",
    () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const made = yield* Ref.make<ReadonlyArray<string>>([])
        const script = byTurn(
          TestModel.toolCalls(record("flight", 400)),
          TestModel.toolCalls(record("hotel", 300), record("taxi", 20), record("dinner", 150))
        )
        const first = yield* inProcess(make(), script, made, Workflow.run(expenses, "the trip", { sessionId: "s" }))
        expect(first.requests.length).toBe(1)
        const paused = yield* Effect.flip(first.exit)
        assert(paused._tag === "RunPaused")
        expect(paused.payload).toMatchObject({ tool: "record_expense", arguments: { description: "flight" } })

        const keys: Array<string | undefined> = []
        const models: Array<number> = []
        let exit: Exit.Exit<unknown, unknown> = first.exit
        for (const approved of [true, true, false]) {
          const store = make()
          keys.push((yield* Workflow.pausedRuns(expenses).pipe(on(store)))[0]?.pause?.key)
          const next = yield* inProcess(store, script, made, Workflow.continue(expenses, paused.runId, { approved }))
          models.push(next.requests.length)
          exit = next.exit
        }
        expect(keys).toEqual(["0:Expense Assistant#1", "0:Expense Assistant#2", "0:Expense Assistant#3"])
        // the flight's answer: one model call (turn 2, which asks for the hotel); the hotel's: none (the
        // taxi runs, the dinner asks); the dinner's: one (the last turn)
        expect(models).toEqual([1, 0, 1])
        const output = success(exit) as Workflow.RunOutput<string, unknown>
        expect(output.content).toBe(
          "after: Done: Recorded hotel (300); Recorded taxi (20); Rejected by a person."
        )
        expect(yield* Ref.get(made)).toEqual(["flight", "hotel", "taxi"])
      })
  )

  it.effect(
    "two runs of one agent in one top-level step: the run that asked carries on, the one before runs again",
    () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const made = yield* Ref.make<ReadonlyArray<string>>([])
        const twice = Workflow.make({
          name: "twice",
          state: Expenses,
          sessionState: { expenses: [] },
          input: Schema.String
        }).pipe(
          Workflow.andThen(Steps.make("both", [Step.agent("small", assistant), Step.agent("large", assistant)]))
        )
        // the first run records a coffee, the second (given the first's reply) a dinner that needs approval
        const script: TestModel.Responder = (request) =>
          request.turn === 0
            ? TestModel.toolCalls(request.lastUserMessage === "expenses" ? record("coffee", 4) : record("dinner", 240))
            : TestModel.text(`Done: ${request.toolResults.map((r) => StepOutput.contentText(r.result)).join("; ")}`)
        const first = yield* inProcess(make(), script, made, Workflow.run(twice, "expenses", { sessionId: "s" }))
        const paused = yield* Effect.flip(first.exit)
        assert(paused._tag === "RunPaused")
        expect(first.requests.map((r) => r.lastUserMessage)).toEqual([
          "expenses",
          "expenses",
          "Done: Recorded coffee (4)"
        ])
        const second = yield* inProcess(
          make(),
          script,
          made,
          Workflow.continue(twice, paused.runId, { approved: true })
        )
        // the small run runs again (two model calls); the large one carries on (one)
        expect(second.requests.map((r) => [r.lastUserMessage, r.turn])).toEqual([
          ["expenses", 0],
          ["expenses", 1],
          ["Done: Recorded coffee (4)", 1]
        ])
        const output = success(second.exit)
        expect(output.content).toBe("Done: Recorded dinner (240)")
        // the coffee's handler ran twice (work before the question in its top-level step is done again),
        // and the state at the question replaced the repeated change: recorded once
        expect(yield* Ref.get(made)).toEqual(["coffee", "coffee", "dinner"])
        expect(output.state.expenses.map((e) => e.description)).toEqual(["coffee", "dinner"])
      })
  )

  it.effect(
    "a team member's tool: the member carries on from its checkpoint; the leader's turn before runs again",
    () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const made = yield* Ref.make<ReadonlyArray<string>>([])
        const team = Team.make({ name: "Office", members: [assistant], instructions: "Delegate expenses." })
        const wf = Workflow.make({
          name: "office",
          state: Expenses,
          sessionState: { expenses: [] },
          input: Schema.String
        }).pipe(
          Workflow.andThen(Step.team("office", team))
        )
        const script: TestModel.Responder = (request) =>
          request.agent === "Office"
            ? request.turn === 0
              ? TestModel.toolCalls(["delegate_task_to_member", {
                member_name: "Expense Assistant",
                task: "record the dinner"
              }])
              : TestModel.text(`Office: ${request.toolResults.map((r) => StepOutput.contentText(r.result)).join("; ")}`)
            : byTurn(TestModel.toolCalls(record("dinner", 240)))(request)
        const first = yield* inProcess(make(), script, made, Workflow.run(wf, "dinner", { sessionId: "s" }))
        const paused = yield* Effect.flip(first.exit)
        assert(paused._tag === "RunPaused")
        expect(paused.payload).toMatchObject({ agent: "Expense Assistant", tool: "record_expense" })
        const second = yield* inProcess(make(), script, made, Workflow.continue(wf, paused.runId, { approved: true }))
        expect(second.requests.map((r) => [r.agent, r.turn])).toEqual([["Office", 0], ["Expense Assistant", 1], [
          "Office",
          1
        ]])
        expect(success(second.exit).content).toBe("Office: Done: Recorded dinner (240)")
        // the team's type knows that a member may pause
        const pauses: Extract<Agent.Error<typeof team.leader>, WorkflowError.RunPaused>["_tag"] = "RunPaused"
        expect(pauses).toBe("RunPaused")
      })
  )

  it.effect("a run with nothing to approve (all calls under the limit) does not pause", () =>
    Effect.gen(function*() {
      const made = yield* Ref.make<ReadonlyArray<string>>([])
      const { make } = yield* processes
      const script = byTurn(TestModel.toolCalls(record("coffee", 4), ["record_expense", { description: "bad" }]))
      const run = yield* inProcess(make(), script, made, Workflow.run(expenses, "coffee", { sessionId: "s" }))
      // arguments that do not decode are never asked about: they are an error result
      expect(success(run.exit).content).toMatch(
        /^after: Done: Recorded coffee \(4\); Invalid arguments for tool 'record_expense'/
      )
    }))

  it.effect("outside a workflow run nobody can be asked: the call is not made, the model gets an error result", () =>
    Effect.gen(function*() {
      const made = yield* Ref.make<ReadonlyArray<string>>([])
      const streamed = yield* Agent.stream(assistant, "dinner").pipe(
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray),
        Effect.provide(
          Layer.mergeAll(TestModel.layer(byTurn(TestModel.toolCalls(record("dinner", 240)))), toolsLive(made))
        ),
        Effect.provideServiceEffect(Expenses, SessionState.make<SessionState.Type<typeof Expenses>>({ expenses: [] }))
      )
      const result = streamed.at(-1)
      assert(result?._tag === "Completed")
      expect(result.result.content).toMatch(
        /^Done: Tool 'record_expense' needs a person's approval, and nobody can be asked outside a workflow run/
      )
      expect(streamed.filter((e) => e._tag !== "TextDelta").map((e) => e._tag)).toEqual([
        "ToolCallStarted",
        "ToolCallCompleted",
        "Completed"
      ])
      const completed = streamed.find((e) => e._tag === "ToolCallCompleted")
      expect(completed).toMatchObject({ isError: true })
      expect(String(completed?._tag === "ToolCallCompleted" ? completed.result : "")).toContain(
        "nobody can be asked outside a workflow run"
      )
      expect(yield* Ref.get(made)).toEqual([])
    }))

  it.scoped("on SQLite files: paused by one store, approved through another", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "sessionflow-approval-" })
      const sqlite = SqliteSessionStore.layer({ filename: `${dir}/approval.db` })
      const made = yield* Ref.make<ReadonlyArray<string>>([])
      const script = byTurn(TestModel.toolCalls(record("taxi", 35), record("team dinner", 240)))
      const withModel = <A, E, R>(self: Effect.Effect<A, E, R>) =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(self)
          return { exit, requests: yield* TestModel.requests }
        }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(script), toolsLive(made), sqlite)))
      const first = yield* withModel(Workflow.run(expenses, "taxi and dinner", { sessionId: "s", runId: "r1" }))
      expect(yield* Effect.flip(first.exit)).toMatchObject({ _tag: "RunPaused", runId: "r1" })
      const second = yield* withModel(Workflow.continue(expenses, "r1", { approved: true }))
      expect(second.requests.map((r) => r.turn)).toEqual([1])
      expect(success(second.exit).state.expenses.map((e) => e.description)).toEqual(["taxi", "team dinner"])
      expect(yield* Ref.get(made)).toEqual(["taxi", "team dinner"])
      const history = yield* Workflow.getRunHistory(expenses, "s").pipe(Effect.provide(sqlite))
      expect(history.map((r) => [r.runId, r.status])).toEqual([["r1", "completed"]])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it("the agent's type says it may pause only when a tool needs approval", () => {
    const _plain = Agent.make({ name: "plain", tools: Toolkit.make(ListExpenses) })
    type PlainErrors = Agent.Error<typeof _plain>
    type ApprovalErrors = Agent.Error<typeof assistant>
    const pauses: Extract<ApprovalErrors, WorkflowError.RunPaused>["_tag"] = "RunPaused"
    const decodes: Extract<ApprovalErrors, WorkflowError.ResponseDecodeError>["_tag"] = "ResponseDecodeError"
    // @ts-expect-error an agent without approval tools never pauses
    const never: Extract<PlainErrors, WorkflowError.RunPaused>["_tag"] = "RunPaused"
    expect([pauses, decodes, never]).toEqual(["RunPaused", "ResponseDecodeError", "RunPaused"])
  })
})
