/**
 * Scenario 5B — a keyword router (agno's `state_in_router`, second
 * workflow): the selector sends each request to the task manager, viewer or
 * organizer agent, whose tools (`TaskRouter.tools.ts`) keep a task list in
 * the state.
 *
 * @since 0.1.0
 */
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, Router, Step, StepInput, StepOutput, Workflow, WorkflowEvent } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"
import { AddTask, ClearCompletedTasks, CompleteTask, ListTasks, SetTaskPriority, TaskList } from "./TaskRouter.tools.js"

export * from "./TaskRouter.tools.js"

// -- agents ------------------------------------------------------------------

export const taskManager = Agent.make({
  name: "Task Manager",
  instructions: `You are a task management specialist.
You can add new tasks, mark tasks as completed, and update task priorities.
Always use the provided tools to interact with the task list.
When adding tasks, consider setting appropriate priorities based on urgency and importance.
Be efficient and clear in your responses.`,
  tools: Toolkit.make(AddTask, CompleteTask, SetTaskPriority)
})

export const taskViewer = Agent.make({
  name: "Task Viewer",
  instructions: `You are a task viewing specialist.
You can display tasks with various filters (all, pending, completed).
Present task information in a clear, organized format.
Help users understand their task status and priorities.`,
  tools: Toolkit.make(ListTasks)
})

export const taskOrganizer = Agent.make({
  name: "Task Organizer",
  instructions: `You are a task organization specialist.
You can view tasks, clean up completed tasks, and reorganize priorities.
Focus on helping users maintain an organized and efficient task list.
Suggest improvements to task organization when appropriate.`,
  tools: Toolkit.make(ListTasks, ClearCompletedTasks, SetTaskPriority)
})

// -- the selector: keywords, checked in this order: organize, manage, view (else manage) --

export const routeKeywords = {
  organize: ["clean", "organize", "clear", "remove completed", "reorganize", "cleanup", "tidy", "sort", "arrange"],
  manage: [
    "add",
    "create",
    "new task",
    "complete",
    "finish",
    "done",
    "mark as",
    "priority",
    "urgent",
    "important",
    "update"
  ],
  view: ["show", "list", "display", "view", "see", "what tasks", "current", "pending", "completed", "status"]
} as const

// the step a request goes to
export const taskRoute = (message: string): "organize_tasks" | "manage_tasks" | "view_tasks" => {
  const text = message.toLowerCase()
  const has = (words: ReadonlyArray<string>) => words.some((w) => text.includes(w))
  if (has(routeKeywords.organize)) return "organize_tasks"
  return has(routeKeywords.manage) || !has(routeKeywords.view) ? "manage_tasks" : "view_tasks"
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
        Step.agent("organize_tasks", taskOrganizer, {
          description: "Organize tasks, clean up completed items, adjust priorities"
        })
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
  "Add these tasks: 'Review project proposal' with high priority, 'Buy " +
  "groceries' with low priority, and 'Call dentist' with medium priority.",
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
    yield* Output.heading(`Example ${i + 1}: ${titles[i]}`)
    yield* Workflow.stream(taskWorkflow, input, { sessionId }).pipe(Output.print)
    const state = yield* Workflow.getSessionState(taskWorkflow, sessionId)
    yield* Output.state(i === taskInputs.length - 1 ? "Final workflow session state" : "Workflow session state", state)
  }
})
