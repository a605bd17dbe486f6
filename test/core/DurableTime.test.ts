/**
 * Durable time and outside events, in process with the `TestClock`, on the
 * memory store and on a SQLite file: `Step.sleep` (woken by the supervisor
 * of another "process", not before its time), `Step.waitFor` with
 * `Workflow.signal` (a bad value, a signal kept before the wait, a timeout),
 * the timeout of `Step.pause`, and `Workflow.recover` waking what is due.
 */
import { describe, expect, it } from "@effect/vitest"
import { DurableRuns, SessionState, SessionStore, Step, Workflow, type WorkflowError } from "@sessionflow/core"
import { Effect, Option, Ref, Schema, TestClock } from "effect"
import { flush, memoryProcesses, recorded, sqliteProcesses } from "./storeProcesses.js"
import { on } from "./utils.js"

class Log extends SessionState.Tag("durableTime/Log")<Log>()({ entries: Schema.Array(Schema.String) }) {}

type Store = SessionStore.Service

const note = (entry: string) => Log.update((s) => ({ entries: [...s.entries, entry] }))

/** Sleeps an hour between two steps that count how often they ran. */
const napping = (counts: Ref.Ref<ReadonlyArray<string>>) =>
  Workflow.make({ name: "napping", state: Log, sessionState: { entries: [] }, input: Schema.String }).pipe(
    Workflow.andThen(
      "before",
      ({ input }) => Effect.zipRight(Ref.update(counts, (c) => [...c, "before"]), Effect.succeed(input))
    ),
    Workflow.andThen(Step.sleep("nap", "1 hour")),
    Workflow.andThen("after", ({ previousStepContent }) =>
      Effect.gen(function*() {
        yield* Ref.update(counts, (c) => [...c, "after"])
        yield* note(`woke with ${previousStepContent}`)
        return `${previousStepContent}, rested`
      }))
  )

const Payment = Schema.Struct({ amount: Schema.Number })

/** Waits for the signal "paid" (a `Payment`), with or without a timeout. */
const paying = Workflow.make({ name: "paying", state: Log, sessionState: { entries: [] } }).pipe(
  Workflow.andThen(Step.waitFor("paid", Payment)),
  Workflow.andThen("book", ({ previousStepContent: paid }) => Effect.as(note(`paid ${paid.amount}`), paid.amount))
)

const payingInTime = Workflow.make({ name: "paying-in-time", state: Log, sessionState: { entries: [] } }).pipe(
  Workflow.andThen(Step.waitFor("paid", Payment, { timeout: "2 days" })),
  Workflow.andThen("book", ({ previousStepContent: paid }) =>
    paid._tag === "Received"
      ? Effect.as(note(`paid ${paid.value.amount}`), `paid ${paid.value.amount}`)
      : Effect.as(note("not paid"), "timed out"))
)

/** Sleeps, then waits: a signal sent while it sleeps is kept for the wait. */
const sleepThenPay = Workflow.make({ name: "sleep-then-pay", state: Log, sessionState: { entries: [] } }).pipe(
  Workflow.andThen(Step.sleep("nap", "10 minutes")),
  Workflow.andThen(Step.waitFor("paid", Payment)),
  Workflow.andThen("book", ({ previousStepContent: paid }) => Effect.as(note(`paid ${paid.amount}`), paid.amount))
)

/** A question with a timeout of one day. */
const approving = Workflow.make({ name: "approving", state: Log, sessionState: { entries: [] } }).pipe(
  Workflow.andThen(Step.pause("approve", {
    payload: Schema.Struct({ question: Schema.String }),
    response: Schema.Struct({ approved: Schema.Boolean }),
    ask: () => Effect.succeed({ question: "ok?" }),
    resume: ({ approved }) => Effect.as(note(approved ? "approved" : "rejected"), approved ? "approved" : "rejected"),
    timeout: { after: "1 day", onTimeout: () => Effect.as(note("nobody answered"), "timed out" as const) }
  }))
)

const currentTime = Effect.clockWith((clock) => clock.currentTimeMillis)

const unfinished = (store: Store, runId: string) =>
  Effect.map(
    store.getRun(runId),
    (found) => Option.isSome(found) && found.value._tag === "Active" ? found.value.run : undefined
  )

const supervised = (store: Store, workflows: ReadonlyArray<Workflow.Any>) =>
  Effect.forkScoped(DurableRuns.supervise({ workflows, pollInterval: "6 hours" }).pipe(on(store)))

const paused = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.flip(effect), (error) => {
    const tagged = error as { readonly _tag?: string }
    return tagged._tag === "RunPaused"
      ? Effect.succeed(error as WorkflowError.RunPaused)
      : Effect.dieMessage(`expected RunPaused, got ${String(error)}`)
  })

for (const [name, makeProcesses] of [["memory", memoryProcesses], ["sqlite", sqliteProcesses]] as const) {
  describe(`durable time and signals (${name})`, () => {
    it.scoped("Step.sleep suspends the run; another process's supervisor wakes it at its time, not before, once", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const [a, b, c] = [yield* make(), yield* make(), yield* make()]
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = napping(counts)
        yield* TestClock.adjust("1 second")
        const start = yield* currentTime
        const sleeping = yield* paused(Workflow.run(wf, "monday", { sessionId: "s-nap", runId: "nap-1" }).pipe(on(a)))
        expect(sleeping).toMatchObject({ runId: "nap-1", kind: "sleep", wakeAt: start + 3_600_000, path: ["nap"] })
        const stored = yield* unfinished(a, "nap-1")
        expect(stored && SessionStore.runState(stored)).toBe("sleeping")
        expect(stored?.owner).toBe("")
        // the session takes no other run meanwhile
        expect((yield* Effect.flip(Workflow.run(wf, "tuesday", { sessionId: "s-nap" }).pipe(on(a))))._tag).toBe(
          "SessionPaused"
        )
        // a continue is for questions, not for sleeps
        expect((yield* Effect.flip(Workflow.continue(wf, "nap-1", null).pipe(on(a))))._tag).toBe("RunNotFound")
        yield* supervised(b, [wf])
        yield* supervised(c, [wf])
        yield* flush
        yield* TestClock.adjust("59 minutes")
        yield* flush
        expect(yield* Ref.get(counts)).toEqual(["before"])
        expect((yield* unfinished(b, "nap-1"))?.status).toBe("paused")
        const record = yield* recorded(b, "nap-1", "10 seconds")
        expect(record).toMatchObject({ status: "completed", content: "monday, rested" })
        expect(record.completedAt - start).toBeGreaterThanOrEqual(3_600_000)
        expect(record.completedAt - start).toBeLessThan(3_600_000 + 60_000)
        yield* TestClock.adjust("2 hours")
        yield* flush
        // the top-level step with the sleep ran again (the sleep over); the one before did not
        expect(yield* Ref.get(counts)).toEqual(["before", "after"])
        expect((yield* Workflow.getSessionState(wf, "s-nap").pipe(on(c))).entries).toEqual(["woke with monday"])
      }))

    it.scoped("Workflow.recover wakes a sleep that is due, and only then", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const a = yield* make()
        const counts = yield* Ref.make<ReadonlyArray<string>>([])
        const wf = napping(counts)
        yield* paused(Workflow.run(wf, "x", { sessionId: "s-rec", runId: "rec-1" }).pipe(on(a)))
        yield* TestClock.adjust("30 minutes")
        expect(yield* Workflow.recover(wf).pipe(on(a))).toEqual([])
        yield* TestClock.adjust("30 minutes")
        const woken = yield* Workflow.recover(wf).pipe(on(a))
        expect(woken.map((r) => r.runId)).toEqual(["rec-1"])
        expect(woken[0]!.outcome).toMatchObject({ _tag: "Success", value: { content: "x, rested" } })
        expect(yield* Ref.get(counts)).toEqual(["before", "after"])
      }))

    it.scoped("Step.waitFor: a bad signal is refused and changes nothing; a good one carries the run on", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const [a, b] = [yield* make(), yield* make()]
        const waiting = yield* paused(
          Workflow.run(paying, undefined, { sessionId: "s-pay", runId: "pay-1" }).pipe(on(a))
        )
        expect(waiting).toMatchObject({ kind: "signal", signal: "paid" })
        expect(waiting.timeoutAt).toBeUndefined()
        const run = yield* unfinished(a, "pay-1")
        expect(run && SessionStore.runState(run)).toBe("waiting")
        const bad = yield* Effect.flip(Workflow.signal(paying, "pay-1", "paid", { amount: "five" }).pipe(on(b)))
        expect(bad._tag).toBe("SignalDecodeError")
        const unknown = yield* Effect.flip(Workflow.signal(paying, "pay-1", "refunded", {}).pipe(on(b)))
        expect(unknown).toMatchObject({ _tag: "SignalDecodeError", signal: "refunded" })
        expect(yield* b.signals("pay-1")).toEqual([])
        expect(yield* unfinished(b, "pay-1")).toEqual(run)
        const result = yield* Workflow.signal(paying, "pay-1", "paid", { amount: 5 }).pipe(on(b))
        expect(result).toMatchObject({
          _tag: "Delivered",
          seq: 1,
          output: { content: 5, state: { entries: ["paid 5"] } }
        })
        // the run ended: it takes no more signals
        expect((yield* Effect.flip(Workflow.signal(paying, "pay-1", "paid", { amount: 6 }).pipe(on(b))))._tag).toBe(
          "RunEnded"
        )
        expect((yield* Workflow.getSessionState(paying, "s-pay").pipe(on(a))).entries).toEqual(["paid 5"])
      }))

    it.scoped("a signal sent before the run reaches its wait is kept, and the wait takes it", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const [a, b] = [yield* make(), yield* make()]
        const sleeping = yield* paused(
          Workflow.run(sleepThenPay, undefined, { sessionId: "s-early", runId: "early-1" }).pipe(on(a))
        )
        expect(sleeping.kind).toBe("sleep")
        const kept = yield* Workflow.signal(sleepThenPay, "early-1", "paid", { amount: 9 }).pipe(on(a))
        expect(kept).toEqual({ _tag: "Kept", runId: "early-1", signal: "paid", seq: 1 })
        yield* supervised(b, [sleepThenPay])
        const record = yield* recorded(a, "early-1", "1 minute")
        expect(record).toMatchObject({ status: "completed", content: 9 })
        expect((yield* Workflow.getSessionState(sleepThenPay, "s-early").pipe(on(a))).entries).toEqual(["paid 9"])
      }))

    it.scoped("Step.waitFor with a timeout: Received when the signal comes in time, TimedOut when it does not", () =>
      Effect.gen(function*() {
        const make = yield* makeProcesses
        const [a, b] = [yield* make(), yield* make()]
        const start = yield* currentTime
        const first = yield* paused(
          Workflow.run(payingInTime, undefined, { sessionId: "s-t1", runId: "t-1" }).pipe(on(a))
        )
        expect(first).toMatchObject({ kind: "signal", signal: "paid", timeoutAt: start + 2 * 86_400_000 })
        yield* paused(Workflow.run(payingInTime, undefined, { sessionId: "s-t2", runId: "t-2" }).pipe(on(a)))
        yield* supervised(b, [payingInTime])
        yield* TestClock.adjust("1 day")
        yield* flush
        const received = yield* Workflow.signal(payingInTime, "t-1", "paid", { amount: 3 }).pipe(on(a))
        expect(received).toMatchObject({ _tag: "Delivered", output: { content: "paid 3" } })
        // t-2 still waits, until its timeout
        expect((yield* unfinished(a, "t-2"))?.status).toBe("paused")
        const record = yield* recorded(a, "t-2", "1 hour")
        expect(record).toMatchObject({ status: "completed", content: "timed out" })
        expect(record.completedAt - start).toBeGreaterThanOrEqual(2 * 86_400_000)
        expect((yield* Workflow.getSessionState(payingInTime, "s-t2").pipe(on(a))).entries).toEqual(["not paid"])
      }))

    it.scoped(
      "Step.pause with a timeout: an answer in time is taken; else the run wakes and onTimeout gives the content",
      () =>
        Effect.gen(function*() {
          const make = yield* makeProcesses
          const [a, b] = [yield* make(), yield* make()]
          const start = yield* currentTime
          const asked = yield* paused(
            Workflow.run(approving, undefined, { sessionId: "s-q1", runId: "q-1" }).pipe(on(a))
          )
          expect(asked).toMatchObject({ payload: { question: "ok?" }, timeoutAt: start + 86_400_000 })
          expect(asked.kind).toBeUndefined()
          yield* paused(Workflow.run(approving, undefined, { sessionId: "s-q2", runId: "q-2" }).pipe(on(a)))
          yield* supervised(b, [approving])
          yield* TestClock.adjust("23 hours")
          yield* flush
          const answered = yield* Workflow.continue(approving, "q-1", { approved: true }).pipe(on(a))
          expect(answered.content).toBe("approved")
          expect((yield* unfinished(a, "q-2"))?.status).toBe("paused")
          const record = yield* recorded(a, "q-2", "10 minutes")
          expect(record).toMatchObject({ status: "completed", content: "timed out" })
          expect((yield* Workflow.getSessionState(approving, "s-q2").pipe(on(a))).entries).toEqual(["nobody answered"])
          // the one answered in time did not time out as well
          yield* TestClock.adjust("2 days")
          yield* flush
          expect((yield* Workflow.getSessionState(approving, "s-q1").pipe(on(a))).entries).toEqual(["approved"])
        })
    )
  })
}
