/**
 * A session's queue across real OS processes on one store (a SQLite file, or
 * a PostgreSQL schema): eight processes send runs to one session with
 * `onBusy: "enqueue"`, several queued at once each; every run is applied
 * exactly once (each appends its sender and number to a list in the state,
 * reading it first: two at once would lose one), and each sender's runs in
 * the order it sent them.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { Context, Effect, Layer, type Scope } from "effect"
import { lastJsonLine, spawnFixture } from "./store-sqlite/processes.js"
import { storeLayer } from "./stores.js"

const senders = 8
const runsEach = 5

export const queueProcessSuite = (name: string, store: Effect.Effect<string, unknown, Scope.Scope>) =>
  describe(`a session's queue across OS processes (${name})`, () => {
    it.live(`${senders} processes enqueue runs on one session: each applied once, in order per sender`, () =>
      Effect.scoped(Effect.gen(function*() {
        const spec = yield* store
        const sessionId = `queued-${crypto.randomUUID()}`
        // the store is created (migrated) once, before the processes race for it
        const warm = yield* spawnFixture("queueWorker.ts", [spec, `warm-${sessionId}`, "warm", "1"])
        yield* warm.ready
        yield* warm.start
        yield* warm.exit
        const workers = yield* Effect.forEach(
          Array.from({ length: senders }, (_, i) => `p${i}`),
          (sender) => spawnFixture("queueWorker.ts", [spec, sessionId, sender, String(runsEach)])
        )
        yield* Effect.all(workers.map((worker) => worker.ready), { concurrency: "unbounded" })
        yield* Effect.all(workers.map((worker) => worker.start))
        const outputs = yield* Effect.all(workers.map((worker) => worker.exit), { concurrency: "unbounded" })
        outputs.forEach((stdout, i) => {
          const { contents } = lastJsonLine(stdout) as { contents: ReadonlyArray<string> }
          assert.deepStrictEqual(contents, Array.from({ length: runsEach }, (_, n) => `p${i}:${n + 1}`))
        })
        const sessionStore = yield* Effect.map(Layer.build(storeLayer(spec)), Context.get(SessionStore.SessionStore))
        const session = yield* sessionStore.load(sessionId)
        assert.isTrue(session._tag === "Some")
        const entries = (session._tag === "Some" ? session.value.state : undefined) as { entries: ReadonlyArray<string> }
        // every run once
        assert.strictEqual(entries.entries.length, senders * runsEach)
        assert.strictEqual(new Set(entries.entries).size, senders * runsEach)
        // each sender's in the order it sent them
        for (let i = 0; i < senders; i++) {
          const mine = entries.entries.filter((entry) => entry.startsWith(`p${i}:`))
          assert.deepStrictEqual(mine, Array.from({ length: runsEach }, (_, n) => `p${i}:${n + 1}`))
        }
        assert.strictEqual(session._tag === "Some" ? session.value.version : 0, senders * runsEach)
        assert.deepStrictEqual(yield* sessionStore.queuedRuns({ sessionId }), [])
      })), 600_000)
  })
