import { assert, describe, it } from "@effect/vitest"
import { SessionStore, Step, Workflow, WorkflowEvent } from "@sessionflow/core"
import { Chunk, Deferred, Effect, Fiber, Queue, Schema, Stream, TestClock } from "effect"
import { collecting, Items, memory, nextOf, on, onStream, processes } from "./utils.js"

const stored = { events: "stored" } as const

const steps = (n: number) =>
  Workflow.make({ name: "logged", state: Items, sessionState: { items: [] } }).pipe(
    Workflow.andThen("first", () =>
      Effect.gen(function*() {
        for (let i = 0; i < n; i++) yield* WorkflowEvent.log(`line ${i}`)
        return "one"
      })),
    Workflow.andThen("second", () => Items.update((s) => ({ items: [...s.items, "x"] })))
  )

const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) =>
  Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

const seqs = (events: ReadonlyArray<WorkflowEvent.WorkflowEvent>) => events.map((event) => event.seq)

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** Two steps that log; the second waits for `hold` (its process may die meanwhile). */
const dying = (name: string, hold: Deferred.Deferred<void>) =>
  Workflow.make({ name }).pipe(
    Workflow.andThen("first", () => Effect.as(WorkflowEvent.log("one"), 1)),
    Workflow.andThen("second", () =>
      Effect.gen(function*() {
        yield* WorkflowEvent.log("two")
        yield* Deferred.await(hold)
        return 2
      }))
  )

describe("Workflow.events", () => {
  it.effect("replays a stored run's events exactly as its stream gave them, then ends", () =>
    Effect.gen(function*() {
      const wf = steps(3)
      const live = yield* collect(Workflow.stream(wf, "go", { ...stored, runId: "r1", sessionId: "s1" }))
      assert.strictEqual(live.at(-1)?._tag, "RunCompleted")
      assert.deepStrictEqual(seqs(live), range(0, live.length - 1))
      const replayed = yield* collect(Workflow.events(wf, "r1"))
      assert.deepStrictEqual(replayed, live)
      // after a seq: the rest only
      assert.deepStrictEqual(yield* collect(Workflow.events(wf, "r1", { after: 4 })), live.slice(5))
      // after the last: nothing, and the stream still ends
      assert.deepStrictEqual(yield* collect(Workflow.events(wf, "r1", { after: live.length - 1 })), [])
    }).pipe(memory))

  it.effect("a plain Workflow.run stores its events too; without events: \"stored\" there are none to read", () =>
    Effect.gen(function*() {
      const wf = steps(1)
      const out = yield* Workflow.run(wf, "go", stored)
      const replayed = yield* collect(Workflow.events(wf, out.runId))
      assert.deepStrictEqual(replayed.map((e) => e._tag), [
        "RunStarted",
        "StepStarted",
        "Log",
        "StepCompleted",
        "StepStarted",
        "StateChanged",
        "StepCompleted",
        "RunCompleted"
      ])
      const unlogged = yield* Workflow.run(wf, "go")
      const none = yield* Effect.flip(collect(Workflow.events(wf, unlogged.runId)))
      assert.strictEqual(none._tag, "RunNotFound")
      const unknown = yield* Effect.flip(collect(Workflow.events(wf, "nope")))
      assert.strictEqual(unknown._tag, "RunNotFound")
    }).pipe(memory))

  it.effect("a run of another workflow is not found; another user's run is refused", () =>
    Effect.gen(function*() {
      const wf = steps(0)
      const other = Workflow.make({ name: "other", steps: [Step.make("x", () => Effect.succeed(1))] })
      yield* Workflow.run(wf, "go", { ...stored, runId: "owned", userId: "alice" })
      const wrongWorkflow = yield* Effect.flip(collect(Workflow.events(other, "owned", { userId: "alice" })))
      assert.strictEqual(wrongWorkflow._tag, "RunNotFound")
      const asBob = yield* Effect.flip(collect(Workflow.events(wf, "owned", { userId: "bob" })))
      assert.strictEqual(asBob._tag, "SessionOwnershipError")
      assert.strictEqual(
        (yield* collect(Workflow.events(wf, "owned", { userId: "alice" }))).at(-1)?._tag,
        "RunCompleted"
      )
    }).pipe(memory))

  it.effect(
    "follows a run in another process: the stored events, then each batch as it is written, until the run ends",
    () =>
      Effect.gen(function*() {
        const { make } = yield* processes
        const [a, b] = [make(), make()]
        const gate = yield* Deferred.make<void>()
        const wf = Workflow.make({ name: "gated" }).pipe(
          Workflow.andThen("wait", () =>
            Effect.gen(function*() {
              yield* WorkflowEvent.log("before")
              yield* Deferred.await(gate)
              yield* WorkflowEvent.log("after")
              return "done"
            }))
        )
        const running = yield* Effect.fork(Workflow.run(wf, "go", { ...stored, runId: "gated-run" }).pipe(on(a)))
        // the run is registered before its first event
        const follower = yield* Effect.gen(function*() {
          while (true) {
            const started = yield* Effect.exit(collecting(Workflow.events(wf, "gated-run").pipe(onStream(b))))
            if (started._tag === "Success") return started.value
            yield* Effect.yieldNow()
          }
        })
        // the first batch waits for the flush interval (100 millis): then the follower has it
        const first = [yield* nextOf(follower), yield* nextOf(follower), yield* nextOf(follower)]
        assert.deepStrictEqual(first.map((e) => e._tag), ["RunStarted", "StepStarted", "Log"])
        assert.deepStrictEqual(seqs(first), [0, 1, 2])
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(running)
        const rest: Array<WorkflowEvent.WorkflowEvent> = []
        while (rest.at(-1)?._tag !== "RunCompleted") rest.push(yield* nextOf(follower))
        assert.deepStrictEqual(seqs(rest), range(3, 2 + rest.length))
        yield* Fiber.join(follower.fiber)
        assert.strictEqual(yield* Queue.size(follower.queue), 0)
      }).pipe(Effect.scoped)
  )

  it.effect("a paused run's log ends at RunPaused; continued, it goes on after it, numbered on", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({ name: "asking", input: Schema.String }).pipe(
        Workflow.andThen("log", ({ input }) => Effect.as(WorkflowEvent.log(`asked for ${input}`), input)),
        Workflow.andThen(Step.pause("approve", {
          payload: Schema.String,
          response: Schema.Boolean,
          ask: ({ input }) => Effect.succeed(input),
          resume: (approved: boolean) => Effect.succeed(approved ? "yes" : "no")
        }))
      )
      yield* Effect.flip(Workflow.run(wf, "laptop", { ...stored, runId: "asked" }))
      const untilPause = yield* collect(Workflow.events(wf, "asked"))
      const paused = untilPause.at(-1)!
      assert.strictEqual(paused._tag, "RunPaused")
      assert.deepStrictEqual(seqs(untilPause), range(0, untilPause.length - 1))
      yield* Workflow.continue(wf, "asked", true, stored)
      const afterPause = yield* collect(Workflow.events(wf, "asked", { after: paused.seq }))
      assert.strictEqual(afterPause[0]!._tag, "RunResumed")
      assert.strictEqual(afterPause.at(-1)!._tag, "RunCompleted")
      assert.deepStrictEqual(seqs(afterPause), range(paused.seq + 1, paused.seq + afterPause.length))
    }).pipe(memory))

  it.effect(
    "only the run's owner writes its log: a refused call, a replay and a refused answer write nothing of theirs",
    () =>
      Effect.gen(function*() {
        const wf = Workflow.make({ name: "asking", input: Schema.String }).pipe(
          Workflow.andThen(Step.pause("approve", {
            payload: Schema.String,
            response: Schema.Boolean,
            ask: ({ input }) => Effect.succeed(input),
            resume: (approved: boolean) => Effect.succeed(approved ? "yes" : "no")
          }))
        )
        const stored_ = () => Effect.flatMap(SessionStore.SessionStore, (store) => store.readEvents("owned"))
        yield* Effect.flip(Workflow.run(wf, "laptop", { ...stored, runId: "owned", sessionId: "s-owned" }))
        const paused = yield* stored_()
        // a run by the paused run's id answers that it is paused: nothing of that call in the log
        const again = yield* Effect.flip(
          Workflow.run(wf, "laptop", { ...stored, runId: "owned", sessionId: "s-owned" })
        )
        assert.strictEqual(again._tag, "RunPaused")
        assert.deepStrictEqual(yield* stored_(), paused)
        // an answer the step cannot decode is refused, the run waits on: its log says the step refused
        // it and the run paused again, never that it failed
        const refused = yield* Effect.flip(Workflow.continue(wf, "owned", "not a boolean", stored))
        assert.strictEqual(refused._tag, "ResponseDecodeError")
        const afterRefusal = yield* stored_()
        assert.deepStrictEqual(afterRefusal.slice(0, paused.length), paused)
        assert.deepStrictEqual(afterRefusal.slice(paused.length).map((e) => e._tag), [
          "RunResumed",
          "StepStarted",
          "StepFailed",
          "RunPaused"
        ])
        // continued, its log goes on from the pause to one end
        yield* Workflow.continue(wf, "owned", true, stored)
        const all = yield* stored_()
        assert.deepStrictEqual(all.slice(0, afterRefusal.length), afterRefusal)
        assert.deepStrictEqual(seqs(all), range(0, all.length - 1))
        assert.deepStrictEqual(all.filter(SessionStore.isFinalEvent).map((e) => e._tag), ["RunCompleted"])
        // run again by its id once completed: replayed, and nothing written
        yield* Workflow.run(wf, "laptop", { ...stored, runId: "owned", sessionId: "s-owned" })
        assert.deepStrictEqual(yield* stored_(), all)
      }).pipe(memory)
  )

  it.effect("a paused run cancelled by another caller: its log ends with RunCancelled", () =>
    Effect.gen(function*() {
      const wf = Workflow.make({ name: "asking", input: Schema.String }).pipe(
        Workflow.andThen(Step.pause("approve", {
          payload: Schema.String,
          response: Schema.Boolean,
          ask: ({ input }) => Effect.succeed(input),
          resume: (approved: boolean) => Effect.succeed(approved ? "yes" : "no")
        }))
      )
      yield* Effect.flip(Workflow.run(wf, "laptop", { ...stored, runId: "to-cancel" }))
      yield* Workflow.cancel(wf, "to-cancel")
      const all = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.readEvents("to-cancel"))
      assert.deepStrictEqual(all.slice(-2).map((e) => e._tag), ["RunPaused", "RunCancelled"])
      assert.deepStrictEqual(seqs(all), range(0, all.length - 1))
    }).pipe(memory))

  it.effect("a run whose process died, run again by its id, goes on in the same log: one sequence, no seq twice", () =>
    Effect.gen(function*() {
      const { crash, make } = yield* processes
      const [a, b] = [make(), make()]
      const hold = yield* Deferred.make<void>()
      const wf = dying("dying", hold)
      // process A runs it with a step journal; its first events are written; then it dies
      yield* Effect.forkDaemon(Workflow.run(wf, "go", { ...stored, runId: "dies", durability: "step" }).pipe(on(a)))
      const written = yield* Effect.gen(function*() {
        for (;;) {
          yield* TestClock.adjust("100 millis")
          const found = yield* b.readEvents("dies")
          if (found.some((event) => event._tag === "Log" && event.message === "two")) return found
        }
      })
      yield* crash(a)
      yield* TestClock.adjust("31 seconds")
      yield* Deferred.succeed(hold, undefined)
      // run again by its id in process B: it resumes from its journal, its events after A's
      const live = yield* collect(Workflow.stream(wf, "go", { ...stored, runId: "dies" }).pipe(onStream(b)))
      const all = yield* collect(Workflow.events(wf, "dies").pipe(onStream(b)))
      // the log is A's events, then exactly what B's stream gave: it opens with RunResumed (no second
      // RunStarted) and ends with one RunCompleted
      assert.deepStrictEqual(all, [...written, ...live])
      assert.deepStrictEqual(seqs(all), range(0, all.length - 1))
      assert.strictEqual(live[0]?._tag, "RunResumed")
      assert.deepStrictEqual(all.filter((e) => e._tag === "RunStarted").length, 1)
      assert.deepStrictEqual(live.filter((e) => e._tag === "RunCompleted").length, 1)
      assert.strictEqual(live.at(-1)?._tag, "RunCompleted")
    }).pipe(Effect.scoped))

  it.effect("without stored events, a run by id that resumes its run streams one opening, one end, seq rising", () =>
    Effect.gen(function*() {
      const { crash, make } = yield* processes
      const [a, b] = [make(), make()]
      const hold = yield* Deferred.make<void>()
      const wf = dying("dying-unlogged", hold)
      yield* Effect.forkDaemon(Workflow.run(wf, "go", { runId: "dies-unlogged", durability: "step" }).pipe(on(a)))
      // A has journaled step 1 and waits in step 2; then it dies
      yield* Effect.repeat(b.getRun("dies-unlogged"), {
        until: (found) =>
          found._tag === "Some" && found.value._tag === "Active" && (found.value.run.journal?.next ?? 0) >= 1
      })
      yield* crash(a)
      yield* TestClock.adjust("31 seconds")
      yield* Deferred.succeed(hold, undefined)
      const live = yield* collect(Workflow.stream(wf, "go", { runId: "dies-unlogged" }).pipe(onStream(b)))
      const tags = live.map((e) => e._tag)
      assert.strictEqual(tags[0], "RunResumed")
      assert.strictEqual(tags.filter((t) => t === "RunStarted" || t === "RunResumed").length, 1)
      assert.strictEqual(tags.filter((t) => t === "RunCompleted").length, 1)
      assert.strictEqual(tags.at(-1), "RunCompleted")
      assert.deepStrictEqual(seqs(live), range(0, live.length - 1))
    }).pipe(Effect.scoped))

  it.effect("events past the retention are gone: a reader asking for them is told so", () =>
    Effect.gen(function*() {
      const wf = steps(20)
      yield* Workflow.run(wf, "go", { ...stored, runId: "long", eventRetention: { maxEvents: 5 } })
      const missed = yield* Effect.flip(collect(Workflow.events(wf, "long", { after: 2 })))
      assert.strictEqual(missed._tag, "RunNotFound")
      const kept = yield* collect(Workflow.events(wf, "long", { after: 25 }))
      assert.deepStrictEqual(kept.at(-1)?._tag, "RunCompleted")
      // an hour after it ended, another run's end removes its log
      yield* TestClock.adjust("61 minutes")
      yield* Workflow.run(wf, "go", { ...stored, runId: "later" })
      const store = yield* SessionStore.SessionStore
      assert.deepStrictEqual(yield* store.readEvents("long"), [])
      assert.isAbove((yield* store.readEvents("later")).length, 0)
    }).pipe(memory))
})
