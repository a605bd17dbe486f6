import { describe, expect, it } from "@effect/vitest"
import { Workflow } from "@sessionflow/core"
import { JobTracker } from "@sessionflow/examples"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect } from "effect"
import { cli, tempDb } from "./utils.js"

const { SESSION_ID, trackerWorkflow } = JobTracker

const summary = (apps: ReadonlyArray<JobTracker.Application>) => apps.map((a) => [a.id, a.role, a.company, a.status])

describe("JobTracker (job_application_tracker) across processes", () => {
  it.scoped(
    "persists across real processes: 1 → 2 → 3, a fresh process reads the same three, a rerun appends 4–6",
    () =>
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
      })
  )
})
