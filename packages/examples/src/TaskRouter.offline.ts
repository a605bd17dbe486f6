/**
 * The scripted model of the task router (scenario 5B): the task agents call
 * their tools for what the request names.
 *
 * @since 0.1.0
 */
import { TestModel } from "@sessionflow/core"
import * as Offline from "./Offline.js"

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
      return TestModel.toolCalls(["set_task_priority", {
        task_name: priority[1] ?? priority[2]!,
        priority: priority[3]!
      }])
    }
    const adds = tasksToAdd(text)
    if (adds.length > 0) return TestModel.toolCalls(...adds.map((a) => ["add_task", a] as const))
    return TestModel.text("Tell me which task to add, complete or re-prioritise (put task names in quotes).")
  }
  return TestModel.text(`Done.\n${Offline.resultLines(request).join("\n")}`)
}

const statusFilter = (text: string): string =>
  /\bpending\b/i.test(text)
    ? "pending"
    : /\bcompleted\b/i.test(text) && !/\bclean|clear/i.test(text)
    ? "completed"
    : "all"

const viewerTurn = (request: TestModel.Request): TestModel.Reply =>
  request.turn === 0
    ? TestModel.toolCalls(["list_tasks", { status_filter: statusFilter(Offline.userRequest(request)) }])
    : TestModel.text(`Here's what's on your plate:\n${Offline.resultLines(request).join("\n")}`)

const organizerTurn = (request: TestModel.Request): TestModel.Reply => {
  if (request.turn === 0) {
    return TestModel.toolCalls(["clear_completed_tasks", {}], ["list_tasks", { status_filter: "all" }])
  }
  const [cleared, list] = Offline.resultLines(request)
  return TestModel.text(
    `${cleared ?? ""}\nWhat's left, by priority:\n${list ?? ""}\nTip: tackle the high-priority items first.`
  )
}

const turns: Record<string, (request: TestModel.Request) => TestModel.Reply> = {
  "Task Manager": managerTurn,
  "Task Viewer": viewerTurn,
  "Task Organizer": organizerTurn
}

/** The task agents' replies (undefined for other agents). */
export const respond = (request: TestModel.Request): TestModel.Reply | undefined =>
  turns[request.agent ?? ""]?.(request)

export const offlineModel = TestModel.layer((request) => respond(request) ?? TestModel.text("I only handle tasks."))
