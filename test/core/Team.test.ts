import { type LanguageModel, Tool, Toolkit } from "@effect/ai"
import { describe, expect, it } from "@effect/vitest"
import {
  Agent,
  SessionState,
  SessionStore,
  Step,
  Team,
  TestModel,
  Workflow,
  type WorkflowEvent
} from "@sessionflow/core"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"

// -- fixtures: the project steps of scenario 6 --------------------------------

const ProjectStep = Schema.Struct({ name: Schema.String, assignee: Schema.String, status: Schema.String })

class Project extends SessionState.Tag("test/Project")<Project>()({
  steps: Schema.Array(ProjectStep)
}) {}

const AddStep = Tool.make("add_step", {
  description: "Add a step to the project",
  parameters: { step_name: Schema.String, assignee: Schema.String },
  success: Schema.String,
  dependencies: [Project]
})
const DeleteStep = Tool.make("delete_step", {
  description: "Delete a step",
  parameters: { step_name: Schema.String },
  success: Schema.String,
  dependencies: [Project]
})
const ListSteps = Tool.make("list_steps", {
  description: "List the steps",
  success: Schema.String,
  dependencies: [Project]
})

const MemberTools = Toolkit.make(AddStep)
const LeaderTools = Toolkit.make(DeleteStep)
const StatusTools = Toolkit.make(ListSteps)

const MemberToolsLive = MemberTools.toLayer({
  add_step: ({ assignee, step_name }) =>
    Project.modify((s) => {
      const steps = [...s.steps, { name: step_name, assignee, status: "pending" }]
      return [`[OK] Successfully added step '${step_name}' assigned to ${assignee}. Total steps: ${steps.length}`, {
        steps
      }]
    })
})
const LeaderToolsLive = LeaderTools.toLayer({
  delete_step: ({ step_name }) =>
    Project.modify((s) => {
      const found = s.steps.find((x) => x.name === step_name)
      if (found === undefined) return [`[ERROR] Step '${step_name}' not found in the list`, s] as const
      const steps = s.steps.filter((x) => x !== found)
      return [`[OK] Successfully deleted step '${step_name}'. Remaining steps: ${steps.length}`, { steps }] as const
    })
})
const StatusToolsLive = StatusTools.toLayer({
  list_steps: () =>
    Effect.map(Project.get, (s) => s.steps.map((x) => `${x.name} (${x.assignee}, ${x.status})`).join("\n"))
})

const stepManager = Agent.make({
  name: "StepManager",
  description: "Adds project steps.",
  instructions: "You add steps.",
  tools: MemberTools
})
const stepCoordinator = Agent.make({ name: "StepCoordinator", instructions: ["You coordinate.", "Be brief."] })

const team = Team.make({
  name: "ManagementTeam",
  members: [stepManager, stepCoordinator],
  tools: LeaderTools,
  instructions: "You manage the project steps."
})

const statusManager = Agent.make({ name: "StatusManager", tools: StatusTools })

const projectWorkflow = Workflow.make({
  name: "project",
  state: Project,
  sessionState: { steps: [] },
  steps: [Step.team("manage_steps", team), Step.agent("update_status", statusManager)]
})

const env = (script: TestModel.Script) =>
  Layer.mergeAll(MemberToolsLive, LeaderToolsLive, StatusToolsLive, SessionStore.layerMemory, TestModel.layer(script))

const delegate = (member_name: string, task: string) =>
  TestModel.toolCalls([Team.delegateToolName, { member_name, task }])

describe("Team", () => {
  it.effect("delegates to a member whose tool writes the state a next step reads", () =>
    Effect.gen(function*() {
      const out = yield* Workflow.run(projectWorkflow, "Add 'Setup Database' for Alice", { sessionId: "p" })
      expect(out.state.steps).toEqual([{ name: "Setup Database", assignee: "Alice", status: "pending" }])
      expect(out.stepOutputs.map((o) => o.content)).toEqual(["The team added Setup Database.", "One step."])

      const requests = yield* TestModel.requests
      expect(requests.map((r) => r.agent)).toEqual([
        "ManagementTeam",
        "StepManager",
        "StepManager",
        "ManagementTeam",
        "StatusManager",
        "StatusManager"
      ])
      const [leader, member, , leaderAgain, , status] = requests
      expect(leader!.tools).toEqual(["delete_step", Team.delegateToolName])
      expect(leader!.system).toContain("You manage the project steps.")
      expect(leader!.system).toContain("- StepManager: Adds project steps.")
      expect(leader!.system).toContain("- StepCoordinator: You coordinate. Be brief.")
      expect(member!.lastUserMessage).toBe("Add the step 'Setup Database' assigned to Alice")
      expect(member!.tools).toEqual(["add_step"])
      // the member's reply is the leader's tool result
      expect(leaderAgain!.toolResults).toEqual([
        { id: "call_0_0", name: Team.delegateToolName, result: "Added Setup Database.", isFailure: false }
      ])
      // the next step's tool reads what the member wrote
      expect(status!.toolResults[0]!.result).toBe("Setup Database (Alice, pending)")
    }).pipe(Effect.provide(env([
      delegate("StepManager", "Add the step 'Setup Database' assigned to Alice"),
      TestModel.toolCalls(["add_step", { step_name: "Setup Database", assignee: "Alice" }]),
      TestModel.text("Added Setup Database."),
      TestModel.text("The team added Setup Database."),
      TestModel.toolCalls(["list_steps", {}]),
      TestModel.text("One step.")
    ]))))

  it.effect("shares one state between the leader's own tools and the members", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({
        name: "project",
        state: Project,
        sessionState: { steps: [{ name: "Old", assignee: "Zed", status: "pending" }] },
        steps: [Step.team("manage_steps", team)]
      })
      const out = yield* Workflow.run(wf, "Replace 'Old' with 'New' for Bob")
      expect(out.state.steps).toEqual([{ name: "New", assignee: "Bob", status: "pending" }])
    }).pipe(Effect.provide(env((request) => {
      if (request.agent === "StepManager") {
        return request.turn === 0
          ? TestModel.toolCalls(["add_step", { step_name: "New", assignee: "Bob" }])
          : TestModel.text("Added New.")
      }
      switch (request.turn) {
        case 0:
          return delegate("StepManager", "Add 'New' for Bob")
        case 1:
          // the leader's tool sees the member's write: two steps, then one
          return TestModel.toolCalls(["delete_step", { step_name: "Old" }])
        default:
          expect(request.toolResults[0]!.result).toBe("[OK] Successfully deleted step 'Old'. Remaining steps: 1")
          return TestModel.text("Done.")
      }
    }))))

  it.effect("lets a member delete a key of the shared state", () =>
    Effect.gen(function*() {
      const DiscardDraft = Tool.make("discard_draft", {
        success: Schema.String,
        dependencies: [SessionState.SessionState]
      })
      const DraftTools = Toolkit.make(DiscardDraft)
      const cleaner = Agent.make({ name: "Cleaner", tools: DraftTools })
      const cleanup = Team.make({ name: "Cleanup", members: [cleaner] })
      const wf = Workflow.make({
        name: "drafts",
        sessionState: { steps: ["a"], draft: "half-written" },
        steps: [
          Step.team("clean", cleanup),
          Step.make("check", () => Effect.map(SessionState.get, (s) => ("draft" in s ? "still there" : "gone")))
        ]
      })
      const events = yield* Workflow.stream(wf, "Throw the draft away", { sessionId: "d" }).pipe(
        Stream.runCollect,
        Effect.map(Chunk.toArray),
        Effect.provide(DraftTools.toLayer({
          discard_draft: () =>
            SessionState.modify((s) => {
              const { draft: _, ...rest } = s
              return ["Draft discarded.", rest] as const
            })
        }))
      )
      const changed = events.find((e): e is WorkflowEvent.StateChanged => e._tag === "StateChanged")!
      expect(changed.changes).toEqual([{ op: "delete", path: ["draft"], previous: "half-written" }])
      expect(changed.path).toEqual(["clean", "Cleaner"])
      const completed = events.filter((e): e is WorkflowEvent.StepCompleted => e._tag === "StepCompleted")
      expect(completed.map((e) => [e.stepName, e.content])).toEqual([["clean", "The draft is gone."], [
        "check",
        "gone"
      ]])
      const stored = yield* Workflow.getSessionState(wf, "d")
      expect(stored).toEqual({ steps: ["a"] })
      expect("draft" in stored).toBe(false)
    }).pipe(Effect.provide(Layer.merge(
      SessionStore.layerMemory,
      TestModel.layer([
        delegate("Cleaner", "Discard the draft"),
        TestModel.toolCalls(["discard_draft", {}]),
        TestModel.text("Discarded."),
        TestModel.text("The draft is gone.")
      ])
    ))))

  it.effect("publishes members' events one level below the team step", () =>
    Effect.gen(function*() {
      const events = yield* Workflow.stream(projectWorkflow, "Add 'Setup Database' for Alice").pipe(
        Stream.runCollect,
        Effect.map(Chunk.toArray)
      )
      const teamEvents = events.filter((e) => e.path[0] === "manage_steps")
      expect(teamEvents.map((e) => `${e._tag} ${e.path.join("/")}`)).toEqual([
        "StepStarted manage_steps",
        "ToolCallStarted manage_steps",
        "ToolCallStarted manage_steps/StepManager",
        "StateChanged manage_steps/StepManager",
        "ToolCallCompleted manage_steps/StepManager",
        "TextDelta manage_steps/StepManager",
        "ToolCallCompleted manage_steps",
        "TextDelta manage_steps",
        "StepCompleted manage_steps"
      ])
      expect(teamEvents[0]).toMatchObject({ _tag: "StepStarted", kind: "team" })
      expect(teamEvents[1]).toMatchObject({
        toolName: Team.delegateToolName,
        arguments: { member_name: "StepManager", task: "Add it" }
      })
      expect(teamEvents[6]).toMatchObject({ toolName: Team.delegateToolName, result: "Added.", isError: false })
    }).pipe(Effect.provide(env([
      delegate("StepManager", "Add it"),
      TestModel.toolCalls(["add_step", { step_name: "Setup Database", assignee: "Alice" }]),
      TestModel.text("Added."),
      TestModel.text("Done."),
      TestModel.text("Nothing to update.")
    ]))))

  it.effect("reports a failing member and an unknown member to the leader as error results", () =>
    Effect.gen(function*() {
      const hasty = Agent.make({ name: "Hasty", tools: MemberTools, maxTurns: 1 })
      const t = Team.make({ name: "T", members: [hasty] })
      const result = yield* Team.run(t, "Add a step").pipe(
        Effect.provideServiceEffect(
          Project,
          SessionState.make<Schema.Schema.Type<typeof Project.schema>>({ steps: [] })
        )
      )
      expect(result.content).toBe("Could not do it.")
      const requests = yield* TestModel.requests
      expect(requests[2]!.toolResults[0]).toMatchObject({
        isFailure: true,
        result: "Member 'Hasty' failed: Agent 'Hasty' exceeded its limit of 1 model turn and still asked for tools"
      })
      const unknown = requests[3]!.toolResults[0]!
      expect(unknown.isFailure).toBe(true)
      expect(unknown.result).toContain(`Invalid arguments for tool '${Team.delegateToolName}'`)
      expect(unknown.result).toContain("Unknown member \"Nobody\"; the members are \"Hasty\"")
    }).pipe(Effect.provide(Layer.merge(
      MemberToolsLive,
      TestModel.layer([
        delegate("Hasty", "Add a step"),
        TestModel.toolCalls(["add_step", { step_name: "x", assignee: "y" }]),
        delegate("Nobody", "Add a step"),
        TestModel.text("Could not do it.")
      ])
    ))))

  it("rejects members with the same name", () => {
    expect(() => Team.make({ name: "Twins", members: [stepManager, stepManager] })).toThrow(
      "Team 'Twins': two members are named 'StepManager'"
    )
  })
})

// -- type-level checks (tsc -b) ------------------------------------------------

// a member's tool handlers are requirements of the team, and so of the workflow
export const needs: Effect.Effect<
  unknown,
  unknown,
  | LanguageModel.LanguageModel
  | Tool.HandlersFor<Toolkit.Tools<typeof MemberTools>>
  | Tool.HandlersFor<Toolkit.Tools<typeof LeaderTools>>
  | Tool.HandlersFor<Toolkit.Tools<typeof StatusTools>>
  | SessionStore.SessionStore
> = Workflow.run(projectWorkflow, "x")

// @ts-expect-error the member's tool handlers (MemberToolsLive) are not provided
export const missingMemberHandlers: Effect.Effect<unknown, unknown, never> = Workflow.run(projectWorkflow, "x").pipe(
  Effect.provide(
    Layer.mergeAll(LeaderToolsLive, StatusToolsLive, SessionStore.layerMemory, TestModel.layer([]))
  )
)
