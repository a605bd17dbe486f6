/**
 * `onBusy` over HTTP: a run sent to a session with a paused run is a 409 by
 * default, waits its turn with `enqueue` (listed by `GET …/runs/queued`
 * meanwhile), or cancels the paused run with `interrupt`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schedule } from "effect"
import { approvals } from "./fixtures.js"
import { request, start } from "./utils.js"

const post = (url: string, json: unknown) => request(url, { method: "POST", json })

describe("onBusy over HTTP", () => {
  it.live("reject is a 409; enqueue waits for the paused run and is listed meanwhile; interrupt cancels the paused run", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [approvals] })
      const runs = `${url}/workflows/approvals/runs`
      const paused = yield* post(runs, { input: "milk", sessionId: "busy" })
      expect(paused.status).toBe(202)

      const refused = yield* post(runs, { input: "eggs", sessionId: "busy" })
      expect(refused.status).toBe(409)
      const bad = yield* post(runs, { input: "eggs", sessionId: "busy", onBusy: "later" })
      expect(bad.status).toBe(400)

      const queued = yield* Effect.fork(post(runs, { input: "bread", sessionId: "busy", onBusy: "enqueue" }))
      const listed = yield* request(`${runs}/queued?sessionId=busy`).pipe(
        Effect.filterOrFail((reply) => reply.body?.length === 1),
        Effect.retry(Schedule.intersect(Schedule.spaced("20 millis"), Schedule.recurs(500)))
      )
      expect(listed.body).toEqual([{
        runId: expect.any(String),
        sessionId: "busy",
        workflowName: "approvals",
        input: "bread",
        status: "running",
        ticket: expect.any(Number),
        enqueuedAt: expect.any(Number)
      }])
      // it waits for the paused run: continued, it completes, then the queued run runs (and pauses)
      const continued = yield* post(`${runs}/${paused.body.runId}/continue`, { response: { approved: true } })
      expect(continued.status).toBe(200)
      const second = yield* Fiber.join(queued)
      expect(second.status).toBe(202)
      expect(second.body.payload).toEqual({ note: "bread" })
      expect((yield* request(`${runs}/queued`)).body).toEqual([])

      // interrupt: the paused run is cancelled, the new one runs
      const third = yield* post(runs, { input: "jam", sessionId: "busy", onBusy: "interrupt" })
      expect(third.status).toBe(202)
      expect(third.body.payload).toEqual({ note: "jam" })
      const cancelled = yield* request(`${url}/runs/${second.body.runId}`)
      expect(cancelled.body.status).toBe("cancelled")
    }).pipe(Effect.scoped), 30_000)
})
