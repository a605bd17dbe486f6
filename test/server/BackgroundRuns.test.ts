/**
 * Background runs over HTTP: `Prefer: respond-async` answers 202 with the
 * run's ids and a `Location` (its status, `GET /workflows/:name/runs/:runId`);
 * the status follows the run to its end; other users (and other workflows'
 * paths) get 404; cancelling a running run (background or not) stops it and
 * commits nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { gated } from "./fixtures.js"
import { parseEvents, request, start } from "./utils.js"

const post = (url: string, json: unknown, headers: Record<string, string> = {}) =>
  request(url, { method: "POST", json, headers })

const tokens = { "token-of-alice": "alice", "token-of-bob": "bob" }
const alice = { authorization: "Bearer token-of-alice" }
const bob = { authorization: "Bearer token-of-bob" }
const async = { prefer: "respond-async" }

/** Reads `url` until its body's status is `status` (at most 200 requests). */
const statusBecomes = (url: string, status: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200; attempt++) {
      const reply = yield* request(url, { headers })
      if (reply.body?.status === status) return reply
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* Effect.dieMessage(`${url} never became ${status}`)
  })

describe("background runs over HTTP", () => {
  it.scoped(
    "Prefer: respond-async is a 202 with the run's ids and a Location; its status follows the run to its result",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const url = yield* start({ workflows: [gated(started, gate)] })
        const runs = `${url}/workflows/gated/runs`
        const accepted = yield* post(runs, { input: "wait", sessionId: "b1" }, async)
        expect(accepted.status).toBe(202)
        expect(accepted.body).toEqual({ status: "started", runId: expect.any(String), sessionId: "b1" })
        const runId: string = accepted.body.runId
        expect(accepted.headers["location"]).toBe(`/workflows/gated/runs/${runId}`)
        expect(accepted.headers["preference-applied"]).toBe("respond-async")
        // registered before the answer: its status is there at once
        const running = yield* request(`${url}${accepted.headers["location"]}`)
        expect(running.status).toBe(200)
        expect(running.body).toMatchObject({
          runId,
          sessionId: "b1",
          workflowName: "gated",
          status: "running",
          input: "wait"
        })
        yield* Deferred.await(started)
        yield* Deferred.succeed(gate, undefined)
        const done = yield* statusBecomes(`${runs}/${runId}`, "completed")
        expect(done.body).toMatchObject({ runId, status: "completed", completedAt: expect.any(Number) })
        expect((yield* request(`${url}/runs/${runId}`)).body).toEqual(done.body)
        expect((yield* request(`${url}/workflows/gated/sessions/b1/state`)).body).toEqual({
          state: { notes: ["wait"] }
        })
        // its events were stored: they can be read after it ended
        const log = yield* request(`${runs}/${runId}/events`)
        const tags = parseEvents(log.text).filter((e) => e.path.length === 0).map((e) => e._tag)
        expect(tags).toEqual(["RunStarted", "RunCompleted"])
      })
  )

  it.scoped("a background run refused before it starts answers as a run would (400, 409), and nothing is started", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const url = yield* start({ workflows: [gated(started, gate)] })
      const runs = `${url}/workflows/gated/runs`
      expect((yield* post(runs, { input: 1, sessionId: "b2" }, async)).status).toBe(400)
      const first = yield* post(runs, { input: "wait", sessionId: "b2", runId: "b-2" }, async)
      expect(first.status).toBe(202)
      const again = yield* post(runs, { input: "wait", sessionId: "b2", runId: "b-2" }, async)
      expect(again.status).toBe(409)
      expect(again.body).toMatchObject({ reason: "run-in-progress", runId: "b-2" })
      yield* Deferred.succeed(gate, undefined)
      yield* statusBecomes(`${runs}/b-2`, "completed")
    }))

  it.scoped(
    "a run's status is its owner's only: another user, an anonymous caller and another workflow's path get 404",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const other = gated(yield* Deferred.make<void>(), yield* Deferred.make<void>())
        const url = yield* start({
          workflows: [gated(started, gate), { ...other, name: "other" } as typeof other],
          tokens
        })
        const accepted = yield* post(`${url}/workflows/gated/runs`, { input: "wait", sessionId: "b3" }, {
          ...async,
          ...alice
        })
        expect(accepted.status).toBe(202)
        const runId: string = accepted.body.runId
        expect((yield* request(`${url}/workflows/gated/runs/${runId}`, { headers: alice })).status).toBe(200)
        for (
          const reply of [
            yield* request(`${url}/workflows/gated/runs/${runId}`, { headers: bob }),
            yield* request(`${url}/workflows/gated/runs/${runId}`),
            yield* request(`${url}/workflows/other/runs/${runId}`, { headers: alice }),
            yield* request(`${url}/workflows/gated/runs/no-such-run`, { headers: alice })
          ]
        ) {
          expect(reply.status).toBe(404)
          expect(reply.body).toMatchObject({ _tag: "NotFound", what: "run" })
        }
        // nor may they cancel it
        expect((yield* post(`${url}/workflows/gated/runs/${runId}/cancel`, undefined, bob)).status).toBe(404)
        yield* Deferred.succeed(gate, undefined)
        yield* statusBecomes(`${url}/workflows/gated/runs/${runId}`, "completed", alice)
      })
  )

  it.scoped(
    "cancelling a running run stops it: a background run's status is " +
      "cancelled, a JSON run's caller gets 409 run-ended; nothing is committed",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const url = yield* start({ workflows: [gated(started, gate)] })
        const runs = `${url}/workflows/gated/runs`
        const accepted = yield* post(runs, { input: "wait", sessionId: "b4" }, async)
        const runId: string = accepted.body.runId
        yield* Deferred.await(started)
        const cancelled = yield* post(`${runs}/${runId}/cancel`, undefined)
        expect(cancelled.status).toBe(200)
        expect(cancelled.body).toMatchObject({ runId, status: "cancelled" })
        expect((yield* request(`${runs}/${runId}`)).body).toMatchObject({ runId, status: "cancelled" })
        // the session was made to hold the record, with nothing of the run
        expect((yield* request(`${url}/workflows/gated/sessions/b4/state`)).body).toEqual({ state: { notes: [] } })
        const log = yield* request(`${runs}/${runId}/events`)
        expect(parseEvents(log.text).filter((e) => e.path.length === 0).map((e) => e._tag)).toEqual([
          "RunStarted",
          "RunCancelled"
        ])

        // a run answered as JSON, cancelled while it runs
        const started2 = yield* Deferred.make<void>()
        const url2 = yield* start({ workflows: [gated(started2, yield* Deferred.make<void>())] })
        const json = yield* Effect.fork(
          post(`${url2}/workflows/gated/runs`, { input: "wait", sessionId: "b5", runId: "b-5" })
        )
        yield* Deferred.await(started2)
        expect((yield* post(`${url2}/workflows/gated/runs/b-5/cancel`, undefined)).status).toBe(200)
        const answer = yield* Fiber.join(json)
        expect(answer.status).toBe(409)
        expect(answer.body).toMatchObject({ _tag: "Conflict", reason: "run-ended", runId: "b-5" })
        expect(answer.body.message).toContain("cancelled")
        expect((yield* request(`${url2}/workflows/gated/sessions/b5/state`)).body).toEqual({ state: { notes: [] } })
      })
  )

  it.scoped("the OpenAPI document describes the Prefer header, the 202 StartedRun and the run status endpoint", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [] })
      const spec = (yield* request(`${url}/openapi.json`)).body
      const startOp = spec.paths["/workflows/{name}/runs"].post
      expect(startOp.parameters.map((p: { name: string }) => p.name)).toContain("prefer")
      expect(JSON.stringify(startOp.responses["202"])).toContain(`"enum":["started"]`)
      expect(startOp.description).toContain("respond-async")
      expect(spec.paths["/workflows/{name}/runs/{runId}"].get.responses["200"]).toBeDefined()
    }))
})
