import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow } from "@sessionflow/core"
import { ProjectTeam } from "@sessionflow/examples"
import { Effect, Layer } from "effect"
import { events, withState } from "./utils.js"

const { ProjectTools, ProjectToolsLive, inputs, offlineModel, projectWorkflow } = ProjectTeam

const call = (name: keyof typeof ProjectTools.tools, params: object) =>
  Effect.flatMap(ProjectTools, (tk) => tk.handle(name, params as never)).pipe(
    Effect.map((r) => r.result),
    Effect.provide(ProjectToolsLive)
  )

describe("ProjectTeam (state_with_team)", () => {
  it.effect("five runs leave exactly the expected steps", () =>
    Effect.gen(function*() {
      const memberEvents: Array<ReadonlyArray<string>> = []
      for (const input of inputs) {
        const evs = yield* events(projectWorkflow, input, { sessionId: "p" })
        memberEvents.push(...evs.flatMap((e) => (e._tag === "TextDelta" && e.path.length === 2 ? [e.path] : [])))
      }
      const { steps } = yield* Workflow.getSessionState(projectWorkflow, "p")
      expect(steps.map(({ assignee, name, notes, priority, status }) => ({ name, assignee, status, priority, notes })))
        .toEqual([
          {
            name: "Setup Database",
            assignee: "Alice",
            status: "completed",
            priority: "high",
            notes: "Started database schema design"
          },
          {
            name: "Create API",
            assignee: "Charlie",
            status: "completed",
            priority: "medium",
            notes: "API endpoints implemented and tested"
          },
          { name: "Deploy to Production", assignee: "Eve", status: "pending", priority: "high", notes: undefined }
        ])
      expect(ProjectTeam.renderSteps(steps)).toBe([
        "Current Project Steps:",
        "  1. [COMPLETED] [HIGH] Setup Database (assigned to: Alice, status: completed)",
        "     Notes: Started database schema design",
        "  2. [COMPLETED] [MEDIUM] Create API (assigned to: Charlie, status: completed)",
        "     Notes: API endpoints implemented and tested",
        "  3. [PENDING] [HIGH] Deploy to Production (assigned to: Eve, status: pending)"
      ].join("\n"))
      // a team member spoke, one level below the team step
      expect(memberEvents.length).toBeGreaterThan(0)
      expect(memberEvents.every((p) => p[0] === "manage_steps" && p[1] === "StepCoordinator")).toBe(true)
    }).pipe(Effect.provide(Layer.mergeAll(offlineModel, ProjectToolsLive, SessionStore.layerMemory))))

  it.effect("tools reply exactly as the scenario says", () =>
    Effect.gen(function*() {
      const added = yield* withState(
        ProjectTeam.Project,
        { steps: [] },
        call("add_step", { step_name: "S", assignee: "Ann" })
      )
      expect(added.value).toBe("[OK] Successfully added step 'S' assigned to Ann (priority: medium). Total steps: 1")
      expect((yield* withState(ProjectTeam.Project, { steps: [] }, call("delete_step", { step_name: "S" }))).value)
        .toBe("[ERROR] No steps found to delete")
      expect((yield* withState(ProjectTeam.Project, added.state, call("delete_step", { step_name: "s" }))).value)
        .toBe("[ERROR] Step 's' not found in the list")
      const deleted = yield* withState(ProjectTeam.Project, added.state, call("delete_step", { step_name: "S" }))
      expect(deleted.value).toBe("[OK] Successfully deleted step 'S' (was assigned to Ann). Remaining steps: 0")
      const updated = yield* withState(
        ProjectTeam.Project,
        added.state,
        call("update_step_status", { step_name: "S", new_status: "blocked", notes: "waiting" })
      )
      expect(updated.value).toBe("[OK] Updated step 'S' status from 'pending' to 'blocked' with notes: waiting")
      const plain = yield* withState(
        ProjectTeam.Project,
        added.state,
        call("update_step_status", { step_name: "S", new_status: "done" })
      )
      expect(plain.value).toBe("[OK] Updated step 'S' status from 'pending' to 'done'")
      expect(plain.state.steps[0]!.notes).toBeUndefined()
      const assigned = yield* withState(
        ProjectTeam.Project,
        added.state,
        call("assign_step", { step_name: "S", new_assignee: "Bo" })
      )
      expect(assigned.value).toBe("[OK] Reassigned step 'S' from Ann to Bo")
    }))
})
