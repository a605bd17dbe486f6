import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow } from "@sessionflow/core"
import { Routers } from "@sessionflow/examples"
import { Effect, Layer } from "effect"
import { events, logLines, routed, withState } from "./utils.js"

const {
  ADAPTIVE_USER,
  TaskTools,
  TaskToolsLive,
  adaptiveQueries,
  adaptiveWorkflow,
  offlineModel,
  taskInputs,
  taskWorkflow
} = Routers
const layer = Layer.mergeAll(offlineModel, TaskToolsLive, SessionStore.layerMemory)

const call = (name: keyof typeof TaskTools.tools, params: object) =>
  Effect.flatMap(TaskTools, (tk) => tk.handle(name, params as never)).pipe(
    Effect.map((r) => r.result),
    Effect.provide(TaskToolsLive)
  )

const task = (id: number, name: string, priority: string, status = "pending") => ({ id, name, priority, status })

describe("Routers (state_in_router)", () => {
  it.effect("adaptive assistant: Onboarding, Technical, Friendly, General", () =>
    Effect.gen(function*() {
      const ids = { sessionId: ADAPTIVE_USER, userId: ADAPTIVE_USER }
      const routes: Array<ReadonlyArray<string>> = []
      const preferences: Array<unknown> = []
      const printed: Array<string> = []
      for (const query of adaptiveQueries) {
        const value = yield* events(adaptiveWorkflow, query, ids)
        const lines = logLines(value)
        routes.push(...routed(value))
        printed.push(...lines)
        preferences.push(
          value.flatMap((e) => (e._tag === "StepCompleted" && e.stepName === "Update Preferences" ? [e.content] : []))
        )
      }
      expect(routes).toEqual([["Onboard User"], ["Technical Response"], ["Friendly Response"], ["General Response"]])
      expect(preferences).toEqual([
        ["Preference set to: technical"],
        ["Preference set to: friendly"],
        ["Preference set to: general"],
        ["Preference set to: technical"]
      ])
      expect(printed[0]).toBe(
        "[router] user user-456, session user-456: preference 'general', interaction #1 → onboarding"
      )
      expect(yield* Workflow.getSessionState(adaptiveWorkflow, ADAPTIVE_USER, ids)).toEqual({
        agent_preference: "technical",
        interaction_count: 4
      })
    }).pipe(Effect.provide(layer)))

  it.effect("task router: manage, view, manage, organize, view; two pending tasks remain", () =>
    Effect.gen(function*() {
      const routes: Array<ReadonlyArray<string>> = []
      const printed: Array<string> = []
      for (const input of taskInputs) {
        const value = yield* events(taskWorkflow, input, { sessionId: "tasks" })
        const lines = logLines(value)
        routes.push(...routed(value))
        printed.push(...lines)
      }
      expect(routes).toEqual([["manage_tasks"], ["view_tasks"], ["manage_tasks"], ["organize_tasks"], ["view_tasks"]])
      expect(printed[3]).toBe("[router] organization request → organize_tasks")
      const { task_list } = yield* Workflow.getSessionState(taskWorkflow, "tasks")
      expect(task_list).toEqual([task(1, "Review project proposal", "high"), task(3, "Call dentist", "medium")])
    }).pipe(Effect.provide(layer)))

  it("keywords are checked in the order organize, manage, view, else manage", () => {
    expect(Routers.taskRoute("Clean up my completed tasks and show me what's left")).toBe("organize_tasks")
    expect(Routers.taskRoute("Show me tasks I can mark as done")).toBe("manage_tasks")
    expect(Routers.taskRoute("Show me only my pending tasks")).toBe("view_tasks")
    expect(Routers.taskRoute("hello there")).toBe("manage_tasks")
  })

  it.effect("task tools reply exactly as the scenario says", () =>
    Effect.gen(function*() {
      const tasks = [task(1, "B low", "low"), task(2, "A high", "high", "completed"), task(3, "C high", "high")]
      expect((yield* withState(Routers.TaskList, { task_list: tasks }, call("list_tasks", {}))).value).toBe(
        "Task list (all):\n- [COMPLETED] A high (Priority: high)\n- " +
          "[PENDING] C high (Priority: high)\n- [PENDING] B low (Priority: low)"
      )
      expect(
        (yield* withState(Routers.TaskList, { task_list: tasks }, call("list_tasks", { status_filter: "blocked" })))
          .value
      )
        .toBe("No blocked tasks found.")
      expect((yield* withState(Routers.TaskList, { task_list: [] }, call("list_tasks", {}))).value).toBe(
        "Task list is empty."
      )

      const dup = yield* withState(Routers.TaskList, { task_list: tasks }, call("add_task", { task: "b LOW" }))
      expect(dup.value).toBe("Task 'b LOW' already exists in the task list.")
      const added = yield* withState(Routers.TaskList, { task_list: tasks }, call("add_task", { task: "D" }))
      expect(added.value).toBe("Added task 'D' with medium priority to the task list.")
      expect(added.state.task_list[3]).toEqual(task(4, "D", "medium"))

      expect((yield* withState(Routers.TaskList, { task_list: [] }, call("complete_task", { task_name: "x" }))).value)
        .toBe("Task list is empty. Cannot complete 'x'.")
      expect(
        (yield* withState(Routers.TaskList, { task_list: tasks }, call("complete_task", { task_name: "x" }))).value
      )
        .toBe("Task 'x' not found in the task list.")
      const done = yield* withState(
        Routers.TaskList,
        { task_list: tasks },
        call("complete_task", { task_name: "c HIGH" })
      )
      expect(done.value).toBe("Marked task 'C high' as completed.")

      const invalid = yield* withState(
        Routers.TaskList,
        { task_list: tasks },
        call("set_task_priority", { task_name: "B low", priority: "urgent" })
      )
      expect(invalid.value).toBe("Invalid priority 'urgent'. Must be one of: low, medium, high")

      const cleared = yield* withState(Routers.TaskList, done.state, call("clear_completed_tasks", {}))
      expect(cleared.value).toBe("Removed 2 completed tasks from the list.")
      expect(cleared.state.task_list.map((t) => t.name)).toEqual(["B low"])
    }))
})
