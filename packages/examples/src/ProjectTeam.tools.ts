/**
 * The project's state and tools (scenario 6): the team leader's `add_step`
 * and `delete_step`, the status agent's `update_step_status` and
 * `assign_step`, one handler layer for the four, and the step list as
 * printed after each run.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { SessionState } from "@sessionflow/core"
import * as Schema from "effect/Schema"

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
      `  ${i + 1}. ${statusLabels[step.status] ?? "[UNKNOWN]"} ${
        priorityLabels[step.priority] ?? "[MEDIUM]"
      } ${step.name} (assigned to: ${step.assignee}, status: ${step.status})`,
      ...(step.notes === undefined ? [] : [`     Notes: ${step.notes}`])
    ])
  ].join("\n")

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
      return [
        `[OK] Successfully added step '${step_name}' assigned to ` +
        `${assignee} (priority: ${priority}). Total steps: ${steps.length}`,
        { steps }
      ]
    }),
  delete_step: ({ step_name }) =>
    Project.modify((s) => {
      if (s.steps.length === 0) return ["[ERROR] No steps found to delete", s]
      const found = s.steps.find((step) => step.name === step_name)
      if (found === undefined) return [`[ERROR] Step '${step_name}' not found in the list`, s]
      const steps = s.steps.filter((step) => step !== found)
      return [
        `[OK] Successfully deleted step '${step_name}' (was assigned ` +
        `to ${found.assignee}). Remaining steps: ${steps.length}`,
        { steps }
      ]
    }),
  update_step_status: ({ new_status, notes = "", step_name }) =>
    withStep(step_name, (found) => [
      `[OK] Updated step '${step_name}' status from '${found.status}' to '${new_status}'${
        notes ? ` with notes: ${notes}` : ""
      }`,
      { ...found, status: new_status, ...(notes ? { notes } : {}), last_updated: "now" }
    ]),
  assign_step: ({ new_assignee, step_name }) =>
    withStep(step_name, (found) => [
      `[OK] Reassigned step '${step_name}' from ${found.assignee} to ${new_assignee}`,
      { ...found, assignee: new_assignee, last_updated: "now" }
    ])
})
