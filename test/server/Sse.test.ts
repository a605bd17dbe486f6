/**
 * Streamed runs: the server-sent events framing, the terminal event that
 * always ends a stream, heartbeats, the run timeout, and a client that
 * disconnects mid-run.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import { failing, gated, notes } from "./fixtures.js"
import { parseEvents, parseFrames, request, start, streamRun } from "./utils.js"

const terminal = new Set(["RunCompleted", "RunFailed", "RunCancelled"])

/** A session's run history once it has `count` records (an interrupted run's record comes a moment after). */
const historyOf = (session: string, count: number) =>
  Effect.promise(async () => {
    for (let i = 0; i < 200; i++) {
      const body = await (await fetch(`${session}/runs`)).json() as ReadonlyArray<{ status: string; input: string }>
      if (body.length >= count) return body
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return []
  })

describe("server-sent events", () => {
  it.scoped(
    "one event per WorkflowEvent (id: seq, event: _tag, data: JSON), from RunStarted to one terminal event",
    () =>
      Effect.gen(function*() {
        const url = yield* start({ workflows: [notes] })
        const reply = yield* streamRun(`${url}/workflows/notes/runs`, { input: "milk", sessionId: "s1" })
        expect(reply.status).toBe(200)
        expect(reply.contentType).toBe("text/event-stream")
        const frames = parseFrames(reply.text)
        expect(frames.length).toBeGreaterThan(3)
        for (const [i, frame] of frames.entries()) {
          const event = JSON.parse(frame.data!)
          expect(frame.id).toBe(String(i))
          expect(event.seq).toBe(i)
          expect(frame.event).toBe(event._tag)
          expect(event.sessionId).toBe("s1")
        }
        expect(reply.text.endsWith("\n\n")).toBe(true)
        const events = parseEvents(reply.text)
        expect(events.map((e) => e._tag)).toEqual([
          "RunStarted",
          "StepStarted",
          "StateChanged",
          "StepCompleted",
          "RunCompleted"
        ])
        expect(events[2].changes).toEqual([{ op: "append", path: ["notes"], items: ["milk"] }])
        expect(events.at(-1).content).toBe(1)
        expect(new Set(events.map((e) => e.runId)).size).toBe(1)

        // the streamed run committed like any other
        const state = yield* request(`${url}/workflows/notes/sessions/s1/state`)
        expect(state.body).toEqual({ state: { notes: ["milk"] } })
      })
  )

  it.scoped("a failing run ends its stream with RunFailed and its message; bad input is refused before streaming", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [failing, notes] })
      const failed = yield* streamRun(`${url}/workflows/failing/runs`, { input: "go", sessionId: "f1" })
      expect(failed.status).toBe(200)
      const events = parseEvents(failed.text)
      expect(events[0]._tag).toBe("RunStarted")
      expect(events.filter((e) => terminal.has(e._tag))).toHaveLength(1)
      expect(events.at(-1)).toMatchObject({ _tag: "RunFailed", error: "Boom: the tool broke", sessionId: "f1" })
      expect(events.map((e) => e._tag)).toContain("StepFailed")

      const bad = yield* streamRun(`${url}/workflows/notes/runs`, { input: 42 })
      expect(bad.status).toBe(400)
      expect(bad.contentType).toContain("application/json")
      expect(bad.body.reason).toBe("input")
    }))

  it.scoped("a quiet stream gets a keep-alive comment every heartbeat", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const url = yield* start({ workflows: [gated(started, gate)], heartbeat: "5 seconds" })
      const reply = yield* Effect.fork(streamRun(`${url}/workflows/gated/runs`, { input: "wait", sessionId: "h1" }))
      yield* Deferred.await(started)
      yield* TestClock.adjust("11 seconds")
      yield* Deferred.succeed(gate, undefined)
      const { text } = yield* Fiber.join(reply)
      const frames = parseFrames(text)
      expect(frames.filter((f) => f.comment === "keep-alive")).toHaveLength(2)
      expect(frames.at(-1)!.event).toBe("RunCompleted")
      // the comments carry no event: the events' ids stay consecutive
      expect(frames.filter((f) => f.id !== undefined).map((f) => Number(f.id))).toEqual(
        frames.filter((f) => f.id !== undefined).map((_, i) => i)
      )
    }))

  it.scoped(
    "a run over runTimeout is cancelled and commits nothing: RunCancelled ends the stream, JSON gets a 504",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>() // never opened
        const url = yield* start({ workflows: [gated(started, gate)], runTimeout: "1 minute" })
        const runs = `${url}/workflows/gated/runs`

        const streamed = yield* Effect.fork(streamRun(runs, { input: "wait", sessionId: "t1" }))
        yield* Deferred.await(started)
        yield* TestClock.adjust("1 minute")
        const events = parseEvents((yield* Fiber.join(streamed)).text)
        expect(events.filter((e) => terminal.has(e._tag)).map((e) => e._tag)).toEqual(["RunCancelled"])
        expect(events.at(-1)).toMatchObject({ _tag: "RunCancelled", sessionId: "t1", runId: events[0].runId })
        expect(events.at(-1).seq).toBe(events.at(-2).seq + 1)

        const restarted = yield* Deferred.make<void>()
        const url2 = yield* start({ workflows: [gated(restarted, gate)], runTimeout: "1 minute" })
        const json = yield* Effect.fork(
          request(`${url2}/workflows/gated/runs`, { method: "POST", json: { input: "wait", sessionId: "t2" } })
        )
        yield* Deferred.await(restarted)
        yield* TestClock.adjust("1 minute")
        const timedOut = yield* Fiber.join(json)
        expect(timedOut.status).toBe(504)
        expect(timedOut.body).toEqual({
          _tag: "RunTimeout",
          timeoutMillis: 60000,
          message: "The run took longer than 60000 ms: it was cancelled and committed nothing"
        })

        // recorded as cancelled, state as the seed (the session holds only the record)
        for (const [base, id] of [[url, "t1"], [url2, "t2"]] as const) {
          const session = `${base}/workflows/gated/sessions/${id}`
          const runs = yield* request(`${session}/runs`)
          expect(runs.body.map((r: { status: string }) => r.status)).toEqual(["cancelled"])
          expect((yield* request(`${session}/state`)).body).toEqual({ state: { notes: [] } })
        }
      })
  )
})

describe("a client that disconnects", () => {
  it.live(
    "with ?cancelOnDisconnect=true, interrupts the run: nothing of it " +
      "is committed, it is recorded as cancelled, and the session works on",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const url = yield* start({ workflows: [gated(started, gate)] })
        const runs = `${url}/workflows/gated/runs`
        const session = `${url}/workflows/gated/sessions/d1`
        expect((yield* request(runs, { method: "POST", json: { input: "a", sessionId: "d1" } })).status).toBe(200)

        // a streamed run adds "wait-b" to its state, then waits; the client goes away
        const controller = new AbortController()
        const seen = yield* Effect.promise(async () => {
          const tags: Array<string> = []
          const response = await fetch(`${runs}?cancelOnDisconnect=true`, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "text/event-stream" },
            body: JSON.stringify({ input: "wait-b", sessionId: "d1" }),
            signal: controller.signal
          })
          const reader = response.body!.getReader()
          const decoder = new TextDecoder()
          let text = ""
          try {
            for (;;) {
              const { done, value } = await reader.read()
              if (done) break
              text += decoder.decode(value, { stream: true })
              const complete = parseEvents(text.slice(0, text.lastIndexOf("\n\n") + 2))
              tags.splice(0, tags.length, ...complete.map((e) => e._tag))
              if (complete.some((e) => e._tag === "StepStarted" && e.stepName === "wait")) controller.abort()
            }
          } catch {
            // aborted
          }
          return tags
        })
        expect(seen).toContain("StateChanged")
        expect(seen.some((tag) => terminal.has(tag))).toBe(false)
        yield* Deferred.await(started)

        // the run is recorded as cancelled; the state is as the first run left it
        const records = yield* historyOf(session, 2)
        expect(records.map((r) => [r.input, r.status])).toEqual([["a", "completed"], ["wait-b", "cancelled"]])
        expect((yield* request(`${session}/state`)).body).toEqual({ state: { notes: ["a"] } })

        // the session's lock was released: the next run completes on the committed state
        const next = yield* request(runs, { method: "POST", json: { input: "c", sessionId: "d1" } })
        expect(next.status).toBe(200)
        expect(next.body.state).toEqual({ notes: ["a", "c"] })
      }))
  )

  it.live("waiting for JSON, it interrupts the run the same way", () =>
    Effect.scoped(Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const url = yield* start({ workflows: [gated(started, gate)] })
      const runs = `${url}/workflows/gated/runs`
      const session = `${url}/workflows/gated/sessions/j1`
      expect((yield* request(runs, { method: "POST", json: { input: "a", sessionId: "j1" } })).status).toBe(200)

      const controller = new AbortController()
      const pending = fetch(runs, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ input: "wait-b", sessionId: "j1" }),
        signal: controller.signal
      }).catch(() => "aborted")
      yield* Deferred.await(started)
      controller.abort()
      expect(yield* Effect.promise(() => pending)).toBe("aborted")

      const records = yield* historyOf(session, 2)
      expect(records.map((r) => [r.input, r.status])).toEqual([["a", "completed"], ["wait-b", "cancelled"]])
      expect((yield* request(`${session}/state`)).body).toEqual({ state: { notes: ["a"] } })
    })))
})
