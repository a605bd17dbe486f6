/**
 * `Schedules.layer`: workflows run on cron schedules, once per tick across
 * "processes" (stores over one memory backend, or over one SQLite file, each
 * with its own owner), driven by the TestClock (which starts at the epoch).
 */
import { describe, expect, it } from "@effect/vitest"
import { Schedules, SessionState, SessionStore, Workflow, WorkflowError } from "@sessionflow/core"
import { Effect, Fiber, Layer, Ref, Schema, TestClock } from "effect"
import { flush, memoryProcesses, type Processes, sqliteProcesses } from "./storeProcesses.js"
import { on } from "./utils.js"

class Ticks extends SessionState.Tag("scheduled/Ticks")<Ticks>()({ seen: Schema.Array(Schema.String) }) {}

/** A one-step workflow that counts its runs and keeps their inputs in its state. */
const ticking = (runs: Ref.Ref<number>) =>
  Workflow.make({ name: "ticking", state: Ticks, sessionState: { seen: [] }, input: Schema.String }).pipe(
    Workflow.andThen("count", (input) =>
      Effect.gen(function*() {
        yield* Ref.update(runs, (n) => n + 1)
        yield* Ticks.update((s) => ({ seen: [...s.seen, input.input] }))
        return "counted"
      }))
  )

type Store = SessionStore.Service

const scheduling = (store: Store, options: Schedules.Options<Workflow.Any>) =>
  Effect.forkScoped(Schedules.run(options).pipe(on(store)))

/** Moves the test clock one second at a time, letting the schedulers and their runs go between. */
const seconds = (n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < n; i++) {
      yield* TestClock.adjust("1 second")
      yield* flush
    }
  })

/** Two "processes" over one store, and the counted workflow. */
const twoProcesses = (makeProcesses: Processes) =>
  Effect.gen(function*() {
    const make = yield* makeProcesses
    const [a, b] = [yield* make(), yield* make()]
    const runs = yield* Ref.make(0)
    return { a, b, runs, wf: ticking(runs) }
  })

const at = (second: number) => new Date(second * 1000).toISOString()

for (const [name, makeProcesses] of [["memory", memoryProcesses], ["sqlite", sqliteProcesses]] as const) {
  describe(`Schedules (${name})`, () => {
    it.scoped("two processes running one schedule: each tick runs exactly once, its run id naming the tick", () =>
      Effect.gen(function*() {
        const { a, b, runs, wf } = yield* twoProcesses(makeProcesses)
        const options = {
          schedules: [{ name: "every-second", workflow: wf, cron: "* * * * * *", input: "tick", sessionId: "cron" }]
        }
        yield* scheduling(a, options)
        yield* scheduling(b, options)
        yield* flush
        yield* seconds(5)
        expect(yield* Ref.get(runs)).toBe(5)
        const history = yield* Workflow.getRunHistory(wf, "cron").pipe(on(a))
        expect(history.map((run) => [run.runId, run.status])).toEqual(
          [1, 2, 3, 4, 5].map((s) => [Schedules.runIdOf("ticking", "every-second", s * 1000), "completed"])
        )
        expect(history[0]!.runId).toBe(`ticking/every-second@${at(1)}`)
        expect((yield* Workflow.getSessionState(wf, "cron").pipe(on(b))).seen).toEqual([
          "tick",
          "tick",
          "tick",
          "tick",
          "tick"
        ])
        const [stored] = yield* b.schedules({ workflowName: "ticking" })
        expect(stored).toMatchObject({ name: "every-second", cron: "* * * * * *", nextTick: 6000, lastFiredAt: 5000 })
      }))

    it.scoped("without sessionId each tick runs on a new session", () =>
      Effect.gen(function*() {
        const { a, b, runs, wf } = yield* twoProcesses(makeProcesses)
        const options = { schedules: [{ name: "fresh", workflow: wf, cron: "*/2 * * * * *", input: "fresh" }] }
        yield* scheduling(a, options)
        yield* scheduling(b, options)
        yield* flush
        yield* seconds(6)
        expect(yield* Ref.get(runs)).toBe(3)
        const listed = yield* a.list({ workflowName: "ticking" })
        expect(listed.sessions.length).toBe(3)
        for (const session of listed.sessions) {
          expect((yield* Workflow.getSessionState(wf, session.sessionId).pipe(on(b))).seen).toEqual(["fresh"])
        }
      }))

    it.scoped(
      "missed ticks: after every process was down, only the latest missed tick runs, once, then the schedule goes on",
      () =>
        Effect.gen(function*() {
          const { a, b, runs, wf } = yield* twoProcesses(makeProcesses)
          const options = {
            schedules: [{ name: "every-second", workflow: wf, cron: "* * * * * *", input: "tick", sessionId: "down" }]
          }
          const first = yield* scheduling(a, options)
          yield* flush
          yield* seconds(2)
          yield* Fiber.interrupt(first)
          // down from 2 s to 12.5 s: the ticks 3 to 12 pass with nobody there
          yield* TestClock.adjust("10500 millis")
          yield* scheduling(b, options)
          yield* flush
          expect(yield* Ref.get(runs)).toBe(3)
          yield* TestClock.adjust("500 millis")
          yield* flush
          const history = yield* Workflow.getRunHistory(wf, "down").pipe(on(b))
          expect(history.map((run) => run.runId)).toEqual(
            [1, 2, 12, 13].map((s) => Schedules.runIdOf("ticking", "every-second", s * 1000))
          )
        })
    )

    it.scoped("a changed cron replaces the stored schedule and its next tick", () =>
      Effect.gen(function*() {
        const { a, b, runs, wf } = yield* twoProcesses(makeProcesses)
        const first = yield* scheduling(a, {
          schedules: [{ name: "s", workflow: wf, cron: "0 * * * * *", input: "x" }]
        })
        yield* flush
        expect((yield* a.schedules({}))[0]!.nextTick).toBe(60_000)
        yield* Fiber.interrupt(first)
        yield* scheduling(b, { schedules: [{ name: "s", workflow: wf, cron: "*/10 * * * * *", input: "x" }] })
        yield* flush
        expect((yield* a.schedules({}))[0]).toMatchObject({ cron: "*/10 * * * * *", nextTick: 10_000 })
        yield* seconds(10)
        expect(yield* Ref.get(runs)).toBe(1)
      }))
  })
}

describe("Schedules: bad schedules", () => {
  it.effect("a cron that does not parse, a bad name, or a name used twice fails the layer with InvalidSchedule", () =>
    Effect.gen(function*() {
      const wf = ticking(yield* Ref.make(0))
      const build = (schedules: Schedules.Options<typeof wf>["schedules"]) =>
        Effect.flip(
          Effect.scoped(Layer.build(Schedules.layer({ schedules }).pipe(Layer.provide(SessionStore.layerMemory))))
        )
      const badCron = yield* build([{ name: "s", workflow: wf, cron: "every day", input: "x" }])
      expect(badCron).toBeInstanceOf(WorkflowError.InvalidSchedule)
      expect(badCron.message).toContain("Schedule 's' of workflow 'ticking': ")
      expect(badCron.message).toContain("'every day'")
      const badName = yield* build([{ name: "", workflow: wf, cron: "* * * * *", input: "x" }])
      expect(badName.description).toBe("A schedule name must not be empty")
      const twice = yield* build([
        { name: "s", workflow: wf, cron: "* * * * *", input: "x" },
        { name: "s", workflow: wf, cron: "0 * * * *", input: "y" }
      ])
      expect(twice.description).toBe("two schedules of the workflow have this name")
    }))
})
