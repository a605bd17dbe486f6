/**
 * Runs as resources (`GET /runs/:runId`, `GET /workflows/:name/runs`), pages
 * of sessions, URL-safe workflow ids, and `GET /health`.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore, WorkflowError } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import { Effect, Layer } from "effect"
import { approvals, failing, notes, spaced } from "./fixtures.js"
import { request, start } from "./utils.js"

const tokens = { "token-of-alice": "alice", "token-of-bob": "bob" }
const alice = { authorization: "Bearer token-of-alice" }
const bob = { authorization: "Bearer token-of-bob" }

describe("runs as resources", () => {
  it.scoped("GET /runs/:runId tells a run's status and result, error or question; another user's run is a 404", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes, failing, approvals], tokens })
      const done = yield* request(`${url}/workflows/notes/runs`, { method: "POST", json: { input: "milk" }, headers: alice })
      const failed = yield* request(`${url}/workflows/failing/runs`, { method: "POST", json: { input: "x" }, headers: alice })
      expect(failed.status).toBe(500)
      const paused = yield* request(`${url}/workflows/approvals/runs`, { method: "POST", json: { input: "tea" }, headers: alice })

      const got = yield* request(`${url}/runs/${done.body.runId}`, { headers: alice })
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({ runId: done.body.runId, status: "completed", content: 1, input: "milk", userId: "alice" })
      const failedRuns = yield* request(`${url}/workflows/failing/runs?status=error`, { headers: alice })
      expect(failedRuns.body.runs).toHaveLength(1)
      expect(failedRuns.body.runs[0]).toMatchObject({ status: "error" })
      expect(failedRuns.body.runs[0].error).toContain("the tool broke")
      const question = yield* request(`${url}/runs/${paused.body.runId}`, { headers: alice })
      expect(question.body).toMatchObject({ status: "paused", pause: { path: ["approve"], payload: { note: "tea" } } })

      for (const headers of [bob, {}]) {
        const hidden = yield* request(`${url}/runs/${done.body.runId}`, { headers })
        expect(hidden.status).toBe(404)
        expect(hidden.text).not.toContain("milk")
      }
      expect((yield* request(`${url}/runs/no-such-run`, { headers: alice })).status).toBe(404)
    }))

  it.scoped("GET /workflows/:name/runs lists the caller's runs a page at a time, by status and session", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], tokens })
      const runs = `${url}/workflows/notes/runs`
      for (let i = 0; i < 5; i++) {
        yield* request(runs, { method: "POST", json: { input: `a${i}`, sessionId: i < 3 ? "s1" : "s2" }, headers: alice })
      }
      yield* request(runs, { method: "POST", json: { input: "b", sessionId: "of-bob" }, headers: bob })

      const seen: Array<string> = []
      let cursor: string | undefined
      do {
        const page = yield* request(`${runs}?limit=2${cursor === undefined ? "" : `&cursor=${cursor}`}`, { headers: alice })
        expect(page.status).toBe(200)
        expect(page.body.runs.length).toBeLessThanOrEqual(2)
        seen.push(...page.body.runs.map((r: { input: string }) => r.input))
        cursor = page.body.next
      } while (cursor !== undefined)
      expect(seen.sort()).toEqual(["a0", "a1", "a2", "a3", "a4"])
      const s2 = yield* request(`${runs}?sessionId=s2&status=completed`, { headers: alice })
      expect(s2.body.runs.map((r: { input: string }) => r.input).sort()).toEqual(["a3", "a4"])
      expect((yield* request(`${runs}?sessionId=of-bob`, { headers: alice })).body.runs).toEqual([])
      expect((yield* request(`${runs}?cursor=garbage`, { headers: alice })).status).toBe(400)
    }))
})

describe("session listings", () => {
  // live: the sessions' updatedAt come from the real clock
  it.live("come a page at a time, most recent first, filtered by a search and a time", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      for (let i = 0; i < 7; i++) {
        yield* request(`${url}/workflows/notes/runs`, { method: "POST", json: { input: "x", sessionId: `page-${i}` } })
        // (one updatedAt per session: ties would be ordered by id)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 3)))
      }
      const first = yield* request(`${url}/workflows/notes/sessions?limit=3`)
      expect(first.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["page-6", "page-5", "page-4"])
      const second = yield* request(`${url}/workflows/notes/sessions?limit=3&cursor=${first.body.next}`)
      expect(second.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["page-3", "page-2", "page-1"])
      const last = yield* request(`${url}/workflows/notes/sessions?limit=3&cursor=${second.body.next}`)
      expect(last.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["page-0"])
      expect(last.body.next).toBeUndefined()
      expect((yield* request(`${url}/workflows/notes/sessions?q=GE-5`)).body.sessions).toHaveLength(1)
      expect((yield* request(`${url}/workflows/notes/sessions?updatedSince=${Date.now() + 60_000}`)).body.sessions).toEqual([])
      expect((yield* request(`${url}/workflows/notes/sessions?limit=0`)).status).toBe(400)
    })))
})

describe("workflow ids", () => {
  it.scoped("each served workflow has a URL-safe id, its own or made from its name; the name still works", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [spaced, WorkflowServer.withId(notes, "my-notes")] })
      const list = yield* request(`${url}/workflows`)
      expect(list.body.map((w: { id: string; name: string }) => [w.id, w.name])).toEqual([
        ["spaced-name-workflow", "Spaced Name Workflow"],
        ["my-notes", "notes"]
      ])
      const byId = yield* request(`${url}/workflows/spaced-name-workflow/runs`, { method: "POST", json: { input: "hi" } })
      expect(byId.status).toBe(200)
      expect(byId.body.workflowName).toBe("Spaced Name Workflow")
      expect((yield* request(`${url}/workflows/my-notes/runs`, { method: "POST", json: { input: "x" } })).status).toBe(200)
      expect((yield* request(`${url}/workflows/Spaced%20Name%20Workflow`)).body.id).toBe("spaced-name-workflow")
    }))
})

describe("health", () => {
  it.scoped("GET /health is 200 while the store answers and 503 when it does not", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], requireAuth: true, tokens })
      const ok = yield* request(`${url}/health`)
      expect(ok.status).toBe(200)
      expect(ok.body).toEqual({ status: "ok" })

      const broken = Layer.sync(SessionStore.SessionStore, () =>
        SessionStore.make({
          ...SessionStore.makeMemoryBackend(),
          info: () => Effect.fail(new WorkflowError.SessionStoreError({ method: "info", description: "database down" }))
        }))
      const down = yield* start({ workflows: [notes] }, broken)
      const reply = yield* request(`${down}/health`)
      expect(reply.status).toBe(503)
      expect(reply.body.status).toBe("unavailable")
    }))
})
