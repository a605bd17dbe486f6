import { assert, describe, expect, it } from "@effect/vitest"
import { SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { Effect, Layer, Option, TestClock } from "effect"
import { freshStores } from "../stores.js"

const counter = Workflow.make({
  name: "counter",
  steps: [Step.make("count", ({ input }) => Effect.succeed(`ran ${String(input)}`))]
})

const history = (sessionId: string) =>
  Effect.map(Workflow.getRunHistory(counter, sessionId), (runs) => runs.map((run) => run.input))

describe.each(freshStores)("Workflow.prune on the %s store", (_name, storeLayer) => {
  it.effect(
    "removes run records by age and by count, with their stored events; sessions stay",
    () =>
      Effect.gen(function*() {
        for (let i = 1; i <= 4; i++) {
          yield* Workflow.run(counter, i, {
            sessionId: "a",
            events: "stored",
            eventRetention: { keepFor: "30 days" },
            runId: `a${i}`
          })
          yield* TestClock.adjust("1 day")
        }
        yield* Workflow.run(counter, 1, { sessionId: "b" })
        // a: runs ended 4, 3, 2 and 1 days ago; b: one just now
        const store = yield* SessionStore.SessionStore
        const logged = (yield* store.readEvents("a1")).length
        assert.isAbove(logged, 0)
        // each of a1, a2, a3 logged as many events
        expect(yield* Workflow.prune(counter, { olderThan: "36 hours" })).toEqual({
          runs: 3,
          events: 3 * logged,
          abandoned: 0
        })
        expect(yield* history("a")).toEqual([4])
        expect(yield* history("b")).toEqual([1])
        assert.deepStrictEqual(yield* store.readEvents("a1"), [])
        assert.isAbove((yield* store.readEvents("a4")).length, 0)
        yield* Workflow.run(counter, 2, { sessionId: "b" })
        expect(yield* Workflow.prune(counter, { keepLast: 1, sessionId: "b" })).toEqual({
          runs: 1,
          events: 0,
          abandoned: 0
        })
        expect(yield* history("b")).toEqual([2])
        expect(yield* history("a")).toEqual([4])
        expect(yield* Workflow.getSessionState(counter, "a")).toEqual({})
      }).pipe(Effect.provide(storeLayer)),
    60_000
  )
})

describe("Workflow.prune", () => {
  it.effect("ends abandoned runs idle for olderThan (their journals go), leaving paused and running ones", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const unfinished = (
        runId: string,
        status: "running" | "paused",
        leaseExpiresAt: number
      ): SessionStore.ActiveRun => ({
        runId,
        sessionId: "u",
        workflowName: "counter",
        status,
        input: 1,
        owner: status === "paused" ? "" : "gone",
        leaseExpiresAt,
        baseVersion: 0,
        durability: "step",
        journal: { next: 1, previous: null, completed: [], outputs: {}, state: {}, answers: {} },
        startedAt: 0,
        updatedAt: 0
      })
      yield* store.startRun(unfinished("dead", "running", 10))
      yield* store.startRun(unfinished("waiting", "paused", 0))
      yield* TestClock.adjust("2 days")
      yield* store.startRun({ ...unfinished("live", "running", Date.now() + 1e12), updatedAt: 2 * 86_400_000 })
      expect(yield* Workflow.prune(counter, { olderThan: "1 day" })).toEqual({ runs: 0, events: 0, abandoned: 1 })
      const dead = yield* store.getRun("dead")
      assert(Option.isSome(dead) && dead.value._tag === "Recorded")
      expect(dead.value.record.status).toBe("abandoned")
      expect((yield* Workflow.unfinishedRuns(counter)).map((run) => run.runId).sort()).toEqual(["live", "waiting"])
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("refuses options it cannot act on, removing nothing", () =>
    Effect.gen(function*() {
      yield* Workflow.run(counter, 1, { sessionId: "a" })
      for (
        const options of [{}, { keepLast: -1 }, { keepLast: 1.5 }, { olderThan: "soon" as never }, {
          olderThan: "Infinity" as never
        }]
      ) {
        const error = yield* Effect.flip(Workflow.prune(counter, options))
        assert.instanceOf(error, WorkflowError.InvalidPruneOptions, JSON.stringify(options))
      }
      expect(yield* history("a")).toEqual([1])
    }).pipe(Effect.provide(Layer.mergeAll(SessionStore.layerMemory))))
})
