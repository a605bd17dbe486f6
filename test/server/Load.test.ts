/**
 * Load: 50 clients each streaming a run on its own session, and at the same
 * time 20 clients streaming runs on one shared session (they queue behind the
 * session's lock), against a server on a SQLite file. No update is lost and
 * every stream ends with exactly one terminal event.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionState, Workflow } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, type Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parseEvents, request, start, streamRun } from "./utils.js"

class Tally extends SessionState.Tag("test/server/Tally")<Tally>()({
  count: Schema.Number,
  items: Schema.Array(Schema.String)
}) {}

const tally = Workflow.make({
  name: "tally",
  input: Schema.String,
  state: Tally,
  sessionState: { count: 0, items: [] }
}).pipe(
  Workflow.andThen("append", ({ input }) => Tally.update((s) => ({ ...s, items: [...s.items, input] }))),
  Workflow.andThen("pause", () => Effect.sleep("2 millis")),
  Workflow.andThen("bump", () => Tally.modify((s) => [s.count + 1, { ...s, count: s.count + 1 }]))
)

const terminal = new Set(["RunCompleted", "RunFailed", "RunCancelled"])

describe("under load", () => {
  it.live(
    "50 clients on their own sessions and 20 on one shared session: no lost update, every stream ends",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const dir = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sessionflow-load-"))),
          (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const store = SqliteSessionStore.layer({ filename: path.join(dir, "load.db") }) as Layer.Layer<any>
        const url = yield* start({ workflows: [tally] }, store)
        const runs = `${url}/workflows/tally/runs`

        const own = Array.from({ length: 50 }, (_, i) => ({ input: `own-${i}`, sessionId: `own-${i}` }))
        const shared = Array.from({ length: 20 }, (_, i) => ({ input: `shared-${i}`, sessionId: "shared" }))
        const started = Date.now()
        const replies = yield* Effect.all(
          [...own, ...shared].map((body) => streamRun(runs, body)),
          { concurrency: "unbounded" }
        )
        const seconds = (Date.now() - started) / 1000

        for (const [i, reply] of replies.entries()) {
          expect(reply.status).toBe(200)
          const events = parseEvents(reply.text)
          const ends = events.filter((e) => e.path.length === 0 && terminal.has(e._tag))
          expect(ends.map((e) => e._tag), `stream ${i}`).toEqual(["RunCompleted"])
          expect(events.at(-1)._tag).toBe("RunCompleted")
          expect(events.map((e) => e.seq)).toEqual(events.map((_, j) => j))
        }

        // each own session: its one run
        for (const { sessionId, input } of own.slice(0, 10)) {
          const state = yield* request(`${url}/workflows/tally/sessions/${sessionId}/state`)
          expect(state.body).toEqual({ state: { count: 1, items: [input] } })
        }
        const listing = yield* request(`${url}/workflows/tally/sessions`)
        expect(listing.body.sessions).toHaveLength(51)

        // the shared session: twenty runs, one after the other, none lost
        const session = yield* request(`${url}/workflows/tally/sessions/shared`)
        expect(session.body.version).toBe(20)
        expect(session.body.state.count).toBe(20)
        expect([...session.body.state.items].sort()).toEqual(shared.map((s) => s.input).sort())
        const history = yield* request(`${url}/workflows/tally/sessions/shared/runs`)
        expect(history.body.map((r: { status: string }) => r.status)).toEqual(Array(20).fill("completed"))
        // the counts the runs returned are 1..20, each once
        const counts = replies.slice(50).map((r) => parseEvents(r.text).at(-1).content).sort((a, b) => a - b)
        expect(counts).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
        console.log(`load: 70 streamed runs (50 sessions + 20 on one) in ${seconds.toFixed(2)} s`)
      })),
    120_000
  )
})
