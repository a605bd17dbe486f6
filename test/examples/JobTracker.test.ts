import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow } from "@sessionflow/core"
import { JobTracker } from "@sessionflow/examples"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Layer } from "effect"
import { cli, tempDb, withState } from "./utils.js"

const { SESSION_ID, TrackerTools, TrackerToolsLive, inputs, offlineModel, trackerWorkflow } = JobTracker

const call = (name: "save_application" | "list_applications", params: object) =>
  Effect.flatMap(TrackerTools, (tk) => tk.handle(name, params as never)).pipe(
    Effect.map((r) => r.result),
    Effect.provide(TrackerToolsLive)
  )

const summary = (apps: ReadonlyArray<JobTracker.Application>) => apps.map((a) => [a.id, a.role, a.company, a.status])

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
        { id: 1, company: "Acme", role: "Engineer", status: "Applied", url: "", source: "", notes: "", applied_at: "1970-01-01" }
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
        { id: 2, company: "Globex", role: "Python Developer", status: "Interview Scheduled", url: "", source: "referral", notes: "" },
        { id: 3, company: "Initech", role: "Data Scientist", status: "Applied", url: "", source: "", notes: "" }
      ])
    }).pipe(Effect.provide(Layer.mergeAll(offlineModel, TrackerToolsLive, SessionStore.layerMemory))))

  it.scoped("persists across real processes: 1 → 2 → 3, a fresh process reads the same three, a rerun appends 4–6", () =>
    Effect.gen(function*() {
      const db = yield* tempDb("job_application_tracker.db")

      const first = yield* cli(["run", "job-tracker", "--db", db])
      expect(first.code, first.stderr).toBe(0)
      expect(first.stdout.split("\n")[0]).toBe("Offline mode: no OPENAI_API_KEY set, using a scripted model.")
      expect(first.stdout).toContain("Saved application #1: Backend Engineer at Acme Robotics (Applied).")
      expect(first.stdout).toContain("Saved application #2: Python Developer at Globex (Interview Scheduled).")
      expect(first.stdout).toContain("Saved application #3: Data Scientist at Initech (Applied).")

      const shown = yield* cli(["sessions", "show", "--db", db, "--json", SESSION_ID])
      expect(shown.code, shown.stderr).toBe(0)
      const session = JSON.parse(shown.stdout)
      expect(session.sessionId).toBe(SESSION_ID)
      expect(summary(session.state.applications)).toEqual([
        [1, "Backend Engineer", "Acme Robotics", "Applied"],
        [2, "Python Developer", "Globex", "Interview Scheduled"],
        [3, "Data Scientist", "Initech", "Applied"]
      ])
      expect(session.runs).toHaveLength(3)

      const second = yield* cli(["run", "jobs", "--db", db])
      expect(second.code, second.stderr).toBe(0)
      expect(second.stdout).toContain("already tracks 3 applications")
      expect(second.stdout).toContain("Saved application #4: Backend Engineer at Acme Robotics (Applied).")

      const state = yield* Workflow.getSessionState(trackerWorkflow, SESSION_ID).pipe(
        Effect.provide(SqliteSessionStore.layer({ filename: db }))
      )
      expect(state.applications.map((a) => a.id)).toEqual([1, 2, 3, 4, 5, 6])
      expect(summary(state.applications.slice(3))).toEqual([
        [4, "Backend Engineer", "Acme Robotics", "Applied"],
        [5, "Python Developer", "Globex", "Interview Scheduled"],
        [6, "Data Scientist", "Initech", "Applied"]
      ])
    }))
})
