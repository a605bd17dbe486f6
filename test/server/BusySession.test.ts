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
  it.live(
    "reject is a 409; enqueue waits for the paused run and is listed meanwhile; interrupt cancels the paused run",
    () =>
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
          // first in the queue, but no turn while the paused run holds the session
          status: "waiting",
          ticket: expect.any(Number),
          enqueuedAt: expect.any(Number)
        }])
        // a second one, in the background: 202 once it is queued, behind the first
        const later = yield* request(runs, {
          method: "POST",
          json: { input: "tea", sessionId: "busy", onBusy: "enqueue" },
          headers: { prefer: "respond-async" }
        })
        expect(later.status).toBe(202)
        // a queued run is a resource: queued, with when it was queued and its place (the runs ahead of it)
        const first = listed.body[0]
        const waiting = yield* request(`${runs}/${first.runId}`)
        expect(waiting.status).toBe(200)
        expect(waiting.body).toEqual({
          runId: first.runId,
          sessionId: "busy",
          workflowName: "approvals",
          status: "queued",
          input: "bread",
          queuedAt: first.enqueuedAt,
          position: 0
        })
        expect((yield* request(`${url}/runs/${first.runId}`)).body).toEqual(waiting.body)
        const behind = yield* request(`${url}/runs/${later.body.runId}`)
        expect([behind.body.status, behind.body.position, behind.body.input, behind.body.startedAt]).toEqual([
          "queued",
          1,
          "tea",
          undefined
        ])
        // not a run of another workflow
        expect((yield* request(`${url}/workflows/other/runs/${first.runId}`)).status).toBe(404)
        // it waits for the paused run: continued, it completes, then the queued run runs (and pauses)
        const continued = yield* post(`${runs}/${paused.body.runId}/continue`, { response: { approved: true } })
        expect(continued.status).toBe(200)
        const second = yield* Fiber.join(queued)
        expect(second.status).toBe(202)
        expect(second.body.payload).toEqual({ note: "bread" })
        // bread pauses in its turn: tea stays queued, now first
        const next = yield* request(`${runs}/${later.body.runId}`)
        expect([next.body.status, next.body.position]).toEqual(["queued", 0])
        const breadDone = yield* post(`${runs}/${second.body.runId}/continue`, { response: { approved: true } })
        expect(breadDone.status).toBe(200)
        const teaPaused = yield* request(`${runs}/${later.body.runId}`).pipe(
          Effect.filterOrFail((reply) => reply.body?.status === "paused"),
          Effect.retry(Schedule.intersect(Schedule.spaced("20 millis"), Schedule.recurs(500)))
        )
        expect(teaPaused.body.startedAt).toEqual(expect.any(Number))
        expect((yield* request(`${runs}/queued`)).body).toEqual([])

        // interrupt: the paused run (tea) is cancelled, the new one runs
        const third = yield* post(runs, { input: "jam", sessionId: "busy", onBusy: "interrupt" })
        expect(third.status).toBe(202)
        expect(third.body.payload).toEqual({ note: "jam" })
        const cancelled = yield* request(`${url}/runs/${later.body.runId}`)
        expect(cancelled.body.status).toBe("cancelled")
      }).pipe(Effect.scoped),
    30_000
  )

  it.live(
    "interrupt stops a run that runs on the session: its request " +
      "is a 409 run-ended (cancelled), nothing of it committed",
    () =>
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
        expect(stopped.body).toMatchObject({
          _tag: "Conflict",
          reason: "run-ended",
          runId: "held-1",
          sessionId: "held"
        })
        expect(stopped.body.message).toContain("(cancelled)")
        expect((yield* request(`${url}/runs/held-1`)).body.status).toBe("cancelled")
      }).pipe(Effect.scoped),
    30_000
  )
})
