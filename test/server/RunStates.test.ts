/**
 * Where an unfinished run is, over HTTP: `GET /runs/:runId`, `GET
 * /workflows/:name/runs/:runId` and the runs listing give a sleeping run's
 * `state` and `wakeAt`, a waiting run's `state`, `signal` and `timeoutAt`, a
 * running run's `state`; an ended run has none. The paused-runs listing tells
 * sleeping and waiting runs from questions the same way.
 */
import { describe, expect, it } from "@effect/vitest"
import { Step, Workflow } from "@sessionflow/core"
import { Deferred, Effect, Schema } from "effect"
import { gated } from "./fixtures.js"
import { request, start } from "./utils.js"

const post = (url: string, json: unknown, headers: Record<string, string> = {}) =>
  request(url, { method: "POST", json, headers })

const hour = 60 * 60 * 1000

const napping = Workflow.make({ name: "napping", input: Schema.String }).pipe(
  Workflow.andThen(Step.sleep("nap", "1 hour")),
  Workflow.andThen("wake", ({ input }) => Effect.succeed(`${input} woke`))
)

const paying = Workflow.make({ name: "paying", input: Schema.String }).pipe(
  Workflow.andThen(Step.waitFor("paid", Schema.Struct({ amount: Schema.Number }), { timeout: "1 day" })),
  Workflow.andThen("ship", ({ previousStepContent: paid }) => Effect.succeed(paid._tag))
)

describe("the state of unfinished runs over HTTP", () => {
  it.scoped("a sleeping run is `sleeping` until its wakeAt, at every endpoint that describes it", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [napping] })
      const slept = yield* post(`${url}/workflows/napping/runs`, { input: "cat", sessionId: "rs-sleep" })
      expect(slept.status).toBe(202)
      const runId: string = slept.body.runId
      const expected = { runId, status: "paused", state: "sleeping", wakeAt: expect.any(Number) }
      const byId = yield* request(`${url}/runs/${runId}`)
      expect(byId.body).toMatchObject(expected)
      expect(byId.body.wakeAt - byId.body.pause.pausedAt).toBe(hour)
      expect(byId.body.signal).toBeUndefined()
      expect(byId.body.timeoutAt).toBeUndefined()
      expect((yield* request(`${url}/workflows/napping/runs/${runId}`)).body).toEqual(byId.body)
      const listed = yield* request(`${url}/workflows/napping/runs?sessionId=rs-sleep`)
      expect(listed.body.runs).toEqual([byId.body])
      // the paused-runs listing tells a sleeping run from a question
      const paused = yield* request(`${url}/workflows/napping/runs/paused?sessionId=rs-sleep`)
      expect(paused.body).toMatchObject([{ runId, path: ["nap"], state: "sleeping", wakeAt: byId.body.wakeAt }])
    }))

  it.scoped("a waiting run is `waiting` for its signal until its timeoutAt; once signalled it ends with no state", () =>
    Effect.gen(function*() {
      const url = yield* start({ workflows: [paying] })
      const runs = `${url}/workflows/paying/runs`
      const waited = yield* post(runs, { input: "order", sessionId: "rs-wait" })
      expect(waited.status).toBe(202)
      const runId: string = waited.body.runId
      const info = yield* request(`${runs}/${runId}`)
      expect(info.body).toMatchObject({
        runId,
        status: "paused",
        state: "waiting",
        signal: "paid",
        timeoutAt: expect.any(Number)
      })
      expect(info.body.timeoutAt - info.body.pause.pausedAt).toBe(24 * hour)
      expect((yield* request(`${runs}?sessionId=rs-wait`)).body.runs).toEqual([info.body])
      expect((yield* request(`${url}/runs/${runId}`)).body).toEqual(info.body)
      const paused = yield* request(`${runs}/paused?sessionId=rs-wait`)
      expect(paused.body).toMatchObject([{ runId, state: "waiting", signal: "paid", timeoutAt: info.body.timeoutAt }])

      const done = yield* post(`${runs}/${runId}/signals/paid`, { value: { amount: 3 } })
      expect(done.status).toBe(200)
      const ended = (yield* request(`${runs}/${runId}`)).body
      expect(ended).toMatchObject({ status: "completed", content: "Received" })
      expect(ended).not.toHaveProperty("state")
      expect(ended).not.toHaveProperty("signal")
    }))

  it.scoped("a running background run is `running`; the OpenAPI document describes the fields", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const url = yield* start({ workflows: [gated(started, gate)] })
      const accepted = yield* post(`${url}/workflows/gated/runs`, { input: "wait", sessionId: "rs-run" }, {
        prefer: "respond-async"
      })
      expect(accepted.status).toBe(202)
      yield* Deferred.await(started)
      const running = yield* request(`${url}/runs/${accepted.body.runId}`)
      expect(running.body).toMatchObject({ status: "running", state: "running" })
      expect(running.body).not.toHaveProperty("wakeAt")
      yield* Deferred.succeed(gate, undefined)

      const spec = (yield* request(`${url}/openapi.json`)).body
      const info = spec.components.schemas["RunInfo"]
      expect(Object.keys(info.properties)).toEqual(expect.arrayContaining(["state", "wakeAt", "signal", "timeoutAt"]))
      expect(JSON.stringify(info.properties.state)).toContain("sleeping")
      expect(info.required).not.toContain("state")
    }))
})
