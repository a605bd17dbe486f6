/**
 * The endpoints over a real local HTTP server: what they answer, with which
 * status code, and that bad input is refused with the Schema's message and
 * writes nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { Cause, Effect, Layer, Logger } from "effect"
import * as fs from "node:fs"
import { approvals, conflictingStore, dying, failing, notes, spaced, summarising } from "./fixtures.js"
import { parseEvents, request, start, streamRun } from "./utils.js"

const post = (url: string, json: unknown, headers: Record<string, string> = {}) =>
  request(url, { method: "POST", json, headers })

const put = (url: string, json: unknown) => request(url, { method: "PUT", json })

/** No stack trace in a response body. */
const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at |\.ts:\d+/)

describe("workflows", () => {
  it.scoped("lists the served workflows with their input and state JSON Schemas; an unknown one is a 404", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes, failing, spaced] })
      const list = yield* request(`${url}/workflows`)
      expect(list.status).toBe(200)
      expect(list.body.map((w: { name: string }) => w.name)).toEqual(["notes", "failing", "Spaced Name Workflow"])
      expect(list.body[0]).toMatchObject({
        name: "notes",
        description: "Keeps notes",
        steps: ["add"],
        input: { type: "string" },
        state: { type: "object", required: ["notes"] }
      })
      expect(list.body[1].input).toBeUndefined()

      const one = yield* request(`${url}/workflows/${encodeURIComponent("Spaced Name Workflow")}`)
      expect(one.status).toBe(200)
      expect(one.body.steps).toEqual(["echo"])

      const missing = yield* request(`${url}/workflows/nope`)
      expect(missing.status).toBe(404)
      expect(missing.body).toEqual({
        _tag: "NotFound",
        what: "workflow",
        id: "nope",
        message: "Workflow 'nope' is not served here"
      })
      const run = yield* post(`${url}/workflows/nope/runs`, { input: "x" })
      expect(run.status).toBe(404)
    }))

  it.scoped("GET /workflows/:name/schedules lists the workflow's stored schedules with their next tick", () =>
    Effect.gen(function*() {
      const store = SessionStore.make(SessionStore.makeMemoryBackend())
      yield* store.putSchedule({
        workflowName: "notes",
        name: "nightly",
        cron: "0 2 * * *",
        nextTick: 7_200_000,
        now: 5
      })
      yield* store.putSchedule({ workflowName: "failing", name: "other", cron: "* * * * *", nextTick: 60_000, now: 5 })
      const url = yield* start({ workflows: [notes, failing] }, Layer.succeed(SessionStore.SessionStore, store))
      const listed = yield* request(`${url}/workflows/notes/schedules`)
      expect(listed.status).toBe(200)
      expect(listed.body).toEqual([{
        workflowName: "notes",
        name: "nightly",
        cron: "0 2 * * *",
        nextTick: 7_200_000,
        updatedAt: 5
      }])
      expect((yield* request(`${url}/workflows/nope/schedules`)).status).toBe(404)
    }))
})

describe("runs", () => {
  it.scoped("a run answers its RunOutput with the encoded state; the next run on the session sees it", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes, spaced] })
      const first = yield* post(`${url}/workflows/notes/runs`, { input: "milk", sessionId: "s1" })
      expect(first.status).toBe(200)
      expect(first.contentType).toContain("application/json")
      expect(first.body).toMatchObject({
        sessionId: "s1",
        workflowName: "notes",
        status: "completed",
        content: 1,
        stepOutputs: [{ stepName: "add", content: 1, success: true }],
        state: { notes: ["milk"] }
      })
      expect(first.body.userId).toBeUndefined()
      const second = yield* post(`${url}/workflows/notes/runs`, { input: "eggs", sessionId: "s1" })
      expect(second.body.state).toEqual({ notes: ["milk", "eggs"] })
      expect(second.body.runId).not.toBe(first.body.runId)

      // no session id: a new one
      const fresh = yield* post(`${url}/workflows/notes/runs`, { input: "tea" })
      expect(fresh.body.sessionId).toMatch(/^[0-9a-f-]{36}$/)
      expect(fresh.body.state).toEqual({ notes: ["tea"] })

      // a sessionState patch is merged over the stored state
      const patched = yield* post(`${url}/workflows/notes/runs`, {
        input: "jam",
        sessionId: "s1",
        sessionState: { notes: ["bread"] }
      })
      expect(patched.body.state).toEqual({ notes: ["bread", "jam"] })

      const echoed = yield* post(`${url}/workflows/${encodeURIComponent("Spaced Name Workflow")}/runs`, {
        input: { a: [1] }
      })
      expect(echoed.status).toBe(200)
      expect(echoed.body.content).toEqual({ a: [1] })
    }))

  it.scoped(
    "a run that called a model answers its token usage, and so does GET /runs/:runId; a run that did not has none",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [summarising, notes] })
        const run = yield* post(`${url}/workflows/summarising/runs`, { input: "a long text", sessionId: "u1" })
        expect(run.status).toBe(200)
        const usage = { inputTokens: 40, outputTokens: 8, totalTokens: 48, modelCalls: 1 }
        expect(run.body).toMatchObject({ content: "A summary.", usage })
        const got = yield* request(`${url}/runs/${run.body.runId}`)
        expect(got.status).toBe(200)
        expect(got.body).toMatchObject({ status: "completed", usage })
        const plain = yield* post(`${url}/workflows/notes/runs`, { input: "milk" })
        expect(plain.body).not.toHaveProperty("usage")
        expect((yield* request(`${url}/runs/${plain.body.runId}`)).body).not.toHaveProperty("usage")
      })
  )

  it.scoped("bad input is a 400 with the Schema's message, and nothing is written", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const runs = `${url}/workflows/notes/runs`

      const wrongInput = yield* post(runs, { input: 42, sessionId: "s1" })
      expect(wrongInput.status).toBe(400)
      expect(wrongInput.body._tag).toBe("BadRequest")
      expect(wrongInput.body.reason).toBe("input")
      expect(wrongInput.body.message).toContain("Expected string, actual 42")

      const wrongField = yield* post(runs, { input: "x", sessionId: 7 })
      expect(wrongField.status).toBe(400)
      expect(wrongField.body._tag).toBe("HttpApiDecodeError")
      expect(wrongField.body.message).toContain("sessionId")

      const emptyId = yield* post(runs, { input: "x", sessionId: "" })
      expect(emptyId.status).toBe(400)

      const badState = yield* post(runs, { input: "x", sessionId: "s1", sessionState: { notes: "not a list" } })
      expect(badState.status).toBe(400)
      expect(badState.body).toMatchObject({ _tag: "BadRequest", reason: "state" })

      const notJson = yield* request(runs, {
        method: "POST",
        body: "{ input: oops",
        headers: { "content-type": "application/json" }
      })
      expect(notJson.status).toBe(400)
      expect(notJson.body._tag).toBe("BadRequest")
      expect(notJson.body.reason).toBe("body")
      expect(notJson.body.message).toMatch(/^The request body is not valid JSON/)

      // none of them created the session
      const session = yield* request(`${url}/workflows/notes/sessions/s1`)
      expect(session.status).toBe(404)
      const listing = yield* request(`${url}/workflows/notes/sessions`)
      expect(listing.body).toEqual({ sessions: [], broken: [] })
    }))

  it.scoped("a body over maxBodySize is refused: 413 when its Content-Length says so, else the upload is cut off", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes], maxBodySize: 1000 })
      const runs = `${url}/workflows/notes/runs`
      const big = JSON.stringify({ input: "x".repeat(2000), sessionId: "s1" })

      const declared = yield* request(runs, {
        method: "POST",
        body: big,
        headers: { "content-type": "application/json" }
      })
      expect(declared.status).toBe(413)
      expect(declared.body).toEqual({
        _tag: "PayloadTooLarge",
        limit: 1000,
        message: "The request body is larger than 1000 bytes"
      })

      // chunked: no Content-Length, so the server reads up to the limit and drops the connection there
      const chunked = yield* Effect.either(
        request(runs, {
          method: "POST",
          body: new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode(big))
              controller.close()
            }
          }),
          headers: { "content-type": "application/json" },
          duplex: "half"
        } as RequestInit).pipe(Effect.orDie, Effect.catchAllDefect((defect) => Effect.fail(defect)))
      )
      if (chunked._tag === "Right") expect(chunked.right.status).toBe(413)
      expect((yield* request(`${url}/workflows/notes/sessions/s1`)).status).toBe(404)

      const small = yield* post(runs, { input: "x".repeat(500), sessionId: "s1" })
      expect(small.status).toBe(200)
      expect(small.body.state.notes).toHaveLength(1)
    }))

  it.scoped("a failing step is a 500 RunFailed with its message (no stack trace); the run is recorded", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [failing] })
      const run = yield* post(`${url}/workflows/failing/runs`, { input: "go", sessionId: "f1" })
      expect(run.status).toBe(500)
      expect(run.body).toEqual({ _tag: "RunFailed", message: "Boom: the tool broke" })
      noStack(run.text)
      const history = yield* request(`${url}/workflows/failing/sessions/f1/runs`)
      expect(history.body.map((r: { status: string; error: string }) => [r.status, r.error])).toEqual([
        ["error", "Boom: the tool broke"]
      ])
    }))

  it.scoped(
    "a defect is a 500 InternalError without its details; streamed, its RunFailed says what the run record says",
    () =>
      Effect.gen(function*() {
        const logged: Array<string> = []
        const url = yield* start({ workflows: [dying] }).pipe(
          Effect.provide(Logger.add(Logger.make(({ cause, message }) => {
            logged.push(`${String(message)} ${Cause.pretty(cause)}`)
          })))
        )
        const run = yield* post(`${url}/workflows/dying/runs`, { input: "go", sessionId: "d1" })
        expect(run.status).toBe(500)
        expect(run.body).toEqual({ _tag: "InternalError", message: "Internal server error" })
        expect(run.text).not.toContain("secret")
        noStack(run.text)
        // the server's log has what the body leaves out: the defect's message and its stack
        const internal = logged.find((line) => line.includes("sessionflow server: internal error"))
        expect(internal).toContain("secret internals")
        expect(internal).toMatch(/\n\s+at /)

        // streamed, the run still ends with its RunFailed (the message its record keeps, no stack)
        const streamed = yield* streamRun(`${url}/workflows/dying/runs`, { input: "go", sessionId: "d1" })
        const events = parseEvents(streamed.text)
        expect(events.filter((e) => e._tag === "RunFailed")).toHaveLength(1)
        expect(events.at(-1)._tag).toBe("RunFailed")
        const history = yield* request(`${url}/workflows/dying/sessions/d1/runs`)
        expect(history.body.map((r: { error: string }) => r.error)).toEqual([events.at(-1).error, events.at(-1).error])
        expect(events.at(-1).error).not.toMatch(/\n\s+at /)
      })
  )

  it.scoped("a conflict is a 409, for runs and for state updates", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] }, conflictingStore)
      const first = yield* post(`${url}/workflows/notes/runs`, { input: "a", sessionId: "c1" })
      expect(first.status).toBe(200)
      const second = yield* post(`${url}/workflows/notes/runs`, { input: "b", sessionId: "c1" })
      expect(second.status).toBe(409)
      expect(second.body._tag).toBe("Conflict")
      expect(second.body.message).toContain("was changed concurrently")
      const update = yield* put(`${url}/workflows/notes/sessions/c1/state`, { state: { notes: [] } })
      expect(update.status).toBe(409)
    }))

  it.scoped("a session of another workflow: 409 for a run, 404 for the session endpoints", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes, spaced] })
      const other = yield* post(`${url}/workflows/${encodeURIComponent("Spaced Name Workflow")}/runs`, {
        input: "x",
        sessionId: "theirs"
      })
      expect(other.status).toBe(200)
      const run = yield* post(`${url}/workflows/notes/runs`, { input: "x", sessionId: "theirs" })
      expect(run.status).toBe(409)
      expect(run.body.message).toBe("Session 'theirs' belongs to workflow 'Spaced Name Workflow'")
      expect((yield* request(`${url}/workflows/notes/sessions/theirs`)).status).toBe(404)
    }))
})

describe("sessions", () => {
  it.scoped("list, get, state, replace the state, rename, history, chat, delete", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const session = `${url}/workflows/notes/sessions/s1`
      yield* post(`${url}/workflows/notes/runs`, { input: "milk", sessionId: "s1" })
      yield* post(`${url}/workflows/notes/runs`, { input: "eggs", sessionId: "s1" })

      const listing = yield* request(`${url}/workflows/notes/sessions`)
      expect(listing.status).toBe(200)
      expect(listing.body.sessions).toHaveLength(1)
      expect(listing.body.sessions[0]).toMatchObject({ sessionId: "s1", workflowName: "notes", version: 2 })

      const got = yield* request(session)
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({ sessionId: "s1", version: 2, state: { notes: ["milk", "eggs"] } })
      expect((yield* request(`${session}/state`)).body).toEqual({ state: { notes: ["milk", "eggs"] } })

      const replaced = yield* put(`${session}/state`, { state: { notes: ["tea"] } })
      expect(replaced.status).toBe(200)
      expect(replaced.body).toEqual({ state: { notes: ["tea"] } })
      const invalid = yield* put(`${session}/state`, { state: { notes: [1] } })
      expect(invalid.status).toBe(400)
      expect(invalid.body).toMatchObject({ _tag: "BadRequest", reason: "state" })
      expect(invalid.body.message).toContain("Expected string, actual 1")
      expect((yield* request(`${session}/state`)).body).toEqual({ state: { notes: ["tea"] } })

      const renamed = yield* put(`${session}/name`, { name: "Groceries" })
      expect(renamed.status).toBe(200)
      expect(renamed.body).toEqual({ name: "Groceries" })
      expect((yield* request(session)).body.name).toBe("Groceries")
      const generated = yield* put(`${session}/name`, { autogenerate: true })
      expect(generated.body.name).toContain("Keeps notes")
      expect((yield* put(`${session}/name`, { name: "  " })).status).toBe(400)

      const runs = yield* request(`${session}/runs`)
      expect(runs.body.map((r: { input: string; status: string }) => [r.input, r.status])).toEqual([
        ["milk", "completed"],
        ["eggs", "completed"]
      ])
      expect((yield* request(`${session}/runs?limit=1`)).body.map((r: { input: string }) => r.input)).toEqual(["eggs"])
      expect((yield* request(`${session}/runs?status=error`)).body).toEqual([])
      const badLimit = yield* request(`${session}/runs?limit=0`)
      expect(badLimit.status).toBe(400)
      expect(badLimit.body._tag).toBe("HttpApiDecodeError")

      const chat = yield* request(`${session}/chat?lastRuns=1`)
      expect(chat.body.map((t: { input: string; output: number }) => [t.input, t.output])).toEqual([["eggs", 2]])

      const deleted = yield* request(session, { method: "DELETE" })
      expect(deleted.status).toBe(204)
      const gone = yield* request(session)
      expect(gone.status).toBe(404)
      expect(gone.body).toEqual({ _tag: "NotFound", what: "session", id: "s1", message: "Session 's1' does not exist" })
      expect((yield* request(session, { method: "DELETE" })).status).toBe(404)
    }))
})

describe("versions and forks", () => {
  it.scoped("a session's versions, the state at one, a fork that goes its own way; what is refused", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const session = `${url}/workflows/notes/sessions/v1`
      for (const note of ["milk", "eggs", "jam"]) {
        yield* post(`${url}/workflows/notes/runs`, { input: note, sessionId: "v1" })
      }
      const versions = yield* request(`${session}/versions`)
      expect(versions.status).toBe(200)
      expect(versions.body.map((v: { version: number; changed: Array<string> }) => [v.version, v.changed])).toEqual([
        [1, ["notes"]],
        [2, ["notes"]],
        [3, ["notes"]]
      ])
      expect(versions.body[0].runId).toEqual(expect.any(String))
      const second = yield* request(`${session}/versions/2`)
      expect(second.body).toEqual({ version: 2, state: { notes: ["milk", "eggs"] } })
      const missing = yield* request(`${session}/versions/9`)
      expect(missing.status).toBe(404)
      expect(missing.body).toMatchObject({ _tag: "NotFound", what: "version", id: "v1@9" })
      expect((yield* request(`${session}/versions/zero`)).status).toBe(400)

      const fork = yield* post(`${session}/fork`, { atVersion: 2, newSessionId: "v1-alt" })
      expect(fork.status).toBe(201)
      expect(fork.body).toEqual({ sessionId: "v1-alt", version: 2 })
      yield* post(`${url}/workflows/notes/runs`, { input: "tea", sessionId: "v1-alt" })
      expect((yield* request(`${url}/workflows/notes/sessions/v1-alt/state`)).body.state).toEqual({
        notes: ["milk", "eggs", "tea"]
      })
      expect((yield* request(`${session}/state`)).body.state).toEqual({ notes: ["milk", "eggs", "jam"] })

      const taken = yield* post(`${session}/fork`, { newSessionId: "v1-alt" })
      expect(taken.status).toBe(409)
      expect(taken.body).toMatchObject({ _tag: "Conflict", reason: "session-exists", sessionId: "v1-alt" })
      expect((yield* post(`${session}/fork`, { atVersion: 0 })).status).toBe(400)
      expect((yield* post(`${session}/fork`, { atVersion: 7 })).status).toBe(404)
      expect((yield* post(`${url}/workflows/notes/sessions/nope/fork`, {})).status).toBe(404)
    }))

  it.scoped("a fork at a paused run's point: the fork's copy of the run takes another answer than the original", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [approvals] })
      const runs = `${url}/workflows/approvals/runs`
      const first = yield* post(runs, { input: "tea", sessionId: "p1" })
      yield* post(`${runs}/${first.body.runId}/continue`, { response: { approved: true } })
      const asked = yield* post(runs, { input: "cake", sessionId: "p1" })
      expect(asked.status).toBe(202)
      const fork = yield* post(`${url}/workflows/approvals/sessions/p1/fork`, {
        atRun: asked.body.runId,
        newSessionId: "p1-b"
      })
      expect(fork.status).toBe(201)
      expect(fork.body).toMatchObject({ sessionId: "p1-b", version: 1, runId: expect.any(String) })
      const approved = yield* post(`${runs}/${fork.body.runId}/continue`, { response: { approved: true } })
      expect(approved.body.state).toEqual({ notes: ["tea", "cake"] })
      const rejected = yield* post(`${runs}/${asked.body.runId}/continue`, { response: { approved: false } })
      expect(rejected.body.state).toEqual({ notes: ["tea"] })
      const unknown = yield* post(`${url}/workflows/approvals/sessions/p1/fork`, { atRun: asked.body.runId })
      expect(unknown.status).toBe(404)
      expect(unknown.body.what).toBe("run")
    }))
})

describe("the API's description", () => {
  it.scoped("/openapi.json describes every endpoint, bearer authentication and the event stream; /docs serves it", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const spec = yield* request(`${url}/openapi.json`)
      expect(spec.status).toBe(200)
      const server = JSON.parse(fs.readFileSync(new URL("../../packages/server/package.json", import.meta.url), "utf8"))
      expect(spec.body.info).toMatchObject({ title: "sessionflow", version: server.version })
      expect(Object.keys(spec.body.paths).sort()).toEqual([
        "/runs/{runId}",
        "/workflows",
        "/workflows/{name}",
        "/workflows/{name}/graph",
        "/workflows/{name}/runs",
        "/workflows/{name}/runs/paused",
        "/workflows/{name}/runs/queued",
        "/workflows/{name}/runs/{runId}",
        "/workflows/{name}/runs/{runId}/cancel",
        "/workflows/{name}/runs/{runId}/continue",
        "/workflows/{name}/runs/{runId}/events",
        "/workflows/{name}/runs/{runId}/signals/{signal}",
        "/workflows/{name}/schedules",
        "/workflows/{name}/sessions",
        "/workflows/{name}/sessions/{sessionId}",
        "/workflows/{name}/sessions/{sessionId}/chat",
        "/workflows/{name}/sessions/{sessionId}/fork",
        "/workflows/{name}/sessions/{sessionId}/name",
        "/workflows/{name}/sessions/{sessionId}/runs",
        "/workflows/{name}/sessions/{sessionId}/state",
        "/workflows/{name}/sessions/{sessionId}/versions",
        "/workflows/{name}/sessions/{sessionId}/versions/{version}",
        "/workflows/{name}/sessions/{sessionId}/watch"
      ])
      const start_ = spec.body.paths["/workflows/{name}/runs"].post
      expect(Object.keys(start_.responses["200"].content)).toEqual(["application/json", "text/event-stream"])
      expect(Object.keys(start_.responses)).toEqual(
        expect.arrayContaining(["200", "202", "400", "401", "403", "404", "409", "413", "415", "500", "504"])
      )
      const continue_ = spec.body.paths["/workflows/{name}/runs/{runId}/continue"].post
      expect(Object.keys(continue_.responses["200"].content)).toEqual(["application/json", "text/event-stream"])
      expect(continue_.responses["202"].content["application/json"].schema.properties.status).toEqual({
        type: "string",
        enum: ["paused"]
      })
      expect(spec.body.paths["/workflows/{name}/runs/{runId}/cancel"].post.responses["200"]).toBeDefined()
      const signal = spec.body.paths["/workflows/{name}/runs/{runId}/signals/{signal}"].post
      expect(Object.keys(signal.responses)).toEqual(expect.arrayContaining(["200", "202", "400", "404", "409"]))
      expect(signal.requestBody.content["application/json"].schema).toBeDefined()
      expect(spec.body.paths["/workflows/{name}/runs/paused"].get.parameters.map((p: { name: string }) => p.name))
        .toContain("sessionId")
      expect(start_.security).toEqual([{ bearer: [] }])
      expect(spec.body.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" })

      const docs = yield* request(`${url}/docs`)
      expect(docs.status).toBe(200)
      expect(docs.contentType).toContain("text/html")
      expect(docs.text).toContain("SwaggerUIBundle")
    }))
})
