/**
 * Runs as resources (`GET /runs/:runId`, `GET /workflows/:name/runs`), pages
 * of sessions, URL-safe workflow ids, and `GET /health`.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore, Workflow, WorkflowError } from "@sessionflow/core"
import { WorkflowServer } from "@sessionflow/server"
import { Effect, Layer, TestClock } from "effect"
import { approvals, failing, notes, spaced } from "./fixtures.js"
import { request, start } from "./utils.js"

const tokens = { "token-of-alice": "alice", "token-of-bob": "bob" }
const alice = { authorization: "Bearer token-of-alice" }
const bob = { authorization: "Bearer token-of-bob" }

describe("runs as resources", () => {
  it.scoped("GET /runs/:runId tells a run's status and result, error or question; another user's run is a 404", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes, failing, approvals], tokens })
      const done = yield* request(`${url}/workflows/notes/runs`, {
        method: "POST",
        json: { input: "milk" },
        headers: alice
      })
      const failed = yield* request(`${url}/workflows/failing/runs`, {
        method: "POST",
        json: { input: "x" },
        headers: alice
      })
      expect(failed.status).toBe(500)
      const paused = yield* request(`${url}/workflows/approvals/runs`, {
        method: "POST",
        json: { input: "tea" },
        headers: alice
      })

      const got = yield* request(`${url}/runs/${done.body.runId}`, { headers: alice })
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({
        runId: done.body.runId,
        status: "completed",
        content: 1,
        input: "milk",
        userId: "alice"
      })
      const failedRuns = yield* request(`${url}/workflows/failing/runs?status=error`, { headers: alice })
      expect(failedRuns.body.runs).toHaveLength(1)
      expect(failedRuns.body.runs[0]).toMatchObject({ status: "error" })
      expect(failedRuns.body.runs[0].error).toContain("the tool broke")
      const question = yield* request(`${url}/runs/${paused.body.runId}`, { headers: alice })
      expect(question.body).toMatchObject({ status: "paused", pause: { path: ["approve"], payload: { note: "tea" } } })

      // a run queued behind the paused one (in the background): queued, to its user alone
      const queued = yield* request(`${url}/workflows/approvals/runs`, {
        method: "POST",
        json: { input: "jam", sessionId: paused.body.sessionId, onBusy: "enqueue" },
        headers: { ...alice, prefer: "respond-async" }
      })
      expect(queued.status).toBe(202)
      const waiting = yield* request(`${url}/runs/${queued.body.runId}`, { headers: alice })
      expect(waiting.body).toMatchObject({
        status: "queued",
        position: 0,
        input: "jam",
        userId: "alice",
        queuedAt: expect.any(Number)
      })

      for (const headers of [bob, {}]) {
        const hidden = yield* request(`${url}/runs/${done.body.runId}`, { headers })
        expect(hidden.status).toBe(404)
        expect(hidden.text).not.toContain("milk")
        for (const path of [`/runs/${queued.body.runId}`, `/workflows/approvals/runs/${queued.body.runId}`]) {
          const other = yield* request(`${url}${path}`, { headers })
          expect(other.status).toBe(404)
          expect(other.text).not.toContain("jam")
        }
      }
      expect((yield* request(`${url}/runs/no-such-run`, { headers: alice })).status).toBe(404)
    }))

  it.scoped("GET /workflows/:name/runs lists the caller's runs a page at a time, by status and session", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], tokens })
      const runs = `${url}/workflows/notes/runs`
      for (let i = 0; i < 5; i++) {
        yield* request(runs, {
          method: "POST",
          json: { input: `a${i}`, sessionId: i < 3 ? "s1" : "s2" },
          headers: alice
        })
      }
      yield* request(runs, { method: "POST", json: { input: "b", sessionId: "of-bob" }, headers: bob })

      const seen: Array<string> = []
      let cursor: string | undefined
      do {
        const page = yield* request(`${runs}?limit=2${cursor === undefined ? "" : `&cursor=${cursor}`}`, {
          headers: alice
        })
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
      expect(second.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([
        "page-3",
        "page-2",
        "page-1"
      ])
      const last = yield* request(`${url}/workflows/notes/sessions?limit=3&cursor=${second.body.next}`)
      expect(last.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["page-0"])
      expect(last.body.next).toBeUndefined()
      expect((yield* request(`${url}/workflows/notes/sessions?q=GE-5`)).body.sessions).toHaveLength(1)
      expect((yield* request(`${url}/workflows/notes/sessions?updatedSince=${Date.now() + 60_000}`)).body.sessions)
        .toEqual([])
      expect((yield* request(`${url}/workflows/notes/sessions?limit=0`)).status).toBe(400)
    })))
})

describe("paging reads only a page", () => {
  /** A memory store that records how many rows each listing read gave back. */
  const spied = () => {
    const backend = SessionStore.makeMemoryBackend()
    const reads: Array<number> = []
    const store = SessionStore.make({
      ...backend,
      list: (filter) =>
        Effect.tap(backend.list(filter), (l) => Effect.sync(() => reads.push(l.sessions.length + l.broken.length))),
      listRuns: (filter) => Effect.tap(backend.listRuns(filter), (l) => Effect.sync(() => reads.push(l.runs.length)))
    })
    return { reads, layer: Layer.succeed(SessionStore.SessionStore, store) }
  }

  /** Every page of `path` for a caller, `limit` at a time; `between` runs after each page. */
  const walk = (
    url: string,
    path: string,
    headers: Record<string, string>,
    reads: Array<number>,
    between: (page: number) => Effect.Effect<void>
  ) =>
    Effect.gen(function*() {
      const pages: Array<ReadonlyArray<any>> = []
      let cursor: string | undefined
      do {
        const before = reads.length
        const separator = path.includes("?") ? "&" : "?"
        const page = yield* request(
          `${url}${path}${separator}limit=3${cursor === undefined ? "" : `&cursor=${cursor}`}`,
          { headers }
        )
        expect(page.status).toBe(200)
        const items = page.body.sessions ?? page.body.runs
        // one read of the store per page, which gave back the page (and no more)
        expect(reads.slice(before)).toEqual([items.length])
        expect(items.length).toBeLessThanOrEqual(3)
        pages.push(items)
        cursor = page.body.next
        yield* between(pages.length)
      } while (cursor !== undefined)
      return pages
    })

  it.scoped(
    "sessions and runs over HTTP: each page is read alone, the " +
      "cursor walks the caller's rows once in order while rows are added",
    () =>
      Effect.gen(function*() {
        const { layer, reads } = spied()
        const url = yield* start({ workflows: [notes], tokens }, layer)
        const post = (sessionId: string, headers: Record<string, string>) =>
          Effect.zipRight(
            TestClock.adjust("1 second"),
            request(`${url}/workflows/notes/runs`, { method: "POST", json: { input: sessionId, sessionId }, headers })
          )
        // alice's, bob's and anonymous sessions interleaved, one run each (alice's a1 two)
        for (let i = 0; i < 8; i++) {
          yield* post(`a${i}`, alice)
          if (i % 2 === 0) yield* post(`b${i}`, bob)
          if (i % 3 === 0) yield* post(`n${i}`, {})
        }
        yield* post("a1", alice)

        const sessionPages = yield* walk(url, "/workflows/notes/sessions", alice, reads, (page) =>
          // rows added between pages (the newest: before the cursor) are not met on the way
          Effect.asVoid(Effect.zipRight(post(`a-new-${page}`, alice), post(`b-new-${page}`, bob))))
        expect(sessionPages.map((p) => p.length)).toEqual([3, 3, 2])
        expect(sessionPages.flat().map((s) => s.sessionId)).toEqual(["a1", "a7", "a6", "a5", "a4", "a3", "a2", "a0"])
        expect(sessionPages.flat().every((s) => s.userId === "alice")).toBe(true)

        // a search is one read of the store too, however few sessions match
        const searched = yield* walk(url, "/workflows/notes/sessions?q=A-NEW", alice, reads, () => Effect.void)
        expect(searched.map((p) => p.map((s) => s.sessionId))).toEqual([["a-new-3", "a-new-2", "a-new-1"]])
        expect(yield* walk(url, "/workflows/notes/sessions?q=b-new", alice, reads, () => Effect.void)).toEqual([[]])

        const anonymous = yield* walk(url, "/workflows/notes/sessions", {}, reads, () => Effect.void)
        expect(anonymous.flat().map((s) => s.sessionId)).toEqual(["n6", "n3", "n0"])

        const runPages = yield* walk(
          url,
          "/workflows/notes/runs?status=completed",
          bob,
          reads,
          (page) => Effect.asVoid(Effect.zipRight(post(`b-late-${page}`, bob), post(`a-late-${page}`, alice)))
        )
        expect(runPages.flat().map((r) => r.input)).toEqual(["b-new-3", "b-new-2", "b-new-1", "b6", "b4", "b2", "b0"])
        expect(runPages.flat().every((r) => r.userId === "bob" && r.status === "completed")).toBe(true)

        const ofSession = yield* walk(url, "/workflows/notes/runs?sessionId=a1", alice, reads, () => Effect.void)
        expect(ofSession.flat().map((r) => r.sessionId)).toEqual(["a1", "a1"])
        // another user's session has no runs for the caller
        expect((yield* walk(url, "/workflows/notes/runs?sessionId=a1", bob, reads, () => Effect.void)).flat()).toEqual(
          []
        )
      })
  )
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
      const byId = yield* request(`${url}/workflows/spaced-name-workflow/runs`, {
        method: "POST",
        json: { input: "hi" }
      })
      expect(byId.status).toBe(200)
      expect(byId.body.workflowName).toBe("Spaced Name Workflow")
      expect((yield* request(`${url}/workflows/my-notes/runs`, { method: "POST", json: { input: "x" } })).status).toBe(
        200
      )
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

describe("a run reads its session once", () => {
  it.scoped(
    "the server's checks read the session, and the run starts from that " +
      "read where it answers the run's own; another user's session stays a 404",
    () =>
      Effect.gen(function*() {
        const backend = SessionStore.makeMemoryBackend()
        const reads: Array<"without state" | "knowing its version" | "with state"> = []
        const store = SessionStore.make({
          ...backend,
          findSession: (sessionId, options) =>
            Effect.zipRight(
              Effect.sync(() =>
                reads.push(
                  options?.state === false
                    ? "without state"
                    : options?.knownVersion !== undefined
                    ? "knowing its version"
                    : "with state"
                )
              ),
              backend.findSession(sessionId, options)
            )
        })
        const url = yield* start({ workflows: [notes], tokens }, Layer.succeed(SessionStore.SessionStore, store))
        const post = (input: string, headers: Record<string, string>) =>
          request(`${url}/workflows/notes/runs`, { method: "POST", json: { input, sessionId: "shared" }, headers })
        // a new session: the checks' read is the run's
        expect((yield* post("milk", alice)).status).toBe(200)
        expect(reads).toEqual(["without state"])
        // then the run reads the state (a new session's first run leaves none cached), which it keeps
        expect((yield* post("eggs", alice)).body.content).toBe(2)
        expect(reads).toEqual(["without state", "without state", "with state"])
        // then the checks' read answers the run, which starts from the state it kept
        expect((yield* post("tea", alice)).body.content).toBe(3)
        expect(reads).toHaveLength(4)
        // another user is refused by the checks, from their one read
        expect((yield* post("jam", bob)).status).toBe(404)
        expect(reads).toHaveLength(5)
        // a commit from another process since: the checks read the new version, and the run reads the new state
        yield* Workflow.run(notes, "jam", { sessionId: "shared", userId: "alice" }).pipe(
          Effect.provideService(SessionStore.SessionStore, SessionStore.make(backend))
        )
        const after = yield* post("rice", alice)
        expect(after.status).toBe(200)
        expect(after.body.state.notes).toEqual(["milk", "eggs", "tea", "jam", "rice"])
        expect(reads.slice(5)).toEqual(["without state", "knowing its version"])
      })
  )
})
