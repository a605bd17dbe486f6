/**
 * Scenario 6 — a team step and an agent step sharing one state (agno's
 * `state_with_team`): the "ManagementTeam" leader adds and deletes project
 * steps with its own tools (members StepManager and StepCoordinator), then the
 * "StatusManager" agent updates statuses and assignees. The tools are in
 * `ProjectTeam.tools.ts`, the scripted replies in `ProjectTeam.offline.ts`.
 *
 * @since 0.1.0
 */
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, Step, Team, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Output from "./Output.js"
import { offlineModel } from "./ProjectTeam.offline.js"
import {
  AddStep,
  AssignStep,
  DeleteStep,
  Project,
  ProjectToolsLive,
  renderSteps,
  UpdateStepStatus
} from "./ProjectTeam.tools.js"
import * as Scenario from "./Scenario.js"

export { offlineModel, statusChanges, stepsToAdd, stepsToDelete } from "./ProjectTeam.offline.js"
export * from "./ProjectTeam.tools.js"

// -- agents (the team's members, the status manager) and the team -----------

export const stepManager = Agent.make({
  name: "StepManager",
  instructions: `You are a precise step manager. Your ONLY job is to use the provided tools.
When asked to add a step: ALWAYS use add_step(step_name, assignee, priority).
When asked to delete a step: ALWAYS use delete_step(step_name).
Do NOT create imaginary steps or lists.
Do NOT provide explanations beyond what the tool returns.
Be direct and use the tools immediately.`
})

export const stepCoordinator = Agent.make({
  name: "StepCoordinator",
  instructions: `You coordinate with the StepManager to ensure tasks are completed.
Support the team by confirming actions and helping with coordination.
Be concise and focus on the specific request.`
})

export const statusManager = Agent.make({
  name: "StatusManager",
  instructions: `You manage step statuses and assignments using the provided tools.
Use update_step_status(step_name, new_status, notes) to change step status.
Use assign_step(step_name, new_assignee) to reassign steps.
Valid statuses: 'pending', 'in_progress', 'completed', 'blocked', 'cancelled'.
Be precise and only use the tools provided.`,
  tools: Toolkit.make(UpdateStepStatus, AssignStep)
})

// the leader holds add_step and delete_step
export const managementTeam = Team.make({
  name: "ManagementTeam",
  members: [stepManager, stepCoordinator],
  tools: Toolkit.make(AddStep, DeleteStep),
  instructions: `You are a step management team that ONLY uses the provided tools for adding and deleting steps.
CRITICAL: Use add_step(step_name, assignee, priority) to add steps.
CRITICAL: Use delete_step(step_name) to delete steps.
IMPORTANT: You do NOT handle status updates - that's handled by the status manager in the next step.
IMPORTANT: Do NOT delete steps when asked to mark them as completed - only delete when explicitly asked to delete.
If asked to mark a step as completed, respond that status updates are handled by the status manager.
Do NOT create fictional content or step lists.
Execute only the requested add/delete actions using tools and report the result.`
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
  "Add a high priority step called 'Setup Database' assigned to " +
  "Alice, and a medium priority step called 'Create API' assigned to Bob",
  "Mark 'Setup Database' as in_progress with notes 'Started database schema design'",
  "Reassign 'Create API' to Charlie, then mark it as completed with notes 'API endpoints implemented and tested'",
  "Add a low priority step 'Write Tests' assigned to Dave, then mark 'Setup Database' as completed",
  "Delete the 'Write Tests' step and add a high priority 'Deploy to Production' step assigned to Eve"
] as const

const titles = [
  "Add Multiple Steps",
  "Update Step Status",
  "Reassign and Complete Step",
  "Add and Manage More Steps",
  "Delete Step"
]

export const scenario = Scenario.make({
  name: "team",
  cookbook: "state_with_team",
  aliases: ["project-team", "project", "teams"],
  description: "A team leader's tools and a status agent manage project steps in one shared state",
  workflows: [projectWorkflow],
  offlineModel,
  layer: ProjectToolsLive
}, () =>
  Effect.gen(function*() {
    const sessionId = Scenario.newSessionId("project")
    for (const [i, input] of inputs.entries()) {
      yield* Output.heading(`Example ${i + 1}: ${titles[i]}`)
      yield* Workflow.stream(projectWorkflow, input, { sessionId }).pipe(Output.print)
      yield* Output.say(renderSteps((yield* Workflow.getSessionState(projectWorkflow, sessionId)).steps))
    }
    yield* Output.state("Workflow session state", yield* Workflow.getSessionState(projectWorkflow, sessionId))
  }))

export const main = scenario.main
