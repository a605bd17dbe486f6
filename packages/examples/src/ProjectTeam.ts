/**
 * Scenario 6 — a team step and an agent step sharing one state (agno's
 * `state_with_team`): the "ManagementTeam" leader adds and deletes project
 * steps with its own tools (members StepManager and StepCoordinator), then the
 * "StatusManager" agent updates statuses and assignees.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, SessionState, Step, Team, TestModel, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Offline from "./Offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

/**
 * @since 0.1.0
 * @category state
 */
export const ProjectStep = Schema.Struct({
  name: Schema.String,
  assignee: Schema.String,
  status: Schema.String,
  priority: Schema.String,
  created_at: Schema.String,
  notes: Schema.optional(Schema.String),
  last_updated: Schema.optional(Schema.String)
})

/**
 * @since 0.1.0
 * @category state
 */
export type ProjectStep = typeof ProjectStep.Type

/**
 * @since 0.1.0
 * @category state
 */
export class Project extends SessionState.Tag("@sessionflow/examples/Project")<Project>()({
  steps: Schema.Array(ProjectStep)
}) {}

/**
 * The five runs.
 *
 * @since 0.1.0
 * @category inputs
 */
export const inputs = [
  "Add a high priority step called 'Setup Database' assigned to Alice, and a medium priority step called 'Create API' assigned to Bob",
  "Mark 'Setup Database' as in_progress with notes 'Started database schema design'",
  "Reassign 'Create API' to Charlie, then mark it as completed with notes 'API endpoints implemented and tested'",
  "Add a low priority step 'Write Tests' assigned to Dave, then mark 'Setup Database' as completed",
  "Delete the 'Write Tests' step and add a high priority 'Deploy to Production' step assigned to Eve"
] as const

/**
 * @since 0.1.0
 * @category tools
 */
export const AddStep = Tool.make("add_step", {
  description: "Add a project step with an assignee and a priority (low, medium, high).",
  parameters: {
    step_name: Schema.String,
    assignee: Schema.String,
    priority: Schema.optional(Schema.String.annotations({ description: "low, medium or high (default medium)" }))
  },
  success: Schema.String,
  dependencies: [Project]
})

/**
 * @since 0.1.0
 * @category tools
 */
export const DeleteStep = Tool.make("delete_step", {
  description: "Delete a project step by its exact name.",
  parameters: { step_name: Schema.String },
  success: Schema.String,
  dependencies: [Project]
})

/**
 * @since 0.1.0
 * @category tools
 */
export const UpdateStepStatus = Tool.make("update_step_status", {
  description: "Change a step's status (pending, in_progress, completed, blocked, cancelled), with optional notes.",
  parameters: {
    step_name: Schema.String,
    new_status: Schema.String,
    notes: Schema.optional(Schema.String)
  },
  success: Schema.String,
  dependencies: [Project]
})

/**
 * @since 0.1.0
 * @category tools
 */
export const AssignStep = Tool.make("assign_step", {
  description: "Reassign a step to someone else.",
  parameters: { step_name: Schema.String, new_assignee: Schema.String },
  success: Schema.String,
  dependencies: [Project]
})

/**
 * The team leader's tools.
 *
 * @since 0.1.0
 * @category tools
 */
export const TeamTools = Toolkit.make(AddStep, DeleteStep)

/**
 * The StatusManager's tools.
 *
 * @since 0.1.0
 * @category tools
 */
export const StatusTools = Toolkit.make(UpdateStepStatus, AssignStep)

/**
 * Every tool of the scenario, for one handler layer.
 *
 * @since 0.1.0
 * @category tools
 */
export const ProjectTools = Toolkit.make(AddStep, DeleteStep, UpdateStepStatus, AssignStep)

/**
 * @since 0.1.0
 * @category tools
 */
export const ProjectToolsLive = ProjectTools.toLayer({
  add_step: ({ assignee, priority = "medium", step_name }) =>
    Project.modify((s) => {
      const steps = [...s.steps, { name: step_name, assignee, status: "pending", priority, created_at: "now" }]
      return [
        `[OK] Successfully added step '${step_name}' assigned to ${assignee} (priority: ${priority}). Total steps: ${steps.length}`,
        { ...s, steps }
      ]
    }),
  delete_step: ({ step_name }) =>
    Project.modify((s) => {
      if (s.steps.length === 0) return ["[ERROR] No steps found to delete", s]
      const index = s.steps.findIndex((step) => step.name === step_name)
      if (index === -1) return [`[ERROR] Step '${step_name}' not found in the list`, s]
      const steps = s.steps.filter((_, i) => i !== index)
      return [
        `[OK] Successfully deleted step '${step_name}' (was assigned to ${s.steps[index]!.assignee}). Remaining steps: ${steps.length}`,
        { ...s, steps }
      ]
    }),
  update_step_status: ({ new_status, notes = "", step_name }) =>
    Project.modify((s) => {
      if (s.steps.length === 0) return ["[ERROR] No steps found in workflow session state", s]
      const found = s.steps.find((step) => step.name === step_name)
      if (found === undefined) return [`[ERROR] Step '${step_name}' not found in the list`, s]
      const updated = { ...found, status: new_status, ...(notes ? { notes } : {}), last_updated: "now" }
      return [
        `[OK] Updated step '${step_name}' status from '${found.status}' to '${new_status}'${notes ? ` with notes: ${notes}` : ""}`,
        { ...s, steps: s.steps.map((step) => (step === found ? updated : step)) }
      ]
    }),
  assign_step: ({ new_assignee, step_name }) =>
    Project.modify((s) => {
      if (s.steps.length === 0) return ["[ERROR] No steps found in workflow session state", s]
      const found = s.steps.find((step) => step.name === step_name)
      if (found === undefined) return [`[ERROR] Step '${step_name}' not found in the list`, s]
      return [
        `[OK] Reassigned step '${step_name}' from ${found.assignee} to ${new_assignee}`,
        {
          ...s,
          steps: s.steps.map((step) => (step === found ? { ...step, assignee: new_assignee, last_updated: "now" } : step))
        }
      ]
    })
})

const statusLabels: Record<string, string> = {
  pending: "[PENDING]",
  in_progress: "[IN_PROGRESS]",
  completed: "[COMPLETED]",
  blocked: "[BLOCKED]",
  cancelled: "[CANCELLED]"
}
const priorityLabels: Record<string, string> = { high: "[HIGH]", medium: "[MEDIUM]", low: "[LOW]" }

/**
 * The project steps as printed after each run.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderSteps = (steps: ReadonlyArray<ProjectStep>): string => {
  if (steps.length === 0) return "Step list is empty"
  const lines = ["Current Project Steps:"]
  steps.forEach((step, i) => {
    lines.push(
      `  ${i + 1}. ${statusLabels[step.status] ?? "[UNKNOWN]"} ${priorityLabels[step.priority] ?? "[MEDIUM]"} ${step.name} (assigned to: ${step.assignee}, status: ${step.status})`
    )
    if (step.notes !== undefined) lines.push(`     Notes: ${step.notes}`)
  })
  return lines.join("\n")
}

// -----------------------------------------------------------------------------
// agents, team and workflow
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category agents
 */
export const stepManager = Agent.make({
  name: "StepManager",
  instructions: [
    "You are a precise step manager. Your ONLY job is to use the provided tools.",
    "When asked to add a step: ALWAYS use add_step(step_name, assignee, priority).",
    "When asked to delete a step: ALWAYS use delete_step(step_name).",
    "Do NOT create imaginary steps or lists.",
    "Do NOT provide explanations beyond what the tool returns.",
    "Be direct and use the tools immediately."
  ]
})

/**
 * @since 0.1.0
 * @category agents
 */
export const stepCoordinator = Agent.make({
  name: "StepCoordinator",
  instructions: [
    "You coordinate with the StepManager to ensure tasks are completed.",
    "Support the team by confirming actions and helping with coordination.",
    "Be concise and focus on the specific request."
  ]
})

/**
 * The team: its leader holds add_step and delete_step.
 *
 * @since 0.1.0
 * @category agents
 */
export const managementTeam = Team.make({
  name: "ManagementTeam",
  members: [stepManager, stepCoordinator],
  tools: TeamTools,
  instructions: [
    "You are a step management team that ONLY uses the provided tools for adding and deleting steps.",
    "CRITICAL: Use add_step(step_name, assignee, priority) to add steps.",
    "CRITICAL: Use delete_step(step_name) to delete steps.",
    "IMPORTANT: You do NOT handle status updates - that's handled by the status manager in the next step.",
    "IMPORTANT: Do NOT delete steps when asked to mark them as completed - only delete when explicitly asked to delete.",
    "If asked to mark a step as completed, respond that status updates are handled by the status manager.",
    "Do NOT create fictional content or step lists.",
    "Execute only the requested add/delete actions using tools and report the result."
  ]
})

/**
 * @since 0.1.0
 * @category agents
 */
export const statusManager = Agent.make({
  name: "StatusManager",
  instructions: [
    "You manage step statuses and assignments using the provided tools.",
    "Use update_step_status(step_name, new_status, notes) to change step status.",
    "Use assign_step(step_name, new_assignee) to reassign steps.",
    "Valid statuses: 'pending', 'in_progress', 'completed', 'blocked', 'cancelled'.",
    "Be precise and only use the tools provided."
  ],
  tools: StatusTools
})

/**
 * @since 0.1.0
 * @category workflows
 */
export const projectWorkflow = Workflow.make({
  name: "Project Management Workflow",
  state: Project,
  sessionState: { steps: [] },
  steps: [
    Step.team("manage_steps", managementTeam, {
      description: "Management team uses tools to add/delete steps in the workflow session state"
    }),
    Step.agent("update_status", statusManager, { description: "Status manager updates step statuses and assignments" })
  ]
})

// -----------------------------------------------------------------------------
// the offline model
// -----------------------------------------------------------------------------

/**
 * The additions a request names: "<priority> priority step (called) '<name>'
 * assigned to <who>".
 *
 * @since 0.1.0
 * @category offline
 */
export const stepsToAdd = (text: string): ReadonlyArray<{ step_name: string; assignee: string; priority: string }> =>
  Array.from(
    text.matchAll(/\b(high|medium|low)\s+priority\s+(?:step\s+)?(?:called\s+|named\s+)?'([^']+)'(?:\s+step)?\s+assigned\s+to\s+([\w-]+)/gi),
    (m) => ({ step_name: m[2]!, assignee: m[3]!, priority: m[1]!.toLowerCase() })
  )

/**
 * The deletions a request names: "delete (the) '<name>'".
 *
 * @since 0.1.0
 * @category offline
 */
export const stepsToDelete = (text: string): ReadonlyArray<string> =>
  Array.from(text.matchAll(/\b(?:delete|remove)\s+(?:the\s+)?(?:step\s+)?'([^']+)'/gi), (m) => m[1]!)

/**
 * The status changes and reassignments a request names, in order ("it" is the
 * step named just before).
 *
 * @since 0.1.0
 * @category offline
 */
export const statusChanges = (text: string): ReadonlyArray<readonly [string, Record<string, string>]> => {
  const out: Array<readonly [string, Record<string, string>]> = []
  let last: string | undefined
  const pattern =
    /\breassign\s+'([^']+)'\s+to\s+([\w-]+)|\bmark\s+(?:'([^']+)'|it)\s+as\s+(pending|in_progress|completed|blocked|cancelled)(?:\s+with\s+notes?\s+'([^']+)')?/gi
  for (const m of text.matchAll(pattern)) {
    if (m[1] !== undefined) {
      last = m[1]
      out.push(["assign_step", { step_name: m[1], new_assignee: m[2]! }])
    } else {
      const step_name = m[3] ?? last
      if (step_name === undefined) continue
      last = step_name
      out.push(["update_step_status", { step_name, new_status: m[4]!, ...(m[5] === undefined ? {} : { notes: m[5] }) }])
    }
  }
  return out
}

const leaderTurn = (request: TestModel.Request): TestModel.Reply => {
  const text = Offline.userRequest(request)
  const past = Offline.pastCalls(request)
  if (request.turn === 0) {
    const calls = [
      ...stepsToDelete(text).map((step_name) => ["delete_step", { step_name }] as const),
      ...stepsToAdd(text).map((add) => ["add_step", add] as const)
    ]
    return calls.length > 0
      ? TestModel.toolCalls(...calls)
      : TestModel.text("No steps to add or delete. Status updates are handled by the status manager in the next step.")
  }
  if (!past.some((c) => c.name === "delegate_task_to_member")) {
    const changes = past.map((c) => {
      const params = c.params as { readonly step_name?: string }
      return `${c.name === "add_step" ? "added" : "deleted"} '${params.step_name ?? "?"}'`
    })
    return TestModel.toolCalls(["delegate_task_to_member", {
      member_name: "StepCoordinator",
      task: `Please confirm: ${Offline.joinAnd(changes)}.`
    }])
  }
  const results = past.filter((c) => c.name !== "delegate_task_to_member").map((c) => String(c.result))
  return TestModel.text(results.join("\n"))
}

const statusTurn = (request: TestModel.Request): TestModel.Reply => {
  if (request.turn === 0) {
    const calls = statusChanges(Offline.userRequest(request))
    return calls.length > 0 ? TestModel.toolCalls(...calls) : TestModel.text("No status changes or reassignments requested.")
  }
  return TestModel.text(Offline.pastCalls(request).map((c) => String(c.result)).join("\n"))
}

/**
 * The scripted model: the leader adds/deletes what the request names and has
 * the coordinator confirm; the StatusManager applies status changes and
 * reassignments.
 *
 * @since 0.1.0
 * @category offline
 */
export const offlineModel = TestModel.layer((request) => {
  switch (request.agent) {
    case "StatusManager":
      return statusTurn(request)
    case "StepCoordinator":
      return TestModel.text(
        `Confirmed — ${(request.lastUserMessage ?? "").replace(/^Please confirm:\s*/i, "").replace(/\.$/, "")}. Status changes go to the StatusManager next.`
      )
    case "StepManager":
      return TestModel.text("Acknowledged.")
    default:
      return leaderTurn(request)
  }
})

// -----------------------------------------------------------------------------
// main
// -----------------------------------------------------------------------------

const titles = [
  "Add Multiple Steps",
  "Update Step Status",
  "Reassign and Complete Step",
  "Add and Manage More Steps",
  "Delete Step"
]

/**
 * Runs the five requests on a new session, printing the steps after each.
 *
 * @since 0.1.0
 * @category main
 */
export const main = (options: Scenario.Options = {}): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const db = options.db ?? Scenario.defaultDb("team")
    const model = yield* Scenario.chooseModel(offlineModel, options)
    const sessionId = `project-${crypto.randomUUID().slice(0, 8)}`
    yield* Effect.gen(function*() {
      for (const [i, input] of inputs.entries()) {
        yield* Output.heading(`Example ${i + 1}: ${titles[i]}`)
        yield* Scenario.runShown(projectWorkflow, input, { sessionId })
        const state = yield* Workflow.getSessionState(projectWorkflow, sessionId)
        yield* Output.say(renderSteps(state.steps))
      }
      yield* Output.state("Workflow session state", yield* Workflow.getSessionState(projectWorkflow, sessionId))
    }).pipe(Effect.provide(Layer.mergeAll(model, ProjectToolsLive, Scenario.storeLayer(options, db))))
  }).pipe(Output.withConsole)

/**
 * @since 0.1.0
 * @category scenario
 */
export const scenario: Scenario.Scenario = {
  name: "team",
  aliases: ["project-team", "project", "teams"],
  cookbook: "state_with_team",
  description: "A team leader's tools and a status agent manage project steps in one shared state",
  main
}
