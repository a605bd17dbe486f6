/**
 * Durable time across real OS processes on one store (a SQLite file, or a
 * PostgreSQL schema): process B runs `DurableRuns.layer` with a short poll;
 * process A runs a workflow until it sleeps durably and exits; B wakes the
 * run after its time (not before) and completes it: the step before the
 * sleep ran once (in A), the one after once (in B), the state committed once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Workflow } from "@sessionflow/core"
import { Effect, Schema, type Scope } from "effect"
import * as fs from "node:fs"
import { lastJsonLine, spawnFixture } from "./store-sqlite/processes.js"
import { storeLayer } from "./stores.js"

/** Where a test's processes keep their sessions (a store spec, see `stores.ts`) and their side-effect file. */
export interface Location {
  readonly store: string
  readonly effects: string
}

const lines = (
  file: string
) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter((l) => l.length > 0) : [])

const waitUntil = (read: Effect.Effect<boolean>, what: string) =>
  Effect.repeat(Effect.zipLeft(read, Effect.sleep("50 millis")), { until: (done) => done }).pipe(
    Effect.asVoid,
    Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error(`timed out waiting for ${what}`) })
  )

/** The sleeper workflow's name and state, to read it here. */
const sleeper = Workflow.make({ name: "sleeper", sessionState: {} })

const committed = (store: string) =>
  Workflow.getSessionState(sleeper, "sleeper").pipe(
    Effect.map((state) => Schema.decodeUnknownSync(Schema.Struct({ items: Schema.Array(Schema.String) }))(state).items),
    Effect.provide(storeLayer(store))
  )

export const durableTimeProcessSuite = (name: string, location: Effect.Effect<Location, unknown, Scope.Scope>) =>
  describe(`durable time across OS processes (${name})`, () => {
    it.live(
      "a run that sleeps in process A, which exits, is woken " +
        "after its time by process B's supervisor and completes there",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const { effects, store } = yield* location
          // B supervises the store from the start (it must leave the run asleep until its time)
          const b = yield* spawnFixture("sleepWorker.ts", [store, effects, "supervise", "-"])
          yield* b.ready
          const a = yield* spawnFixture("sleepWorker.ts", [store, effects, "sleep", "nap-1", "4 seconds"])
          const slept = lastJsonLine(yield* a.exit) as { runId: string; kind: string; wakeAt: number }
          assert.deepStrictEqual([slept.runId, slept.kind], ["nap-1", "sleep"])
          if (Date.now() < slept.wakeAt - 300) {
            // nothing committed, the run is unfinished with nobody holding it
            const [unfinished] = yield* Workflow.unfinishedRuns(sleeper).pipe(Effect.provide(storeLayer(store)))
            assert.deepStrictEqual([
              unfinished?.runId,
              unfinished?.status,
              unfinished?.owner,
              unfinished?.pause?.wakeAt
            ], ["nap-1", "paused", "", slept.wakeAt])
            const before = yield* Effect.either(committed(store))
            assert.isTrue(before._tag === "Left" && before.left._tag === "SessionNotFound")
          }
          assert.deepStrictEqual(lines(effects).slice(0, 1), ["step-1"])
          yield* waitUntil(Effect.sync(() => lines(effects).length === 2), "the woken run")
          const woke = (yield* b.stdout).split("\n").filter((l) => l.startsWith("woke ")).map((l) => Number(l.slice(5)))
          assert.strictEqual(woke.length, 1)
          // not before its time, and soon after it
          const delay = woke[0]! - slept.wakeAt
          console.log(`durable time (${name}): woken ${delay} ms after its wake-up time`)
          assert.isAtLeast(delay, 0)
          assert.isAtMost(delay, 2000)
          yield* waitUntil(
            Effect.map(Effect.either(committed(store)), (c) => c._tag === "Right" && c.right.length === 2),
            "the commit"
          )
          assert.deepStrictEqual(yield* committed(store), ["1", "2"])
          assert.deepStrictEqual(lines(effects), ["step-1", "step-2"])
          assert.deepStrictEqual(yield* Workflow.unfinishedRuns(sleeper).pipe(Effect.provide(storeLayer(store))), [])
        })),
      90_000
    )
  })
