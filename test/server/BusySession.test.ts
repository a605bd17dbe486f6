/**
 * `onBusy` over HTTP: a run sent to a session with a paused run is a 409 by
 * default, waits its turn with `enqueue` (listed by `GET …/runs/queued`
 * meanwhile), or cancels the paused run with `interrupt`; a running run that
 * `interrupt` stops answers its request with a 409 run-ended (cancelled).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schedule } from "effect"
import { approvals, gated } from "./fixtures.js"
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

  it.live("interrupt stops a run that runs on the session: its request is a 409 run-ended (cancelled), nothing of it committed", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const url = yield* start({ workflows: [gated(started, gate)] })
      const runs = `${url}/workflows/gated/runs`
      expect((yield* post(runs, { input: "first", sessionId: "held" })).status).toBe(200)
      const held = yield* Effect.fork(post(runs, { input: "wait", sessionId: "held", runId: "held-1" }))
      yield* Deferred.await(started)
      const urgent = yield* post(runs, { input: "urgent", sessionId: "held", onBusy: "interrupt" })
      expect(urgent.status).toBe(200)
      expect(urgent.body.state).toEqual({ notes: ["first", "urgent"] })
      const stopped = yield* Fiber.join(held)
      expect(stopped.status).toBe(409)
      expect(stopped.body).toMatchObject({ _tag: "Conflict", reason: "run-ended", runId: "held-1", sessionId: "held" })
      expect(stopped.body.message).toContain("(cancelled)")
      expect((yield* request(`${url}/runs/held-1`)).body.status).toBe("cancelled")
    }).pipe(Effect.scoped), 30_000)
})
