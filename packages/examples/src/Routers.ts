/**
 * Scenario 5 — routers on state (agno's `state_in_router`), two workflows:
 *
 * - **adaptive assistant**: a selector that reads and updates the state picks
 *   the onboarding, technical, friendly or general agent; a plain step then
 *   rotates the preference;
 * - **task router**: a keyword selector sends each request to the task
 *   manager, viewer or organizer agent, whose tools keep a task list in the
 *   state.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, Router, RunContext, SessionState, Step, StepInput, TestModel, Workflow, WorkflowEvent } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Offline from "./Offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

// -----------------------------------------------------------------------------
// A. adaptive assistant
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category adaptive assistant
 */
export class Preferences extends SessionState.Tag("@sessionflow/examples/Preferences")<Preferences>()({
  agent_preference: Schema.String,
  interaction_count: Schema.Number
}) {}

/**
 * The adaptive assistant's fixed user (and session).
 *
 * @since 0.1.0
 * @category adaptive assistant
 */
export const ADAPTIVE_USER = "user-456"

/**
 * The adaptive assistant's queries.
 *
 * @since 0.1.0
 * @category adaptive assistant
 */
export const adaptiveQueries = [
  "Hello! I'm new here.",
  "How do I implement a binary search tree in Python?",
  "What's the best pizza topping?",
  "Explain quantum computing"
] as const

/**
 * Which route the selector takes for a state (and the new interaction count).
 *
 * @since 0.1.0
 * @category adaptive assistant
 */
export const chooseRoute = (
  state: typeof Preferences.schema.Type
): "technical" | "friendly" | "onboarding" | "general" =>
  state.agent_preference === "technical"
    ? "technical"
    : state.agent_preference === "friendly"
    ? "friendly"
    : state.interaction_count === 0
    ? "onboarding"
    : "general"

/**
 * The preference the "Update Preferences" step sets for an interaction count.
 *
 * @since 0.1.0
 * @category adaptive assistant
 */
export const preferenceFor = (interactionCount: number): "technical" | "friendly" | "general" =>
  interactionCount % 3 === 1 ? "technical" : interactionCount % 3 === 2 ? "friendly" : "general"

/**
 * The selector's state part: counts the interaction, prints its reasoning and
 * returns which route to take.
 *
 * @since 0.1.0
 * @category adaptive assistant
 */
export const routeByPreference = Effect.gen(function*() {
  const run = yield* RunContext.RunContext
  const before = yield* Preferences.modify((s) => [s, { ...s, interaction_count: s.interaction_count + 1 }])
  const route = chooseRoute(before)
  yield* WorkflowEvent.log(
    `[router] user ${run.userId ?? "(none)"}, session ${run.sessionId}: preference '${before.agent_preference}', ` +
      `interaction #${before.interaction_count + 1} → ${route}`
  )
  return route
})

/**
 * "Update Preferences": rotates the preference by interaction count.
 *
 * @since 0.1.0
 * @category adaptive assistant
 */
export const updatePreferences = Step.make(
  "Update Preferences",
  () =>
    Preferences.modify((s) => {
      const preference = preferenceFor(s.interaction_count)
      return [`Preference set to: ${preference}`, { ...s, agent_preference: preference }]
    }),
  { description: "Update user preferences based on interaction" }
)

/**
 * @since 0.1.0
 * @category adaptive assistant
 */
export const onboardingAgent = Agent.make({
  name: "Onboarding Agent",
  instructions: "Welcome new users and ask about their preferences. Determine if they prefer technical or friendly assistance."
})

/**
 * @since 0.1.0
 * @category adaptive assistant
 */
export const technicalAgent = Agent.make({
  name: "Technical Expert",
  instructions: "You are a technical expert. Provide detailed, technical answers with code examples and best practices."
})

/**
 * @since 0.1.0
 * @category adaptive assistant
 */
export const friendlyAgent = Agent.make({
  name: "Friendly Assistant",
  instructions: "You are a friendly, casual assistant. Use simple language and make the conversation engaging."
})

/**
 * @since 0.1.0
 * @category adaptive assistant
 */
export const generalAgent = Agent.make({
  name: "General Assistant",
  instructions: "You are a balanced assistant. Provide helpful answers that are neither too technical nor too casual."
})

const onboardStep = Step.agent("Onboard User", onboardingAgent, { description: "Onboard new user and set preferences" })
const technicalStep = Step.agent("Technical Response", technicalAgent, { description: "Provide technical assistance" })
const friendlyStep = Step.agent("Friendly Response", friendlyAgent, { description: "Provide friendly assistance" })
const generalStep = Step.agent("General Response", generalAgent, { description: "Provide general assistance" })

/**
 * @since 0.1.0
 * @category adaptive assistant
 */
export const adaptiveWorkflow = Workflow.make({
  name: "Adaptive Assistant Workflow",
  state: Preferences,
  sessionState: { agent_preference: "general", interaction_count: 0 },
  steps: [
    Router.make({
      name: "Route to Appropriate Agent",
      description: "Route to the appropriate agent based on user preferences",
      choices: [onboardStep, technicalStep, friendlyStep, generalStep],
      selector: () =>
        Effect.map(routeByPreference, (route) =>
          route === "technical"
            ? technicalStep
            : route === "friendly"
            ? friendlyStep
            : route === "onboarding"
            ? onboardStep
            : generalStep)
    }),
    updatePreferences
  ]
})

// -----------------------------------------------------------------------------
// B. task router
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category task router
 */
export const Task = Schema.Struct({
  name: Schema.String,
  priority: Schema.String,
  status: Schema.String,
  id: Schema.Number
})

/**
 * @since 0.1.0
 * @category task router
 */
export type Task = typeof Task.Type

/**
 * @since 0.1.0
 * @category task router
 */
export class TaskList extends SessionState.Tag("@sessionflow/examples/TaskList")<TaskList>()({
  task_list: Schema.Array(Task)
}) {}

/**
 * The task router's inputs.
 *
 * @since 0.1.0
 * @category task router
 */
export const taskInputs = [
  "Add these tasks: 'Review project proposal' with high priority, 'Buy groceries' with low priority, and 'Call dentist' with medium priority.",
  "Show me all my current tasks",
  "Mark 'Buy groceries' as completed",
  "Clean up my completed tasks and show me what's left",
  "Show me only my pending tasks"
] as const

/**
 * The keywords, checked in this order: organize, manage, view (else manage).
 *
 * @since 0.1.0
 * @category task router
 */
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

/**
 * Which task step a request goes to.
 *
 * @since 0.1.0
 * @category task router
 */
export const taskRoute = (message: string): "organize_tasks" | "manage_tasks" | "view_tasks" => {
  const text = message.toLowerCase()
  const has = (words: ReadonlyArray<string>) => words.some((w) => text.includes(w))
  if (has(routeKeywords.organize)) return "organize_tasks"
  if (has(routeKeywords.manage)) return "manage_tasks"
  if (has(routeKeywords.view)) return "view_tasks"
  return "manage_tasks"
}

/**
 * The message a router decides on: the previous step's content, else the
 * run input.
 *
 * @since 0.1.0
 * @category task router
 */
export const routerMessage = (input: StepInput.StepInput): string => {
  const message = StepInput.message(input)
  return typeof message === "string" ? message : message === undefined ? "" : JSON.stringify(message)
}

const Priority = Schema.String.annotations({ description: "low, medium (default) or high" })

/**
 * @since 0.1.0
 * @category task router
 */
export const AddTask = Tool.make("add_task", {
  description: "Add a task to the task list.",
  parameters: {
    task: Schema.String.annotations({ description: "The task name" }),
    priority: Schema.optional(Priority)
  },
  success: Schema.String,
  dependencies: [TaskList]
})

/**
 * @since 0.1.0
 * @category task router
 */
export const CompleteTask = Tool.make("complete_task", {
  description: "Mark a task as completed.",
  parameters: { task_name: Schema.String },
  success: Schema.String,
  dependencies: [TaskList]
})

/**
 * @since 0.1.0
 * @category task router
 */
export const SetTaskPriority = Tool.make("set_task_priority", {
  description: "Change a task's priority (low, medium or high).",
  parameters: { task_name: Schema.String, priority: Priority },
  success: Schema.String,
  dependencies: [TaskList]
})

/**
 * @since 0.1.0
 * @category task router
 */
export const ListTasks = Tool.make("list_tasks", {
  description: "List tasks sorted by priority; status_filter is all, pending or completed.",
  parameters: {
    status_filter: Schema.optional(Schema.String.annotations({ description: "all (default), pending or completed" }))
  },
  success: Schema.String,
  dependencies: [TaskList]
})

/**
 * @since 0.1.0
 * @category task router
 */
export const ClearCompletedTasks = Tool.make("clear_completed_tasks", {
  description: "Remove every completed task from the list.",
  success: Schema.String,
  dependencies: [TaskList]
})

/**
 * The Task Manager's tools.
 *
 * @since 0.1.0
 * @category task router
 */
export const ManagerTools = Toolkit.make(AddTask, CompleteTask, SetTaskPriority)

/**
 * The Task Viewer's tools.
 *
 * @since 0.1.0
 * @category task router
 */
export const ViewerTools = Toolkit.make(ListTasks)

/**
 * The Task Organizer's tools.
 *
 * @since 0.1.0
 * @category task router
 */
export const OrganizerTools = Toolkit.make(ListTasks, ClearCompletedTasks, SetTaskPriority)

/**
 * Every task tool, for one handler layer.
 *
 * @since 0.1.0
 * @category task router
 */
export const TaskTools = Toolkit.make(AddTask, CompleteTask, SetTaskPriority, ListTasks, ClearCompletedTasks)

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
const priorityRank: Record<string, number> = { high: 1, medium: 2, low: 3 }
const validPriorities = ["low", "medium", "high"]

/**
 * Renders the tasks the way `list_tasks` replies.
 *
 * @since 0.1.0
 * @category task router
 */
export const renderTasks = (tasks: ReadonlyArray<Task>, statusFilter: string = "all"): string => {
  if (tasks.length === 0) return "Task list is empty."
  const shown = statusFilter === "all" ? tasks : tasks.filter((t) => t.status === statusFilter)
  if (shown.length === 0) return `No ${statusFilter} tasks found.`
  const sorted = [...shown].sort((a, b) => (priorityRank[a.priority] ?? 3) - (priorityRank[b.priority] ?? 3) || a.id - b.id)
  return `Task list (${statusFilter}):\n${
    sorted.map((t) => `- [${t.status.toUpperCase()}] ${t.name} (Priority: ${t.priority})`).join("\n")
  }`
}

/**
 * @since 0.1.0
 * @category task router
 */
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
      return [
        `Marked task '${found.name}' as completed.`,
        { ...s, task_list: s.task_list.map((t) => (t === found ? { ...t, status: "completed" } : t)) }
      ]
    }),
  set_task_priority: ({ priority, task_name }) =>
    TaskList.modify((s) => {
      if (s.task_list.length === 0) return [`Task list is empty. Cannot update priority for '${task_name}'.`, s]
      if (!validPriorities.includes(priority.toLowerCase())) {
        return [`Invalid priority '${priority}'. Must be one of: ${validPriorities.join(", ")}`, s]
      }
      const found = s.task_list.find((t) => same(t.name, task_name))
      if (found === undefined) return [`Task '${task_name}' not found in the task list.`, s]
      return [
        `Updated task '${found.name}' priority from ${found.priority} to ${priority}.`,
        {
          ...s,
          task_list: s.task_list.map((t) => (t === found ? { ...t, priority: priority.toLowerCase() } : t))
        }
      ]
    }),
  list_tasks: ({ status_filter = "all" }) => TaskList.modify((s) => [renderTasks(s.task_list, status_filter), s]),
  clear_completed_tasks: () =>
    TaskList.modify((s) => {
      const kept = s.task_list.filter((t) => t.status !== "completed")
      return [
        `Removed ${s.task_list.length - kept.length} completed tasks from the list.`,
        { ...s, task_list: kept }
      ]
    })
})

/**
 * @since 0.1.0
 * @category task router
 */
export const taskManager = Agent.make({
  name: "Task Manager",
  instructions: [
    "You are a task management specialist.",
    "You can add new tasks, mark tasks as completed, and update task priorities.",
    "Always use the provided tools to interact with the task list.",
    "When adding tasks, consider setting appropriate priorities based on urgency and importance.",
    "Be efficient and clear in your responses."
  ],
  tools: ManagerTools
})

/**
 * @since 0.1.0
 * @category task router
 */
export const taskViewer = Agent.make({
  name: "Task Viewer",
  instructions: [
    "You are a task viewing specialist.",
    "You can display tasks with various filters (all, pending, completed).",
    "Present task information in a clear, organized format.",
    "Help users understand their task status and priorities."
  ],
  tools: ViewerTools
})

/**
 * @since 0.1.0
 * @category task router
 */
export const taskOrganizer = Agent.make({
  name: "Task Organizer",
  instructions: [
    "You are a task organization specialist.",
    "You can view tasks, clean up completed tasks, and reorganize priorities.",
    "Focus on helping users maintain an organized and efficient task list.",
    "Suggest improvements to task organization when appropriate."
  ],
  tools: OrganizerTools
})

/**
 * @since 0.1.0
 * @category task router
 */
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
          const route = taskRoute(routerMessage(input))
          yield* WorkflowEvent.log(`[router] ${route === "organize_tasks" ? "organization" : route === "manage_tasks" ? "management" : "viewing"} request → ${route}`)
          return route
        })
    })
  ]
})

// -----------------------------------------------------------------------------
// the offline model
// -----------------------------------------------------------------------------

const adaptiveReply = (agent: string | undefined, query: string): string => {
  switch (agent) {
    case "Onboarding Agent":
      return "Welcome aboard! I'm glad you're here. Do you prefer detailed technical answers, or a friendly, casual chat? Either way, ask me anything."
    case "Technical Expert":
      return /binary search tree/i.test(query)
        ? [
          "A binary search tree keeps smaller keys left and larger keys right:",
          "",
          "```python",
          "class Node:",
          "    def __init__(self, key):",
          "        self.key, self.left, self.right = key, None, None",
          "",
          "def insert(root, key):",
          "    if root is None:",
          "        return Node(key)",
          "    if key < root.key:",
          "        root.left = insert(root.left, key)",
          "    else:",
          "        root.right = insert(root.right, key)",
          "    return root",
          "```",
          "Search follows the same comparisons: O(log n) when balanced, O(n) in the worst case."
        ].join("\n")
        : `Technically speaking: "${Offline.topicOf(query)}" deserves a precise answer with examples and trade-offs.`
    case "Friendly Assistant":
      return /pizza/i.test(query)
        ? "Ooh, tough one! Margherita is a classic, but honestly? Mushrooms and a drizzle of hot honey are hard to beat. What's yours? 🍕"
        : `Great question! Let's keep it simple and fun: ${Offline.topicOf(query)} — happy to dig in with you.`
    default:
      return /quantum/i.test(query)
        ? "Quantum computers use qubits, which can hold a mix of 0 and 1 at once and can be entangled with each other. For some problems — factoring, simulating molecules — that lets them explore many possibilities far faster than classical computers."
        : `Here's a balanced answer to "${Offline.topicOf(query)}": the key ideas first, then the details if you want them.`
  }
}

/** The tasks an "add" request names: 'name' (with <p> priority). */
const tasksToAdd = (text: string): ReadonlyArray<{ task: string; priority: string }> =>
  Array.from(text.matchAll(/'([^']+)'(?:\s+(?:with|at|as)\s+(?:a\s+)?(high|medium|low)\s+priority)?/gi), (m) => ({
    task: m[1]!,
    priority: (m[2] ?? "medium").toLowerCase()
  }))

const managerTurn = (request: TestModel.Request): TestModel.Reply => {
  const text = Offline.userRequest(request)
  if (request.turn === 0) {
    const quoted = Array.from(text.matchAll(/'([^']+)'/g), (m) => m[1]!)
    const adding = /\b(add|create|new task)\b/i.test(text)
    if (!adding && /\b(complete|completed|done|finish(ed)?)\b/i.test(text) && quoted.length > 0) {
      return TestModel.toolCalls(...quoted.map((task_name) => ["complete_task", { task_name }] as const))
    }
    const priority = /\b(?:priority\s+(?:of\s+)?'([^']+)'\s+to|set\s+'([^']+)'\s+to)\s+(high|medium|low)\b/i.exec(text)
    if (priority !== null) {
      return TestModel.toolCalls(["set_task_priority", { task_name: priority[1] ?? priority[2]!, priority: priority[3]! }])
    }
    const adds = tasksToAdd(text)
    if (adds.length > 0) return TestModel.toolCalls(...adds.map((a) => ["add_task", a] as const))
    return TestModel.text("Tell me which task to add, complete or re-prioritise (put task names in quotes).")
  }
  return TestModel.text(`Done.\n${Offline.resultLines(request).join("\n")}`)
}

const statusFilter = (text: string): string =>
  /\bpending\b/i.test(text) ? "pending" : /\bcompleted\b/i.test(text) && !/\bclean|clear/i.test(text) ? "completed" : "all"

const viewerTurn = (request: TestModel.Request): TestModel.Reply =>
  request.turn === 0
    ? TestModel.toolCalls(["list_tasks", { status_filter: statusFilter(Offline.userRequest(request)) }])
    : TestModel.text(`Here's what's on your plate:\n${Offline.resultLines(request).join("\n")}`)

const organizerTurn = (request: TestModel.Request): TestModel.Reply => {
  if (request.turn === 0) return TestModel.toolCalls(["clear_completed_tasks", {}], ["list_tasks", { status_filter: "all" }])
  const [cleared, list] = Offline.resultLines(request)
  return TestModel.text(`${cleared ?? ""}\nWhat's left, by priority:\n${list ?? ""}\nTip: tackle the high-priority items first.`)
}

/**
 * The scripted model for both workflows: the four assistants answer in their
 * style; the task agents call their tools for what the request names.
 *
 * @since 0.1.0
 * @category offline
 */
export const offlineModel = TestModel.layer((request) => {
  switch (request.agent) {
    case "Task Manager":
      return managerTurn(request)
    case "Task Viewer":
      return viewerTurn(request)
    case "Task Organizer":
      return organizerTurn(request)
    default:
      return TestModel.text(adaptiveReply(request.agent, request.lastUserMessage ?? ""))
  }
})

// -----------------------------------------------------------------------------
// main
// -----------------------------------------------------------------------------

const taskTitles = ["Adding Tasks", "Viewing Tasks", "Completing Tasks", "Organizing Tasks", "Filtered View"]

/**
 * Runs the adaptive assistant's four queries on `user-456`, then the five task
 * requests on a new session.
 *
 * @since 0.1.0
 * @category main
 */
export const main = (options: Scenario.Options = {}): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const db = options.db ?? Scenario.defaultDb("routers")
    const model = yield* Scenario.chooseModel(offlineModel, options)
    yield* Effect.gen(function*() {
      yield* Output.say("\nA. The adaptive assistant (session and user user-456)")
      for (const [i, query] of adaptiveQueries.entries()) {
        yield* Output.heading(`Interaction ${i + 1}: ${query}`)
        yield* Scenario.runShown(adaptiveWorkflow, query, { sessionId: ADAPTIVE_USER, userId: ADAPTIVE_USER })
        yield* Output.state(
          "Workflow session state",
          yield* Workflow.getSessionState(adaptiveWorkflow, ADAPTIVE_USER, { userId: ADAPTIVE_USER })
        )
      }
      const sessionId = `tasks-${crypto.randomUUID().slice(0, 8)}`
      yield* Output.say("\nB. The task router (a new session)")
      for (const [i, input] of taskInputs.entries()) {
        yield* Output.heading(`Example ${i + 1}: ${taskTitles[i]}`)
        yield* Scenario.runShown(taskWorkflow, input, { sessionId })
        yield* Output.state(
          i === taskInputs.length - 1 ? "Final workflow session state" : "Workflow session state",
          yield* Workflow.getSessionState(taskWorkflow, sessionId)
        )
      }
    }).pipe(Effect.provide(Layer.mergeAll(model, TaskToolsLive, Scenario.storeLayer(options, db))))
  }).pipe(Output.withConsole)

/**
 * @since 0.1.0
 * @category scenario
 */
export const scenario: Scenario.Scenario = {
  name: "routers",
  aliases: ["router", "routing", "adaptive", "tasks"],
  cookbook: "state_in_router",
  description: "Routers on state: an adaptive assistant by preference, and a keyword task router with tools",
  main
}
