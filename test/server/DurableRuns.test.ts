/**
 * Durable runs over HTTP: a run that pauses (202 with its question, or a
 * stream ending with RunPaused), the paused-runs list, continuing (JSON or
 * server-sent events) and cancelling, idempotent run ids, the 409s and 404s,
 * ownership of paused runs, and the runs of processes that died (resumed by
 * the server, or by a retry with their id at once when the process was on
 * this host).
 */
import { describe, expect, it } from "@effect/vitest"
import { Placement, SessionStore } from "@sessionflow/core"
import { Deferred, Effect, Fiber, Layer, Option, TestClock } from "effect"
import { spawnSync } from "node:child_process"
import { approvals, failing, gated, notes, payments } from "./fixtures.js"
import { parseEvents, parseFrames, request, start, streamRun } from "./utils.js"

const post = (url: string, json: unknown, headers: Record<string, string> = {}) =>
  request(url, { method: "POST", json, headers })

const tokens = { "token-of-alice": "alice", "token-of-bob": "bob" }
const alice = { authorization: "Bearer token-of-alice" }
const bob = { authorization: "Bearer token-of-bob" }

describe("signals over HTTP", () => {
  it.scoped(
    "a run waiting for a signal is a 202; a bad value is a 400 that stores nothing; a " +
      "signal it does not wait for yet is kept (202), the one it waits for carries it on",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [payments], tokens })
        const runs = `${url}/workflows/payments/runs`
        const waiting = yield* post(runs, { input: "order-1", sessionId: "pay" }, alice)
        expect(waiting.status).toBe(202)
        expect(waiting.body).toMatchObject({ status: "paused", sessionId: "pay", path: ["paid"] })
        const runId: string = waiting.body.runId
        const signal = (name: string, value: unknown, headers = alice) =>
          post(`${runs}/${runId}/signals/${name}`, { value }, headers)

        const bad = yield* signal("paid", { amount: "ten" })
        expect(bad.status).toBe(400)
        expect(bad.body).toMatchObject({ _tag: "BadRequest", reason: "signal" })
        expect(bad.body.message).toContain("Expected number")
        const unknown = yield* signal("refunded", {})
        expect(unknown.status).toBe(400)
        expect(unknown.body.message).toContain("no Step.waitFor for this signal")
        // another user's run does not exist
        expect((yield* signal("paid", { amount: 10 }, bob)).status).toBe(404)

        const kept = yield* signal("shipped", "by train")
        expect(kept.status).toBe(202)
        expect(kept.body).toEqual({ status: "kept", runId, signal: "shipped", seq: 1 })
        const done = yield* signal("paid", { amount: 10 })
        expect(done.status).toBe(200)
        expect(done.body).toMatchObject({
          runId,
          status: "completed",
          content: "order-1 shipped by train",
          state: { notes: ["order-1: shipped by train"] }
        })
        const ended = yield* signal("paid", { amount: 10 })
        expect(ended.status).toBe(409)
        expect(ended.body).toMatchObject({ reason: "run-ended", runId })
      })
  )
})

describe("a run that pauses", () => {
  it.scoped(
    "is a 202 with its question; the session takes no new run; a bad response is a 400; continuing completes it",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [approvals] })
        const runs = `${url}/workflows/approvals/runs`

        const paused = yield* post(runs, { input: "milk", sessionId: "p1" })
        expect(paused.status).toBe(202)
        expect(paused.body).toEqual({
          status: "paused",
          runId: expect.any(String),
          sessionId: "p1",
          pause: expect.any(String),
          path: ["approve"],
          payload: { note: "milk" }
        })
        const runId: string = paused.body.runId
        const pause: string = paused.body.pause
        // nothing committed: the session does not exist yet
        expect((yield* request(`${url}/workflows/approvals/sessions/p1`)).status).toBe(404)

        const listed = yield* request(`${runs}/paused?sessionId=p1`)
        expect(listed.status).toBe(200)
        expect(listed.body).toEqual([{
          runId,
          sessionId: "p1",
          workflowName: "approvals",
          input: "milk",
          pause,
          path: ["approve"],
          payload: { note: "milk" },
          startedAt: expect.any(Number),
          pausedAt: expect.any(Number),
          state: "paused"
        }])
        expect((yield* request(`${runs}/paused`)).body.map((r: { runId: string }) => r.runId)).toEqual([runId])
        expect((yield* request(`${runs}/paused?sessionId=other`)).body).toEqual([])

        // a new run on the session: 409, as JSON and streamed (before any event)
        for (
          const reply of [
            yield* post(runs, { input: "eggs", sessionId: "p1" }),
            yield* streamRun(runs, { input: "eggs", sessionId: "p1" })
          ]
        ) {
          expect(reply.status).toBe(409)
          expect(reply.contentType).toContain("application/json")
          expect(reply.body).toMatchObject({ _tag: "Conflict", reason: "session-paused", sessionId: "p1", runId })
          expect(reply.body.message).toContain("has a paused run")
        }

        // a response that does not fit the step's response Schema: 400, the run stays paused
        const bad = yield* post(`${runs}/${runId}/continue`, { response: { approved: "yes" } })
        expect(bad.status).toBe(400)
        expect(bad.body).toMatchObject({ _tag: "BadRequest", reason: "response" })
        expect(bad.body.message).toContain("Expected boolean, actual \"yes\"")
        expect((yield* request(`${runs}/paused`)).body).toHaveLength(1)

        // an answer to a pause the run does not wait at: 409, nothing taken, the run stays paused
        const stale = yield* post(`${runs}/${runId}/continue`, {
          response: { approved: true },
          pause: "an-earlier-pause"
        })
        expect(stale.status).toBe(409)
        expect(stale.body).toMatchObject({
          _tag: "Conflict",
          reason: "pause-mismatch",
          runId,
          expected: "an-earlier-pause",
          current: pause
        })
        expect((yield* request(`${runs}/paused`)).body).toHaveLength(1)

        const done = yield* post(`${runs}/${runId}/continue`, { response: { approved: true }, pause })
        expect(done.status).toBe(200)
        expect(done.body).toMatchObject({
          runId,
          sessionId: "p1",
          status: "completed",
          content: "added milk",
          state: { notes: ["milk"] }
        })
        expect((yield* request(`${runs}/paused`)).body).toEqual([])
        const history = yield* request(`${url}/workflows/approvals/sessions/p1/runs`)
        expect(history.body.map((r: { runId: string; status: string }) => [r.runId, r.status])).toEqual([[
          runId,
          "completed"
        ]])

        // the run has ended: 409 run-ended for continuing or cancelling it again, nothing changed
        const again = yield* post(`${runs}/${runId}/continue`, { response: { approved: true } })
        expect(again.status).toBe(409)
        expect(again.body).toMatchObject({ _tag: "Conflict", reason: "run-ended", runId, sessionId: "p1" })
        expect(again.body.message).toContain("(completed)")
        const cancelAgain = yield* post(`${runs}/${runId}/cancel`, {})
        expect(cancelAgain.status).toBe(409)
        expect(cancelAgain.body).toMatchObject({ _tag: "Conflict", reason: "run-ended", runId, sessionId: "p1" })
        expect((yield* request(`${url}/runs/${runId}`)).body).toMatchObject({ status: "completed" })
        // the session takes runs again
        expect((yield* post(runs, { input: "eggs", sessionId: "p1" })).status).toBe(202)
      })
  )

  it.scoped(
    "streamed, it ends with RunPaused; continued as a stream, it starts with RunResumed and ends with RunCompleted",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [approvals] })
        const runs = `${url}/workflows/approvals/runs`
        const first = yield* streamRun(runs, { input: "tea", sessionId: "s1" })
        expect(first.status).toBe(200)
        expect(first.contentType).toBe("text/event-stream")
        const events = parseEvents(first.text)
        expect(events[0]._tag).toBe("RunStarted")
        expect(events.at(-1)).toMatchObject({
          _tag: "RunPaused",
          sessionId: "s1",
          stepPath: ["approve"],
          payload: { note: "tea" }
        })
        expect(events.filter((e) => ["RunCompleted", "RunFailed", "RunCancelled"].includes(e._tag))).toEqual([])
        const runId: string = events.at(-1).runId

        // a response that does not fit, streamed: found once the step
        // runs again, it ends the stream with RunFailed; the run waits on
        const bad = parseEvents((yield* streamRun(`${runs}/${runId}/continue`, { response: { approved: 1 } })).text)
        expect(bad[0]._tag).toBe("RunResumed")
        expect(bad.at(-1)._tag).toBe("RunFailed")
        expect(bad.at(-1).error).toContain("does not fit the paused step's response schema")
        expect((yield* request(`${runs}/paused?sessionId=s1`)).body.map((r: { runId: string }) => r.runId)).toEqual([
          runId
        ])

        const continued = yield* streamRun(`${runs}/${runId}/continue`, { response: { approved: true } })
        expect(continued.status).toBe(200)
        expect(continued.contentType).toBe("text/event-stream")
        const frames = parseFrames(continued.text).filter((f) => f.data !== undefined)
        for (const frame of frames) {
          const event = JSON.parse(frame.data!)
          expect(frame.event).toBe(event._tag)
          expect(frame.id).toBe(String(event.seq))
          expect(event.runId).toBe(runId)
        }
        const tags = frames.map((f) => f.event)
        expect(tags[0]).toBe("RunResumed")
        expect(tags.at(-1)).toBe("RunCompleted")
        expect(tags).toContain("StateChanged")
        expect(JSON.parse(frames.at(-1)!.data!).content).toBe("added tea")
        expect(continued.text.endsWith("\n\n")).toBe(true)
        expect((yield* request(`${url}/workflows/approvals/sessions/s1/state`)).body).toEqual({
          state: { notes: ["tea"] }
        })

        // a rejection, streamed: completed without the note
        const second = parseEvents((yield* streamRun(runs, { input: "cake", sessionId: "s1" })).text).at(-1)
        expect(second._tag).toBe("RunPaused")
        const rejected = parseEvents(
          (yield* streamRun(`${runs}/${second.runId}/continue`, { response: { approved: false } })).text
        )
        expect(rejected.at(-1)).toMatchObject({ _tag: "RunCompleted", content: "rejected" })
        expect((yield* request(`${url}/workflows/approvals/sessions/s1/state`)).body).toEqual({
          state: { notes: ["tea"] }
        })
      })
  )

  it.scoped(
    "cancelling answers the cancelled record and commits nothing; unknown runs and runs of another workflow are 404s",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [approvals, notes] })
        const runs = `${url}/workflows/approvals/runs`
        const runId: string = (yield* post(runs, { input: "jam", sessionId: "c1" })).body.runId

        // the run belongs to another workflow: unknown there
        for (
          const reply of [
            yield* post(`${url}/workflows/notes/runs/${runId}/continue`, { response: { approved: true } }),
            yield* post(`${url}/workflows/notes/runs/${runId}/cancel`, {})
          ]
        ) {
          expect(reply.status).toBe(404)
          expect(reply.body).toEqual({
            _tag: "NotFound",
            what: "run",
            id: runId,
            message: `Run '${runId}' does not exist`
          })
          expect(reply.text).not.toContain("jam")
        }
        for (
          const reply of [
            yield* post(`${runs}/nope/continue`, { response: { approved: true } }),
            yield* post(`${runs}/nope/cancel`, {}),
            yield* streamRun(`${runs}/nope/continue`, { response: { approved: true } })
          ]
        ) {
          expect(reply.status).toBe(404)
          expect(reply.body.what).toBe("run")
        }
        // a continue body without the right shape is the endpoint's own 400
        expect((yield* post(`${runs}/${runId}/continue`, "approved")).status).toBe(400)

        const cancelled = yield* post(`${runs}/${runId}/cancel`, {})
        expect(cancelled.status).toBe(200)
        expect(cancelled.body).toMatchObject({
          runId,
          sessionId: "c1",
          workflowName: "approvals",
          status: "cancelled",
          input: "jam"
        })
        expect((yield* request(`${runs}/paused`)).body).toEqual([])
        expect((yield* request(`${url}/workflows/approvals/sessions/c1/state`)).body).toEqual({ state: { notes: [] } })
        const history = yield* request(`${url}/workflows/approvals/sessions/c1/runs`)
        expect(history.body.map((r: { status: string }) => r.status)).toEqual(["cancelled"])
        // a cancelled run is over: continuing or cancelling it again is a 409 run-ended
        for (
          const reply of [
            yield* post(`${runs}/${runId}/continue`, { response: { approved: true } }),
            yield* streamRun(`${runs}/${runId}/continue`, { response: { approved: true } }),
            yield* post(`${runs}/${runId}/cancel`, {})
          ]
        ) {
          expect(reply.status).toBe(409)
          expect(reply.body).toMatchObject({ _tag: "Conflict", reason: "run-ended", runId, sessionId: "c1" })
          expect(reply.body.message).toContain("(cancelled)")
        }
        // the session takes runs again
        expect((yield* post(runs, { input: "jam", sessionId: "c1" })).status).toBe(202)
      })
  )
})

describe("run ids", () => {
  it.scoped(
    "a completed run id answers its recorded output without running again; one used on another session is a 404",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [notes] })
        const runs = `${url}/workflows/notes/runs`
        const first = yield* post(runs, { input: "milk", sessionId: "i1", runId: "r-1" })
        expect(first.status).toBe(200)
        expect(first.body).toMatchObject({ runId: "r-1", content: 1, state: { notes: ["milk"] } })
        const again = yield* post(runs, { input: "milk", sessionId: "i1", runId: "r-1" })
        expect(again.status).toBe(200)
        expect(again.body).toMatchObject({ runId: "r-1", content: 1, stepOutputs: [], state: { notes: ["milk"] } })
        const streamed = parseEvents((yield* streamRun(runs, { input: "milk", sessionId: "i1", runId: "r-1" })).text)
        expect(streamed.map((e) => e._tag)).toEqual(["RunStarted", "RunCompleted"])
        expect((yield* request(`${url}/workflows/notes/sessions/i1/runs`)).body).toHaveLength(1)

        const other = yield* post(runs, { input: "x", sessionId: "i2", runId: "r-1" })
        expect(other.status).toBe(404)
        expect(other.body).toEqual({ _tag: "NotFound", what: "run", id: "r-1", message: "Run 'r-1' does not exist" })
        // a retry that names the run only gets its recorded result too
        const byRunId = yield* post(runs, { input: "milk", runId: "r-1" })
        expect(byRunId.status).toBe(200)
        expect(byRunId.body).toMatchObject({
          runId: "r-1",
          sessionId: "i1",
          content: 1,
          stepOutputs: [],
          state: { notes: ["milk"] }
        })
        expect((yield* request(`${url}/workflows/notes/sessions/i1/runs`)).body).toHaveLength(1)
        expect((yield* post(runs, { input: "x", runId: "" })).status).toBe(400)
      })
  )

  it.scoped("a failed or cancelled run id is a 409 run-ended, and nothing runs", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [notes, approvals, failing] })
      const runs = `${url}/workflows/notes/runs`
      // a failed run: its id answers with its recorded error, and nothing runs again
      const fails = `${url}/workflows/failing/runs`
      expect((yield* post(fails, { input: "go", sessionId: "f1", runId: "f-1" })).status).toBe(500)
      const failedAgain = yield* post(fails, { input: "go", sessionId: "f1", runId: "f-1" })
      expect(failedAgain.status).toBe(409)
      expect(failedAgain.body).toMatchObject({ _tag: "Conflict", reason: "run-ended", runId: "f-1", sessionId: "f1" })
      expect(failedAgain.body.message).toContain("its recorded error: Boom: the tool broke")
      const failedHistory = (yield* request(`${url}/workflows/failing/sessions/f1/runs`)).body
      expect(failedHistory.map((r: { runId: string; status: string }) => [r.runId, r.status])).toEqual([[
        "f-1",
        "error"
      ]])
      // a cancelled run
      const asks = `${url}/workflows/approvals/runs`
      const paused = yield* post(asks, { input: "tea", sessionId: "e1", runId: "e-1" })
      expect(paused.status).toBe(202)
      expect((yield* post(`${asks}/e-1/cancel`, {})).status).toBe(200)
      for (
        const reply of [
          yield* post(asks, { input: "tea", sessionId: "e1", runId: "e-1" }),
          yield* post(asks, { input: "tea", runId: "e-1" })
        ]
      ) {
        expect(reply.status).toBe(409)
        expect(reply.body).toMatchObject({ _tag: "Conflict", reason: "run-ended", runId: "e-1", sessionId: "e1" })
        expect(reply.body.message).toContain("cancelled")
      }
      expect(
        (yield* request(`${url}/workflows/approvals/sessions/e1/runs`)).body.map((r: { status: string }) => r.status)
      ).toEqual([
        "cancelled"
      ])
      // a run whose input does not fit is refused before it starts: the id stays free
      expect((yield* post(runs, { input: 1, sessionId: "e2", runId: "e-2" })).status).toBe(400)
      expect((yield* post(runs, { input: "milk", sessionId: "e2", runId: "e-2" })).status).toBe(200)
    }))

  it.scoped(
    "a run id that is running is a 409 (JSON and streamed); a paused one answers 202 again, or 409 when streamed",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const url = yield* start({ workflows: [gated(started, gate), approvals] })
        const runs = `${url}/workflows/gated/runs`
        const running = yield* Effect.fork(post(runs, { input: "wait", sessionId: "g1", runId: "g-1" }))
        yield* Deferred.await(started)
        for (
          const reply of [
            yield* post(runs, { input: "wait", sessionId: "g1", runId: "g-1" }),
            yield* streamRun(runs, { input: "wait", sessionId: "g1", runId: "g-1" }),
            // a retry that names the run only
            yield* post(runs, { input: "wait", runId: "g-1" }),
            yield* streamRun(runs, { input: "wait", runId: "g-1" })
          ]
        ) {
          expect(reply.status).toBe(409)
          expect(reply.body).toMatchObject({
            _tag: "Conflict",
            reason: "run-in-progress",
            sessionId: "g1",
            runId: "g-1"
          })
          // when to try again: the whole seconds until the run's lease is past (10 s by default, from
          // this test's clock at 0)
          expect(reply.headers["retry-after"]).toBe("11")
        }
        // continuing a running run: 409 too
        const busy = yield* post(`${runs}/g-1/continue`, { response: {} })
        expect(busy.status).toBe(409)
        expect(busy.body.reason).toBe("run-in-progress")
        yield* Deferred.succeed(gate, undefined)
        expect((yield* Fiber.join(running)).status).toBe(200)

        const asks = `${url}/workflows/approvals/runs`
        const paused = yield* post(asks, { input: "tea", sessionId: "q1", runId: "q-1" })
        expect(paused.status).toBe(202)
        const retried = yield* post(asks, { input: "tea", sessionId: "q1", runId: "q-1" })
        expect(retried.status).toBe(202)
        expect(retried.body).toEqual(paused.body)
        expect((yield* post(asks, { input: "tea", runId: "q-1" })).body).toEqual(paused.body)
        const streamed = yield* streamRun(asks, { input: "tea", sessionId: "q1", runId: "q-1" })
        expect(streamed.status).toBe(409)
        expect(streamed.body).toMatchObject({ reason: "run-paused", runId: "q-1" })
      })
  )
})

describe("ownership of paused runs", () => {
  it.scoped(
    "another user's paused run is not listed, and continuing or cancelling it is a 404 that shows nothing of it",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [approvals], tokens })
        const runs = `${url}/workflows/approvals/runs`
        // alice's session exists (one approved run), then a second run of hers waits
        const first = yield* post(runs, { input: "first", sessionId: "a1" }, alice)
        expect((yield* post(`${runs}/${first.body.runId}/continue`, { response: { approved: true } }, alice)).status)
          .toBe(200)
        const paused = yield* post(runs, { input: "secret plan", sessionId: "a1" }, alice)
        expect(paused.status).toBe(202)
        const runId: string = paused.body.runId
        // and an anonymous caller's paused run, anonymous callers' only
        const open = yield* post(runs, { input: "open", sessionId: "u1" })
        expect((yield* request(`${runs}/paused`)).body.map((r: { runId: string }) => r.runId)).toEqual([
          open.body.runId
        ])
        expect((yield* request(`${runs}/paused`, { headers: bob })).body).toEqual([])

        for (const headers of [bob, {}]) {
          const attempts = [
            yield* request(`${runs}/paused?sessionId=a1`, { headers }),
            yield* post(`${runs}/${runId}/continue`, { response: { approved: true } }, headers),
            yield* streamRun(`${runs}/${runId}/continue`, { response: { approved: true } }, headers),
            yield* post(`${runs}/${runId}/cancel`, {}, headers),
            yield* post(runs, { input: "x", sessionId: "a1", runId }, headers)
          ]
          for (const attempt of attempts) {
            expect(attempt.status).toBe(404)
            expect(attempt.text).not.toContain("secret")
            expect(attempt.text).not.toContain("alice")
          }
        }

        const mine = yield* request(`${runs}/paused?sessionId=a1`, { headers: alice })
        expect(mine.body).toMatchObject([{ runId, userId: "alice", payload: { note: "secret plan" } }])
        expect((yield* request(`${runs}/paused`, { headers: alice })).body).toHaveLength(1)
        const done = yield* post(`${runs}/${runId}/continue`, { response: { approved: true } }, alice)
        expect(done.status).toBe(200)
        expect(done.body.state).toEqual({ notes: ["first", "secret plan"] })
        // once ended, it is a 409 run-ended for alice only: anyone else gets the 404 of a run that does not exist
        for (const headers of [bob, {}]) {
          for (
            const attempt of [
              yield* post(`${runs}/${runId}/continue`, { response: { approved: true } }, headers),
              yield* post(`${runs}/${runId}/cancel`, {}, headers)
            ]
          ) {
            expect(attempt.status).toBe(404)
            expect(attempt.body).toEqual({
              _tag: "NotFound",
              what: "run",
              id: runId,
              message: `Run '${runId}' does not exist`
            })
          }
        }
        for (
          const attempt of [
            yield* post(`${runs}/${runId}/continue`, { response: { approved: true } }, alice),
            yield* post(`${runs}/${runId}/cancel`, {}, alice)
          ]
        ) {
          expect(attempt.status).toBe(409)
          expect(attempt.body).toMatchObject({ _tag: "Conflict", reason: "run-ended", runId, sessionId: "a1" })
        }
      })
  )
})

describe("abandoned runs", () => {
  /** A server over a store that holds the entry of a `notes` run whose process died (its lease ran out 1 s ago). */
  const withOrphan = (supervise: boolean | undefined, placement: Placement.Service = Placement.local) =>
    Effect.gen(function*() {
      const store = SessionStore.make(SessionStore.makeMemoryBackend())
      yield* store.startRun({
        runId: "orphan",
        sessionId: "o1",
        workflowName: "notes",
        status: "running",
        input: "from a dead process",
        owner: "a-process-that-died",
        leaseExpiresAt: 1000,
        baseVersion: 0,
        initialState: { notes: [] },
        durability: "step",
        startedAt: 0,
        updatedAt: 0
      })
      const url = yield* start(
        { workflows: [notes], ...(supervise === undefined ? {} : { supervise }) },
        Layer.merge(Layer.succeed(SessionStore.SessionStore, store), Layer.succeed(Placement.Placement, placement))
      )
      yield* TestClock.adjust("2 seconds")
      return { store, url }
    })

  const recordOf = (store: SessionStore.Service) =>
    Effect.map(
      store.getRun("orphan"),
      (found) => Option.isSome(found) && found.value._tag === "Recorded" ? found.value.record : undefined
    )

  it.scoped("are resumed by the server by default", () =>
    Effect.gen(function*() {
      const { store, url } = yield* withOrphan(undefined)
      const record = yield* Effect.repeat(recordOf(store), { until: (record) => record !== undefined })
      expect(record).toMatchObject({ runId: "orphan", status: "completed", content: 1 })
      expect((yield* request(`${url}/workflows/notes/sessions/o1`)).body.state).toEqual({
        notes: ["from a dead process"]
      })
    }))

  it.scoped("are left alone with supervise: false", () =>
    Effect.gen(function*() {
      const { store } = yield* withOrphan(false)
      yield* Effect.repeatN(Effect.yieldNow(), 200)
      yield* TestClock.adjust("10 seconds")
      yield* Effect.repeatN(Effect.yieldNow(), 200)
      expect(yield* recordOf(store)).toBeUndefined()
      expect((yield* store.activeRuns({})).map((run) => run.owner)).toEqual(["a-process-that-died"])
    }))

  /** A placement that sends runs elsewhere (a cluster's runners): this server runs none of them. */
  const elsewhere = Placement.remote({
    run: () => Effect.die("not sent"),
    stream: () => Effect.die("not sent"),
    continue: () => Effect.die("not sent"),
    continueStream: () => Effect.die("not sent"),
    cancel: () => Effect.die("not sent")
  })

  it.scoped("served on a remote placement, are left to its runners by default", () =>
    Effect.gen(function*() {
      const { store } = yield* withOrphan(undefined, elsewhere)
      yield* Effect.repeatN(Effect.yieldNow(), 200)
      yield* TestClock.adjust("10 seconds")
      yield* Effect.repeatN(Effect.yieldNow(), 200)
      expect(yield* recordOf(store)).toBeUndefined()
      expect((yield* store.activeRuns({})).map((run) => run.owner)).toEqual(["a-process-that-died"])
    }))

  it.scoped("served on a remote placement, are resumed here with supervise: true", () =>
    Effect.gen(function*() {
      const { store } = yield* withOrphan(true, elsewhere)
      const record = yield* Effect.repeat(recordOf(store), { until: (record) => record !== undefined })
      expect(record).toMatchObject({ runId: "orphan", status: "completed", content: 1 })
    }))
})

describe("a run whose process died on this host", () => {
  /** The owner id of a process of this host that ran and exited: its runs' owner is gone. */
  const deadOwner = () => {
    const pid = Number(
      spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout
    )
    const owner = SessionStore.make(SessionStore.makeMemoryBackend()).owner.replace(/:\d+:/, `:${pid}:`)
    expect(SessionStore.ownerGone(owner)).toBe(true)
    return owner
  }

  it.scoped("is carried on by a retry with its id, JSON or streamed, while its lease still holds", () =>
    Effect.gen(function*() {
      const store = SessionStore.make(SessionStore.makeMemoryBackend())
      const owner = deadOwner()
      const orphan = (runId: string, sessionId: string) =>
        store.startRun({
          runId,
          sessionId,
          workflowName: "notes",
          status: "running",
          input: "from a dead process",
          owner,
          // the test clock is at 0: a minute of lease left
          leaseExpiresAt: 60_000,
          baseVersion: 0,
          initialState: { notes: [] },
          durability: "step",
          startedAt: 0,
          updatedAt: 0
        })
      yield* orphan("dead-json", "d1")
      yield* orphan("dead-sse", "d2")
      const url = yield* start(
        { workflows: [notes], supervise: false },
        Layer.succeed(SessionStore.SessionStore, store)
      )
      const runs = `${url}/workflows/notes/runs`
      const json = yield* post(runs, { input: "from a dead process", sessionId: "d1", runId: "dead-json" })
      expect(json.status).toBe(200)
      expect(json.body).toMatchObject({
        runId: "dead-json",
        status: "completed",
        content: 1,
        state: { notes: ["from a dead process"] }
      })
      // a retry that names the run only, streamed
      const streamed = yield* streamRun(runs, { input: "from a dead process", runId: "dead-sse" })
      expect(streamed.status).toBe(200)
      const tags = parseEvents(streamed.text).map((event) => event._tag)
      expect(tags[0]).toBe("RunResumed")
      expect(tags[tags.length - 1]).toBe("RunCompleted")
      expect((yield* request(`${url}/workflows/notes/sessions/d2`)).body.state).toEqual({
        notes: ["from a dead process"]
      })
      expect(yield* store.activeRuns({})).toEqual([])
    }))

  it.scoped(
    "a continue it was running is carried on by a retry of the " +
      "continue, with the answer it recorded; a living one's is a 409",
    () =>
      Effect.gen(function*() {
        const store = SessionStore.make(SessionStore.makeMemoryBackend())
        const url = yield* start(
          { workflows: [approvals], supervise: false },
          Layer.succeed(SessionStore.SessionStore, store)
        )
        const runs = `${url}/workflows/approvals/runs`
        const pausedOn = (sessionId: string) =>
          Effect.map(post(runs, { input: "tea", sessionId }), (reply) => {
            expect(reply.status).toBe(202)
            expect(typeof reply.body.pause).toBe("string")
            return reply.body as { runId: string; pause: string }
          })
        // taken from its pause by a continue (as its claim leaves it), with the answer it recorded
        const taken = (runId: string, owner: string) =>
          Effect.gen(function*() {
            const claimed = yield* store.claimRun(runId, { owner: store.owner, now: 0, leaseExpiresAt: 60_000 })
            yield* store.updateRun(runId, store.owner, {
              owner,
              pause: { ...claimed.pause!, answer: { response: { approved: true } } }
            })
          })
        const dead = yield* pausedOn("c1")
        yield* taken(dead.runId, deadOwner())
        const done = yield* post(`${runs}/${dead.runId}/continue`, { response: { approved: false }, pause: dead.pause })
        expect(done.status).toBe(200)
        expect(done.body).toMatchObject({
          runId: dead.runId,
          status: "completed",
          content: "added tea",
          state: { notes: ["tea"] }
        })
        // a continue that a living process runs: refused, as before
        const living = yield* pausedOn("c2")
        yield* taken(living.runId, store.owner)
        const busy = yield* post(`${runs}/${living.runId}/continue`, {
          response: { approved: false },
          pause: living.pause
        })
        expect(busy.status).toBe(409)
        expect(busy.body).toMatchObject({ reason: "run-in-progress", runId: living.runId })
      })
  )
})
