/**
 * Scenario 5B — a keyword router (agno's `state_in_router`, second
 * workflow): the selector sends each request to the task manager, viewer or
 * organizer agent, whose tools keep a task list in the state.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, Router, SessionState, Step, StepInput, StepOutput, Workflow, WorkflowEvent } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

// -- state -------------------------------------------------------------------

export const Task = Schema.Struct({ name: Schema.String, priority: Schema.String, status: Schema.String, id: Schema.Number })
export type Task = typeof Task.Type

export class TaskList extends SessionState.Tag("@sessionflow/examples/TaskList")<TaskList>()({
  task_list: Schema.Array(Task)
}) {}

// -- tools -------------------------------------------------------------------

const Priority = Schema.String.annotations({ description: "low, medium (default) or high" })
const StatusFilter = Schema.String.annotations({ description: "all (default), pending or completed" })

export const AddTask = Tool.make("add_task", {
  description: "Add a task to the task list.",
  parameters: { task: Schema.String.annotations({ description: "The task name" }), priority: Schema.optional(Priority) },
  success: Schema.String,
  dependencies: [TaskList]
})
export const CompleteTask = Tool.make("complete_task", {
  description: "Mark a task as completed.",
  parameters: { task_name: Schema.String },
  success: Schema.String,
  dependencies: [TaskList]
})
export const SetTaskPriority = Tool.make("set_task_priority", {
  description: "Change a task's priority (low, medium or high).",
  parameters: { task_name: Schema.String, priority: Priority },
  success: Schema.String,
  dependencies: [TaskList]
})
export const ListTasks = Tool.make("list_tasks", {
  description: "List tasks sorted by priority; status_filter is all, pending or completed.",
  parameters: { status_filter: Schema.optional(StatusFilter) },
  success: Schema.String,
  dependencies: [TaskList]
})
export const ClearCompletedTasks = Tool.make("clear_completed_tasks", {
  description: "Remove every completed task from the list.",
  success: Schema.String,
  dependencies: [TaskList]
})
// one handler layer for the tools of the three agents
export const TaskTools = Toolkit.make(AddTask, CompleteTask, SetTaskPriority, ListTasks, ClearCompletedTasks)

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
const priorityRank: Record<string, number> = { high: 1, medium: 2, low: 3 }
const validPriorities = ["low", "medium", "high"]

export const renderTasks = (tasks: ReadonlyArray<Task>, statusFilter: string = "all"): string => {
  if (tasks.length === 0) return "Task list is empty."
  const shown = statusFilter === "all" ? tasks : tasks.filter((t) => t.status === statusFilter)
  if (shown.length === 0) return `No ${statusFilter} tasks found.`
  const sorted = [...shown].sort((a, b) => (priorityRank[a.priority] ?? 3) - (priorityRank[b.priority] ?? 3) || a.id - b.id)
  return `Task list (${statusFilter}):\n${sorted.map((t) => `- [${t.status.toUpperCase()}] ${t.name} (Priority: ${t.priority})`).join("\n")}`
}

const updateTask = (s: typeof TaskList.schema.Type, found: Task, changes: Partial<Task>) => ({
  ...s,
  task_list: s.task_list.map((t) => (t === found ? { ...t, ...changes } : t))
})

export const TaskToolsLive = TaskTools.toLayer({
  add_task: ({ priority = "medium", task }) =>
    TaskList.modify((s) =>
      s.task_list.some((t) => same(t.name, task))
        ? [`Task '${task}' already exists in the task list.`, s]
        : [
          `Added task '${task}' with ${priority} priority to the task list.`,
          { ...s, task_list: [...s.task_list, { name: task, priority, status: "pending", id: s.task_list.length + 1 }] }
        ]
    ),
  complete_task: ({ task_name }) =>
    TaskList.modify((s) => {
      if (s.task_list.length === 0) return [`Task list is empty. Cannot complete '${task_name}'.`, s]
      const found = s.task_list.find((t) => same(t.name, task_name))
      if (found === undefined) return [`Task '${task_name}' not found in the task list.`, s]
      return [`Marked task '${found.name}' as completed.`, updateTask(s, found, { status: "completed" })]
    }),
  set_task_priority: ({ priority, task_name }) =>
    TaskList.modify((s) => {
      if (s.task_list.length === 0) return [`Task list is empty. Cannot update priority for '${task_name}'.`, s]
      if (!validPriorities.includes(priority.toLowerCase())) {
        return [`Invalid priority '${priority}'. Must be one of: ${validPriorities.join(", ")}`, s]
      }
      const found = s.task_list.find((t) => same(t.name, task_name))
      if (found === undefined) return [`Task '${task_name}' not found in the task list.`, s]
      const updated = updateTask(s, found, { priority: priority.toLowerCase() })
      return [`Updated task '${found.name}' priority from ${found.priority} to ${priority}.`, updated]
    }),
  list_tasks: ({ status_filter = "all" }) => Effect.map(TaskList.get, (s) => renderTasks(s.task_list, status_filter)),
  clear_completed_tasks: () =>
    TaskList.modify((s) => {
      const task_list = s.task_list.filter((t) => t.status !== "completed")
      return [`Removed ${s.task_list.length - task_list.length} completed tasks from the list.`, { ...s, task_list }]
    })
})


// -- agents ------------------------------------------------------------------

export const taskManager = Agent.make({
  name: "Task Manager",
  instructions: [
    "You are a task management specialist.",
    "You can add new tasks, mark tasks as completed, and update task priorities.",
    "Always use the provided tools to interact with the task list.",
    "When adding tasks, consider setting appropriate priorities based on urgency and importance.",
    "Be efficient and clear in your responses."
  ],
  tools: Toolkit.make(AddTask, CompleteTask, SetTaskPriority)
})

export const taskViewer = Agent.make({
  name: "Task Viewer",
  instructions: [
    "You are a task viewing specialist.",
    "You can display tasks with various filters (all, pending, completed).",
    "Present task information in a clear, organized format.",
    "Help users understand their task status and priorities."
  ],
  tools: Toolkit.make(ListTasks)
})

export const taskOrganizer = Agent.make({
  name: "Task Organizer",
  instructions: [
    "You are a task organization specialist.",
    "You can view tasks, clean up completed tasks, and reorganize priorities.",
    "Focus on helping users maintain an organized and efficient task list.",
    "Suggest improvements to task organization when appropriate."
  ],
  tools: Toolkit.make(ListTasks, ClearCompletedTasks, SetTaskPriority)
})

// -- the selector: keywords, checked in this order: organize, manage, view (else manage) --

export const routeKeywords = {
  organize: ["clean", "organize", "clear", "remove completed", "reorganize", "cleanup", "tidy", "sort", "arrange"],
  manage: ["add", "create", "new task", "complete", "finish", "done", "mark as", "priority", "urgent", "important", "update"],
  view: ["show", "list", "display", "view", "see", "what tasks", "current", "pending", "completed", "status"]
} as const

// the step a request goes to
export const taskRoute = (message: string): "organize_tasks" | "manage_tasks" | "view_tasks" => {
  const text = message.toLowerCase()
  const has = (words: ReadonlyArray<string>) => words.some((w) => text.includes(w))
  if (has(routeKeywords.organize)) return "organize_tasks"
  if (has(routeKeywords.manage)) return "manage_tasks"
  if (has(routeKeywords.view)) return "view_tasks"
  return "manage_tasks"
}

const requestKinds = { organize_tasks: "organization", manage_tasks: "management", view_tasks: "viewing" } as const

// -- workflow ----------------------------------------------------------------

export const taskWorkflow = Workflow.make({
  name: "Smart Task Management Workflow",
  description: "Intelligently routes task management requests to specialized agents",
  state: TaskList,
  sessionState: { task_list: [] },
  steps: [
    Router.make({
      name: "task_management_router",
      description: "Routes requests to the most appropriate task management agent",
      choices: [
        Step.agent("manage_tasks", taskManager, { description: "Add new tasks, complete tasks, or update priorities" }),
        Step.agent("view_tasks", taskViewer, { description: "View and display task lists with filtering" }),
        Step.agent("organize_tasks", taskOrganizer, { description: "Organize tasks, clean up completed items, adjust priorities" })
      ],
      selector: (input) =>
        Effect.gen(function*() {
          const route = taskRoute(StepOutput.contentText(StepInput.message(input)))
          yield* WorkflowEvent.log(`[router] ${requestKinds[route]} request → ${route}`)
          return route
        })
    })
  ]
})

// -- main: five requests on a new session ---------------------------------------

export const taskInputs = [
  "Add these tasks: 'Review project proposal' with high priority, 'Buy groceries' with low priority, and 'Call dentist' with medium priority.",
  "Show me all my current tasks",
  "Mark 'Buy groceries' as completed",
  "Clean up my completed tasks and show me what's left",
  "Show me only my pending tasks"
] as const

const titles = ["Adding Tasks", "Viewing Tasks", "Completing Tasks", "Organizing Tasks", "Filtered View"]

export const taskRuns = Effect.gen(function*() {
  yield* Output.say("\nB. The task router (a new session)")
  const sessionId = Scenario.newSessionId("tasks")
  for (const [i, input] of taskInputs.entries()) {
    const state = yield* Scenario.showRun(taskWorkflow, input, { heading: `Example ${i + 1}: ${titles[i]}`, sessionId })
    yield* Output.state(i === taskInputs.length - 1 ? "Final workflow session state" : "Workflow session state", state)
  }
})
