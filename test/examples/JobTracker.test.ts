import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow } from "@sessionflow/core"
import { JobTracker } from "@sessionflow/examples"
import { Effect, Layer } from "effect"
import { withState } from "./utils.js"

const { SESSION_ID, TrackerTools, TrackerToolsLive, inputs, offlineModel, trackerWorkflow } = JobTracker

const call = (name: "save_application" | "list_applications", params: object) =>
  Effect.flatMap(TrackerTools, (tk) => tk.handle(name, params as never)).pipe(
    Effect.map((r) => r.result),
    Effect.provide(TrackerToolsLive)
  )

describe("JobTracker (job_application_tracker)", () => {
  it.effect("save_application appends with defaults; list_applications lists", () =>
    Effect.gen(function*() {
      const empty = yield* withState(JobTracker.Applications, { applications: [] }, call("list_applications", {}))
      expect(empty.value).toBe("No applications tracked yet.")
      const saved = yield* withState(
        JobTracker.Applications,
        { applications: [] },
        call("save_application", { company: "Acme", role: "Engineer" })
      )
      expect(saved.value).toBe("Saved application #1: Engineer at Acme (Applied).")
      // the test clock starts at the epoch
      expect(saved.state.applications).toEqual([
        {
          id: 1,
          company: "Acme",
          role: "Engineer",
          status: "Applied",
          url: "",
          source: "",
          notes: "",
          applied_at: "1970-01-01"
        }
      ])
      const listed = yield* withState(JobTracker.Applications, saved.state, call("list_applications", {}))
      expect(listed.value).toBe("#1 Engineer at Acme - Applied")
    }))

  it.effect("extraction feeds the tracker: 1 → 2 → 3 applications on the fixed session", () =>
    Effect.gen(function*() {
      const counts: Array<number> = []
      for (const input of inputs) {
        const run = yield* Workflow.run(trackerWorkflow, input)
        expect(run.sessionId).toBe(SESSION_ID)
        counts.push((yield* Workflow.getSessionState(trackerWorkflow, SESSION_ID)).applications.length)
      }
      expect(counts).toEqual([1, 2, 3])
      const { applications } = yield* Workflow.getSessionState(trackerWorkflow, SESSION_ID)
      expect(applications.map(({ applied_at: _, ...rest }) => rest)).toEqual([
        {
          id: 1,
          company: "Acme Robotics",
          role: "Backend Engineer",
          status: "Applied",
          url: "https://acme.example/careers/123",
          source: "job board",
          notes: ""
        },
        {
          id: 2,
          company: "Globex",
          role: "Python Developer",
          status: "Interview Scheduled",
          url: "",
          source: "referral",
          notes: ""
        },
        { id: 3, company: "Initech", role: "Data Scientist", status: "Applied", url: "", source: "", notes: "" }
      ])
    }).pipe(Effect.provide(Layer.mergeAll(offlineModel, TrackerToolsLive, SessionStore.layerMemory))))
})
