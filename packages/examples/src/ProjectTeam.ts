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
import { Agent, SessionState, Step, Team, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Output from "./Output.js"
import { offlineModel } from "./ProjectTeam.offline.js"
import * as Scenario from "./Scenario.js"

export { offlineModel, statusChanges, stepsToAdd, stepsToDelete } from "./ProjectTeam.offline.js"

// -- state -------------------------------------------------------------------

export const ProjectStep = Schema.Struct({
  name: Schema.String,
  assignee: Schema.String,
  status: Schema.String,
  priority: Schema.String,
  created_at: Schema.String,
  notes: Schema.optional(Schema.String),
  last_updated: Schema.optional(Schema.String)
})
export type ProjectStep = typeof ProjectStep.Type

export class Project extends SessionState.Tag("@sessionflow/examples/Project")<Project>()({
  steps: Schema.Array(ProjectStep)
}) {}

// -- tools -------------------------------------------------------------------

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
export const DeleteStep = Tool.make("delete_step", {
  description: "Delete a project step by its exact name.",
  parameters: { step_name: Schema.String },
  success: Schema.String,
  dependencies: [Project]
})
export const UpdateStepStatus = Tool.make("update_step_status", {
  description: "Change a step's status (pending, in_progress, completed, blocked, cancelled), with optional notes.",
  parameters: { step_name: Schema.String, new_status: Schema.String, notes: Schema.optional(Schema.String) },
  success: Schema.String,
  dependencies: [Project]
})
export const AssignStep = Tool.make("assign_step", {
  description: "Reassign a step to someone else.",
  parameters: { step_name: Schema.String, new_assignee: Schema.String },
  success: Schema.String,
  dependencies: [Project]
})
export const ProjectTools = Toolkit.make(AddStep, DeleteStep, UpdateStepStatus, AssignStep)

/** Applies `f` to the step named `name`, or says why it cannot. */
const withStep = (name: string, f: (step: ProjectStep) => readonly [string, ProjectStep]) =>
  Project.modify((s): readonly [string, typeof s] => {
    if (s.steps.length === 0) return ["[ERROR] No steps found in workflow session state", s]
    const found = s.steps.find((step) => step.name === name)
    if (found === undefined) return [`[ERROR] Step '${name}' not found in the list`, s]
    const [reply, updated] = f(found)
    return [reply, { steps: s.steps.map((step) => (step === found ? updated : step)) }]
  })

export const ProjectToolsLive = ProjectTools.toLayer({
  add_step: ({ assignee, priority = "medium", step_name }) =>
    Project.modify((s) => {
      const steps = [...s.steps, { name: step_name, assignee, status: "pending", priority, created_at: "now" }]
      return [`[OK] Successfully added step '${step_name}' assigned to ${assignee} (priority: ${priority}). Total steps: ${steps.length}`, { steps }]
    }),
  delete_step: ({ step_name }) =>
    Project.modify((s) => {
      if (s.steps.length === 0) return ["[ERROR] No steps found to delete", s]
      const found = s.steps.find((step) => step.name === step_name)
      if (found === undefined) return [`[ERROR] Step '${step_name}' not found in the list`, s]
      const steps = s.steps.filter((step) => step !== found)
      return [`[OK] Successfully deleted step '${step_name}' (was assigned to ${found.assignee}). Remaining steps: ${steps.length}`, { steps }]
    }),
  update_step_status: ({ new_status, notes = "", step_name }) =>
    withStep(step_name, (found) => [
      `[OK] Updated step '${step_name}' status from '${found.status}' to '${new_status}'${notes ? ` with notes: ${notes}` : ""}`,
      { ...found, status: new_status, ...(notes ? { notes } : {}), last_updated: "now" }
    ]),
  assign_step: ({ new_assignee, step_name }) =>
    withStep(step_name, (found) => [
      `[OK] Reassigned step '${step_name}' from ${found.assignee} to ${new_assignee}`,
      { ...found, assignee: new_assignee, last_updated: "now" }
    ])
})

const statusLabels: Record<string, string> = {
  pending: "[PENDING]",
  in_progress: "[IN_PROGRESS]",
  completed: "[COMPLETED]",
  blocked: "[BLOCKED]",
  cancelled: "[CANCELLED]"
}
const priorityLabels: Record<string, string> = { high: "[HIGH]", medium: "[MEDIUM]", low: "[LOW]" }

// the steps as printed after each run
export const renderSteps = (steps: ReadonlyArray<ProjectStep>): string =>
  steps.length === 0 ? "Step list is empty" : [
    "Current Project Steps:",
    ...steps.flatMap((step, i) => [
      `  ${i + 1}. ${statusLabels[step.status] ?? "[UNKNOWN]"} ${priorityLabels[step.priority] ?? "[MEDIUM]"} ${step.name} (assigned to: ${step.assignee}, status: ${step.status})`,
      ...(step.notes === undefined ? [] : [`     Notes: ${step.notes}`])
    ])
  ].join("\n")

// -- agents and team ---------------------------------------------------------

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

export const stepCoordinator = Agent.make({
  name: "StepCoordinator",
  instructions: [
    "You coordinate with the StepManager to ensure tasks are completed.",
    "Support the team by confirming actions and helping with coordination.",
    "Be concise and focus on the specific request."
  ]
})

// the leader holds add_step and delete_step
export const managementTeam = Team.make({
  name: "ManagementTeam",
  members: [stepManager, stepCoordinator],
  tools: Toolkit.make(AddStep, DeleteStep),
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

export const statusManager = Agent.make({
  name: "StatusManager",
  instructions: [
    "You manage step statuses and assignments using the provided tools.",
    "Use update_step_status(step_name, new_status, notes) to change step status.",
    "Use assign_step(step_name, new_assignee) to reassign steps.",
    "Valid statuses: 'pending', 'in_progress', 'completed', 'blocked', 'cancelled'.",
    "Be precise and only use the tools provided."
  ],
  tools: Toolkit.make(UpdateStepStatus, AssignStep)
})

// -- workflow ----------------------------------------------------------------

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

// -- main: five requests on one session, the steps after each ------------------

export const inputs = [
  "Add a high priority step called 'Setup Database' assigned to Alice, and a medium priority step called 'Create API' assigned to Bob",
  "Mark 'Setup Database' as in_progress with notes 'Started database schema design'",
  "Reassign 'Create API' to Charlie, then mark it as completed with notes 'API endpoints implemented and tested'",
  "Add a low priority step 'Write Tests' assigned to Dave, then mark 'Setup Database' as completed",
  "Delete the 'Write Tests' step and add a high priority 'Deploy to Production' step assigned to Eve"
] as const

const titles = ["Add Multiple Steps", "Update Step Status", "Reassign and Complete Step", "Add and Manage More Steps", "Delete Step"]

export const scenario = Scenario.make({
  name: "team", cookbook: "state_with_team", aliases: ["project-team", "project", "teams"],
  description: "A team leader's tools and a status agent manage project steps in one shared state",
  workflows: [projectWorkflow], offlineModel, layer: ProjectToolsLive
}, () =>
  Effect.gen(function*() {
    const sessionId = Scenario.newSessionId("project")
    let state = { steps: [] as ReadonlyArray<ProjectStep> }
    for (const [i, input] of inputs.entries()) {
      state = yield* Scenario.showRun(projectWorkflow, input, { heading: `Example ${i + 1}: ${titles[i]}`, sessionId })
      yield* Output.say(renderSteps(state.steps))
    }
    yield* Output.state("Workflow session state", state)
  }))

export const main = scenario.main
