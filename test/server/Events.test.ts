/**
 * A run's stored events over HTTP (`GET …/runs/:runId/events`): replayed after
 * `Last-Event-ID` (or `?after=`), then followed until the run ends, on the
 * server running the run or another over the same store; a client that goes
 * away from a live stream leaves the run running; and many disconnects and
 * reconnects during runs see every event exactly once, in order.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Workflow, WorkflowEvent } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Deferred, Effect, type Layer, Schema } from "effect"
import { freshSchema, testUrl } from "../store-pg/pg.js"
import { gated, notes } from "./fixtures.js"
import { parseEvents, parseFrames, request, start, streamRun } from "./utils.js"

/** A run that emits `count` log lines, `pause` apart: a run long enough to reconnect during. */
const chatty = Workflow.make({ name: "chatty", input: Schema.Struct({ count: Schema.Number, pause: Schema.Number }) })
  .pipe(
    Workflow.andThen("talk", ({ input }) =>
      Effect.gen(function*() {
        for (let i = 0; i < input.count; i++) {
          yield* WorkflowEvent.log(`line ${i}`)
          if (input.pause > 0) yield* Effect.sleep(input.pause)
        }
        return input.count
      }))
  )

const tempDatabase = Effect.flatMap(
  FileSystem.FileSystem,
  (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-" })
).pipe(
  Effect.map((dir) => `${dir}/sessions.db`),
  Effect.provide(NodeFileSystem.layer)
)

interface Seen {
  readonly events: ReadonlyArray<any>
  /** the stream ended (the server closed it) */
  readonly ended: boolean
  readonly status: number
}

/**
 * Reads a run's event stream (a GET of its log, after `lastEventId`; or a
 * request of its own, such as the POST that starts the run) until `max`
 * events arrived (then goes away) or it ends: the events it saw (whole frames
 * only).
 */
const readSome = (url: string, lastEventId: string | undefined, max: number, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<Seen> => {
    const controller = new AbortController()
    const response = await fetch(url, {
      ...init,
      headers: {
        accept: "text/event-stream",
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId })
      },
      // a connection never outlives the test, whatever happens to it
      signal: AbortSignal.any([controller.signal, AbortSignal.timeout(30_000)])
    })
    if (response.status !== 200) return { events: [], ended: true, status: response.status }
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ""
    const complete = () => parseEvents(text.slice(0, text.lastIndexOf("\n\n") + 2))
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return { events: parseEvents(text), ended: true, status: 200 }
        text += decoder.decode(value, { stream: true })
        if (complete().length >= max) {
          controller.abort()
          return { events: complete().slice(0, max), ended: false, status: 200 }
        }
      }
    } catch {
      return { events: complete().slice(0, max), ended: false, status: 200 }
    }
  })

/**
 * Follows a run's events with one connection after another, each taking a
 * few events (1 to `most`) and going away, resuming from the last id seen:
 * every event seen, and how many connections it took.
 */
const reconnecting = (url: string, most: number) =>
  Effect.gen(function*() {
    const seen: Array<any> = []
    let connections = 0
    let early = 0
    for (;;) {
      const last = seen.at(-1)
      const got = yield* readSome(url, last === undefined ? undefined : String(last.seq), 1 + (connections % most))
      // the run may not be registered yet when its client first comes back
      if (got.status === 404 && seen.length === 0 && early++ < 100) {
        yield* Effect.sleep("20 millis")
        continue
      }
      connections++
      expect(got.status).toBe(200)
      seen.push(...got.events)
      if (seen.at(-1)?._tag === "RunCompleted") return { seen, connections }
      if (got.ended && got.events.length === 0) {
        return yield* Effect.dieMessage(`the stream ended without RunCompleted after ${seen.length} events`)
      }
    }
  })

const seqs = (events: ReadonlyArray<any>) => events.map((event) => event.seq)
const range = (n: number) => Array.from({ length: n }, (_, i) => i)

describe("GET /workflows/:name/runs/:runId/events", () => {
  it.live("replays a finished run's events from the first, after Last-Event-ID, or after ?after=", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* start({ workflows: [notes] })
      const live = yield* streamRun(`${url}/workflows/notes/runs`, { input: "milk", sessionId: "e1", runId: "run-e1" })
      const liveFrames = parseFrames(live.text)
      const events = `${url}/workflows/notes/runs/run-e1/events`
      const all = yield* request(events, { headers: { accept: "text/event-stream" } })
      expect(all.status).toBe(200)
      expect(all.contentType).toBe("text/event-stream")
      // the very events the live stream sent, under the same ids and tags
      expect(parseEvents(all.text)).toEqual(parseEvents(live.text))
      expect(parseFrames(all.text).map((f) => [f.id, f.event])).toEqual(liveFrames.map((f) => [f.id, f.event]))
      const rest = yield* request(events, { headers: { "last-event-id": "2" } })
      expect(seqs(parseEvents(rest.text))).toEqual(range(liveFrames.length).slice(3))
      const after = yield* request(`${events}?after=3`)
      expect(seqs(parseEvents(after.text))).toEqual(range(liveFrames.length).slice(4))
      // an id is the decimal seq the server sent, nothing else
      for (const id of ["x", "-1", "-5", "1e1", "10.0", "0x2", "+2"]) {
        const bad = yield* request(events, { headers: { "last-event-id": id } })
        expect([id, bad.status]).toEqual([id, 400])
      }
      for (const after of ["1e1", "-5", "2.5", "x"]) {
        expect([after, (yield* request(`${events}?after=${after}`)).status]).toEqual([after, 400])
      }
      expect(seqs(parseEvents((yield* request(`${events}?after=-1`)).text))).toEqual(range(liveFrames.length))
      expect((yield* request(`${url}/workflows/notes/runs/unknown/events`)).status).toBe(404)
    })))

  it.live("another user's run is not found", () =>
    Effect.scoped(Effect.gen(function*() {
      const tokens = { "token-of-alice": "alice", "token-of-bob": "bob" }
      const url = yield* start({ workflows: [notes], tokens })
      const alice = { authorization: "Bearer token-of-alice" }
      yield* streamRun(`${url}/workflows/notes/runs`, { input: "x", sessionId: "a1", runId: "alices" }, alice)
      const events = `${url}/workflows/notes/runs/alices/events`
      expect((yield* request(events, { headers: { authorization: "Bearer token-of-bob" } })).status).toBe(404)
      const own = yield* request(events, { headers: alice })
      expect(parseEvents(own.text).at(-1)._tag).toBe("RunCompleted")
    })))

  it.live("a client that goes away from a live stream leaves the run running; it comes back with Last-Event-ID", () =>
    Effect.scoped(Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const url = yield* start({ workflows: [gated(started, gate)] })
      // a streamed run that waits at its second step; the client takes two events and goes away
      const { events: seen } = yield* readSome(`${url}/workflows/gated/runs`, undefined, 2, {
        method: "POST",
        body: JSON.stringify({ input: "wait-1", sessionId: "g1", runId: "run-g1" })
      })
      expect(seqs(seen)).toEqual([0, 1])
      yield* Deferred.await(started)
      yield* Deferred.succeed(gate, undefined)
      const rest = yield* request(`${url}/workflows/gated/runs/run-g1/events`, { headers: { "last-event-id": "1" } })
      const events = [...seen, ...parseEvents(rest.text)]
      expect(seqs(events)).toEqual(range(events.length))
      expect(events.at(-1)._tag).toBe("RunCompleted")
      // the run went on and committed
      expect((yield* request(`${url}/workflows/gated/sessions/g1/state`)).body).toEqual({
        state: { notes: ["wait-1"] }
      })
    })))

  it.live(
    "200 disconnects and reconnects with Last-Event-ID during runs (SQLite): every event once, in order",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const filename = yield* tempDatabase
        const url = yield* start({ workflows: [chatty] }, SqliteSessionStore.layer({ filename }) as Layer.Layer<any>)
        // four runs at once, each followed by its own reconnecting client from its start
        const runs = ["c1", "c2", "c3", "c4"]
        for (const runId of runs) {
          const reply = yield* Effect.promise(() =>
            fetch(`${url}/workflows/chatty/runs`, {
              method: "POST",
              headers: { "content-type": "application/json", accept: "text/event-stream" },
              body: JSON.stringify({ input: { count: 120, pause: 25 }, sessionId: runId, runId })
            }).then(async (response) => {
              // the client goes away at once: the run goes on
              await response.body?.cancel()
              return response.status
            })
          )
          expect(reply).toBe(200)
        }
        const followed = yield* Effect.all(
          runs.map((runId) => reconnecting(`${url}/workflows/chatty/runs/${runId}/events`, 2)),
          { concurrency: "unbounded" }
        )
        for (const { seen } of followed) {
          expect(seqs(seen)).toEqual(range(seen.length))
          expect(seen.filter((event) => event._tag === "Log")).toHaveLength(120)
          expect(seen.at(-1)._tag).toBe("RunCompleted")
        }
        expect(followed.reduce((sum, { connections }) => sum + connections, 0)).toBeGreaterThanOrEqual(200)
      })),
    120_000
  )

  it.live(
    "on PostgreSQL, read from another server than the one running the run, reconnecting: every event once, in order",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const schema = yield* freshSchema
        // two servers, each with its own pool, over one schema
        const a = yield* start(
          { workflows: [chatty] },
          PgSessionStore.layer({ url: testUrl, schema }) as Layer.Layer<any>
        )
        const b = yield* start(
          { workflows: [chatty] },
          PgSessionStore.layer({ url: testUrl, schema }) as Layer.Layer<any>
        )
        expect(a).not.toBe(b)
        const reply = yield* Effect.promise(() =>
          fetch(`${a}/workflows/chatty/runs`, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "text/event-stream" },
            body: JSON.stringify({ input: { count: 60, pause: 5 }, sessionId: "p1", runId: "pg-run" })
          }).then(async (response) => {
            await response.body?.cancel()
            return response.status
          })
        )
        expect(reply).toBe(200)
        const { connections, seen } = yield* reconnecting(`${b}/workflows/chatty/runs/pg-run/events`, 2)
        expect(seqs(seen)).toEqual(range(seen.length))
        expect(seen.filter((event) => event._tag === "Log")).toHaveLength(60)
        expect(connections).toBeGreaterThanOrEqual(20)
      })),
    60_000
  )
})
