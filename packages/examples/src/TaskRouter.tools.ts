/**
 * The task list's state and tools (scenario 5B): `add_task`,
 * `complete_task`, `set_task_priority`, `list_tasks` and
 * `clear_completed_tasks`, with one handler layer for the three task agents.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { SessionState } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

export const Task = Schema.Struct({
  name: Schema.String,
  priority: Schema.String,
  status: Schema.String,
  id: Schema.Number
})
export type Task = typeof Task.Type

export class TaskList extends SessionState.Tag("@sessionflow/examples/TaskList")<TaskList>()({
  task_list: Schema.Array(Task)
}) {}

// the parameters several tools share
const TaskName = Schema.String
const Priority = Schema.String.annotations({ description: "low, medium (default) or high" })
const StatusFilter = Schema.String.annotations({ description: "all (default), pending or completed" })

export const AddTask = Tool.make("add_task", {
  description: "Add a task to the task list.",
  parameters: {
    task: Schema.String.annotations({ description: "The task name" }),
    priority: Schema.optional(Priority)
  },
  success: Schema.String,
  dependencies: [TaskList]
})
export const CompleteTask = Tool.make("complete_task", {
  description: "Mark a task as completed.",
  parameters: { task_name: TaskName },
  success: Schema.String,
  dependencies: [TaskList]
})
export const SetTaskPriority = Tool.make("set_task_priority", {
  description: "Change a task's priority (low, medium or high).",
  parameters: { task_name: TaskName, priority: Priority },
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
  const sorted = [...shown].sort((a, b) =>
    (priorityRank[a.priority] ?? 3) - (priorityRank[b.priority] ?? 3) || a.id - b.id
  )
  return `Task list (${statusFilter}):\n${
    sorted.map((t) => `- [${t.status.toUpperCase()}] ${t.name} (Priority: ${t.priority})`).join("\n")
  }`
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
