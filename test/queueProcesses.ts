/**
 * A session's queue across real OS processes on one store (a SQLite file, or
 * a PostgreSQL schema): eight processes send runs to one session with
 * `onBusy: "enqueue"`, several queued at once each; every run is applied
 * exactly once (each appends its sender and number to a list in the state,
 * reading it first: two at once would lose one), and each sender's runs in
 * the order it sent them. And a sender killed with SIGKILL while its runs
 * hold the queue (one running, one waiting, 60-second leases): the next
 * sender's run drops them at once and runs, long before their lease.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { Context, Effect, Layer, Schedule, type Scope } from "effect"
import { lastJsonLine, processExists, spawnFixture } from "./store-sqlite/processes.js"
import { storeLayer } from "./stores.js"

const senders = 8
const runsEach = 5

export const queueProcessSuite = (name: string, store: Effect.Effect<string, unknown, Scope.Scope>) =>
  describe(`a session's queue across OS processes (${name})`, () => {
    it.live(
      `${senders} processes enqueue runs on one session: each applied once, in order per sender`,
      () =>
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
          const entries = (session._tag === "Some" ? session.value.state : undefined) as {
            entries: ReadonlyArray<string>
          }
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
        })),
      600_000
    )

    it.live(
      "a sender killed while its runs hold the session's queue " +
        "(60-second leases): the next run drops them at once and runs",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const spec = yield* store
          const sessionId = `queued-${crypto.randomUUID()}`
          const sessionStore = yield* Effect.map(Layer.build(storeLayer(spec)), Context.get(SessionStore.SessionStore))
          const dying = yield* spawnFixture("queueWorker.ts", [spec, sessionId, "dead", "2", "stall"])
          yield* dying.ready
          yield* dying.start
          // its first run has the session's turn (its step never ends), its second waits behind it
          yield* Effect.repeat(
            Effect.zipWith(dying.stdout, sessionStore.queuedRuns({ sessionId }), (out, runs) =>
              out.includes("stalled\n") && runs.map((run) =>
                  run.status
                ).join() === "running,waiting"),
            { until: (both) => both, schedule: Schedule.spaced("50 millis") }
          ).pipe(Effect.timeoutFail({
            duration: "30 seconds",
            onTimeout: () => new Error("the dying sender's runs were not queued")
          }))
          const [first] = yield* sessionStore.queuedRuns({ sessionId })
          yield* dying.kill
          assert.isFalse(processExists(dying.pid))
          assert.isTrue(SessionStore.ownerGone(first!.owner))
          const next = yield* spawnFixture("queueWorker.ts", [spec, sessionId, "next", "1"])
          yield* next.ready
          yield* next.start
          const { contents } = lastJsonLine(yield* next.exit) as { contents: ReadonlyArray<string> }
          assert.deepStrictEqual(contents, ["next:1"])
          // long before the dead sender's leases expire
          assert.isBelow(Date.now(), first!.leaseExpiresAt - 30_000)
          assert.deepStrictEqual(yield* sessionStore.queuedRuns({ sessionId }), [])
          const session = yield* sessionStore.load(sessionId)
          assert.deepStrictEqual(session._tag === "Some" ? session.value.state : undefined, { entries: ["next:1"] })
        })),
      120_000
    )
  })
